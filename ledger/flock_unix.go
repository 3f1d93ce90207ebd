//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package ledger

import (
	"errors"
	"os"
	"syscall"
)

// canJournal: this system has flock, so a journal's lock tells a live
// process from a dead one (File.Begin).
const canJournal = true

// tryLock takes an exclusive flock on f without waiting, and reports
// whether it got it (false: another open file description holds it).
func tryLock(f *os.File) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return false, err
	}
	if errors.Is(ferr, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return ferr == nil, ferr
}

// fileLock takes and releases an exclusive flock on a descriptor through
// its syscall.RawConn. The lock belongs to the open file description, so
// it also excludes other File values of this process opened on the same
// path. Its Control functions are made once, at newFileLock: a lock and
// an unlock for every ledger line allocate nothing.
type fileLock struct {
	rc      syscall.RawConn
	how     int
	err     error
	control func(fd uintptr)
}

// newFileLock returns the lock of rc's descriptor.
func newFileLock(rc syscall.RawConn) *fileLock {
	k := &fileLock{rc: rc}
	k.control = k.flock
	return k
}

// lock takes the lock, waiting for it.
func (k *fileLock) lock() error { return k.do(syscall.LOCK_EX) }

// release releases the lock.
func (k *fileLock) release() error { return k.do(syscall.LOCK_UN) }

// do runs flock(how) on the descriptor. Not safe for concurrent use: the
// File's mutex is held.
func (k *fileLock) do(how int) error {
	k.how, k.err = how, nil
	if err := k.rc.Control(k.control); err != nil {
		return err
	}
	return k.err
}

// flock is k's Control function.
func (k *fileLock) flock(fd uintptr) {
	for {
		k.err = syscall.Flock(int(fd), k.how)
		if k.err != syscall.EINTR {
			return
		}
	}
}
