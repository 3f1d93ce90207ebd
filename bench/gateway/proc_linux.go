package main

import "syscall"

// childAttr makes the kernel kill a child when the harness dies, even by
// SIGKILL, so that no server outlives a benchmark.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// raiseOpenFiles raises the soft RLIMIT_NOFILE to the hard limit and
// returns the new soft limit. Go raises its own soft limit at start-up but
// restores the original in the processes it starts, unless the program set
// the limit itself, as here: the children inherit it.
func raiseOpenFiles() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}
