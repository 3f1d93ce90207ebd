// Package durable holds what a results file needs to last: an exclusive
// lock taken without waiting, so that two processes never write one file
// at once, and a synced directory entry, so that a new file's name
// survives a crash.
//
//	if err := durable.TryLock(f); errors.Is(err, durable.ErrHeld) {
//		// another process is writing f
//	}
//	err = durable.SyncDir(path) // after creating path
package durable

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrHeld means another open file description (another process, or
// another open of the file) holds the lock.
var ErrHeld = errors.New("the file is locked by another process")

// SyncDir makes the directory entry of path durable: a file just created
// keeps its name through a crash. A system that cannot sync a directory
// is not an error.
func SyncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
