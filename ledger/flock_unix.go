//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package ledger

import "syscall"

// lockFile takes an exclusive flock on rc's descriptor, waiting for it. The
// lock belongs to the open file description, so it also excludes other File
// values of this process opened on the same path.
func lockFile(rc syscall.RawConn) error { return flock(rc, syscall.LOCK_EX) }

// unlockFile releases lockFile's lock.
func unlockFile(rc syscall.RawConn) error { return flock(rc, syscall.LOCK_UN) }

func flock(rc syscall.RawConn, how int) error {
	var err error
	cerr := rc.Control(func(fd uintptr) {
		for {
			err = syscall.Flock(int(fd), how)
			if err != syscall.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return err
}
