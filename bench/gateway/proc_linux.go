package main

import "syscall"

// childAttr makes the kernel kill a child when the harness dies, even by
// SIGKILL, so that no server outlives a benchmark.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
