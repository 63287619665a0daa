// With programs/ftrace_goroutines.go: the same program linked with cgo (test_ftrace_go.py).
package main

import "C"
