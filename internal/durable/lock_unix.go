//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package durable

import (
	"os"
	"syscall"
)

// TryLock takes an exclusive flock on f without waiting: ErrHeld when
// another open file description holds one. The lock ends when f is
// closed, or its process dies.
func TryLock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if cerr := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); cerr != nil {
		return cerr
	}
	if ferr == syscall.EWOULDBLOCK {
		return ErrHeld
	}
	return ferr
}
