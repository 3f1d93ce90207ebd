// Package durable holds what a results file needs to last: an exclusive
// lock taken without waiting, so that two processes never write one file
// at once, a synced directory entry, so that a new file's name survives
// a crash, and a whole file written at once (WriteFile).
//
//	if err := durable.TryLock(f); errors.Is(err, durable.ErrHeld) {
//		// another process is writing f
//	}
//	err = durable.SyncDir(path) // after creating path
package durable

import (
	"errors"
	"io"
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

// WriteFile writes a whole file at path through write, atomically: to a
// new temporary file beside it (a name of its own, never a file of the
// user's), synced, given mode, then renamed over path. A reader sees the
// old file or the new one, never half of one; on an error path is left
// as it was. A symbolic link at path is replaced, not followed.
func WriteFile(path string, mode os.FileMode, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = SyncDir(path)
	}
	return err
}
