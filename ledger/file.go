package ledger

import (
	"fmt"
	"os"
	"sync"
)

// File is a Sink appending JSON lines to a file. Several processes (an `ask`
// and a `batch`) may append to one file at once: each line goes out in one
// write while the process holds an exclusive flock on the file, so lines
// never tear or interleave, whatever their length. Safe for concurrent use.
//
// Write returns once the line is in the file (the kernel's page cache; there
// is no fsync per line: a crashed process loses nothing, a crashed machine
// may lose the last lines).
type File struct {
	path string

	mu     sync.Mutex // guards everything below and serialises Write
	f      *os.File
	flock  *fileLock // on f's descriptor
	line   []byte    // one line, reused
	closed bool
}

// OpenFile opens path for appending, creating it with mode 0o600 when it is
// missing. Parent directories must exist.
func OpenFile(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ledger: %s: %w", path, err)
	}
	return &File{path: path, f: f, flock: newFileLock(rc)}, nil
}

// Path returns the file's path.
func (l *File) Path() string { return l.path }

// Write appends r as one line.
func (l *File) Write(r Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("ledger: %s: %w", l.path, os.ErrClosed)
	}
	line, err := appendLine(l.line[:0], &r)
	if err != nil {
		return fmt.Errorf("ledger: encode record: %w", err)
	}
	if cap(line) <= 64<<10 { // a line of a freak size is not kept
		l.line = line
	}
	if err := l.flock.lock(); err != nil {
		return fmt.Errorf("ledger: lock %s: %w", l.path, err)
	}
	// One write: with O_APPEND the kernel puts it at the end of the file;
	// the lock keeps other processes out should it come back short and
	// os.File continue it.
	_, werr := l.f.Write(line)
	uerr := l.flock.release()
	if werr != nil {
		return fmt.Errorf("ledger: %w", werr)
	}
	if uerr != nil {
		return fmt.Errorf("ledger: unlock %s: %w", l.path, uerr)
	}
	return nil
}

// Close closes the file. Closing twice is not an error.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}
