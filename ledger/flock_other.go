//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package ledger

import "syscall"

// lockFile does nothing on this system: lines from one process stay whole
// (File's mutex), but processes appending to one file at once may interleave
// long lines.
func lockFile(syscall.RawConn) error { return nil }

// unlockFile does nothing on this system.
func unlockFile(syscall.RawConn) error { return nil }
