//go:build !linux

package main

import "syscall"

// childAttr is nil off Linux: children are stopped on exit and on an
// interrupt, but not if the harness is killed. (CPU and memory figures come
// from /proc and read n/a off Linux.)
func childAttr() *syscall.SysProcAttr { return nil }

// raiseOpenFiles assumes a limit of 1024 open files off Linux, where the
// benchmark's figures are n/a anyway.
func raiseOpenFiles() (uint64, error) { return 1024, nil }
