//go:build !linux

package main

import "syscall"

// childAttr is nil off Linux: children are stopped on exit and on an
// interrupt, but not if the harness is killed. (CPU and memory figures come
// from /proc and read n/a off Linux.)
func childAttr() *syscall.SysProcAttr { return nil }
