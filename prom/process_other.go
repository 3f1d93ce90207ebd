//go:build !linux

package prom

// procSupported reports whether this system has the /proc the process_
// families are read from.
const procSupported = false

// readProc reads nothing: there is no /proc here.
func readProc() (procStats, bool) { return procStats{}, false }
