// Goroutines on several threads calling one leaf function: the fast tracepoints of a Go
// program (test_ftrace_go.py). Each of 4 goroutines calls work(i, id) for i in 0..rounds-1,
// one at a time under a mutex, sleeping between calls so that they move between threads.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

var total int64

//go:noinline
func work(n int64, k int64) int64 {
	s := n*3 + k
	total += s
	return s
}

//go:noinline
func finished() {}

func main() {
	runtime.GOMAXPROCS(4)
	rounds := 50
	if len(os.Args) > 1 {
		rounds, _ = strconv.Atoi(os.Args[1])
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(id int64) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				mu.Lock()
				work(int64(i), id)
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}(int64(g))
	}
	wg.Wait()
	finished()
	fmt.Println("total", total)
}
