// Goroutines preempted anywhere (test_ftrace_go.py): 16 goroutines spin in one loop with no
// calls on one P until main says stop, so the runtime preempts them by signal at any
// instruction and parks 15 of them there at any time. checkpoint() is where the test stops.
package main

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

var sink [16]int64
var stop int32

//go:noinline
func spin(id int) int64 {
	var s int64
	for i := 0; atomic.LoadInt32(&stop) == 0; i++ {
		s += int64(i*id) ^ (s >> 3)
		s = s*7 + int64(i&15)
	}
	sink[id] = s
	return s
}

//go:noinline
func checkpoint() {}

func main() {
	runtime.GOMAXPROCS(1)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			spin(id)
		}(g)
	}
	time.Sleep(300 * time.Millisecond)
	checkpoint()
	time.Sleep(300 * time.Millisecond)
	atomic.StoreInt32(&stop, 1)
	wg.Wait()
	fmt.Println("done", len(sink))
}
