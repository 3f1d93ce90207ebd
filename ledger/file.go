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
	j      *journal // this process's attempts in flight (Begin); nil before the first

	recovered int // attempts of dead processes written at OpenFile
}

// OpenFile opens path for appending, creating it with mode 0o600 when it is
// missing. Parent directories must exist. It first writes, as
// StatusInterrupted, every attempt that a dead process began (Begin) and
// never wrote (see Journal, Recovered).
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
	l := &File{path: path, f: f, flock: newFileLock(rc)}
	if canJournal {
		// A journal that cannot be read is left for the next open: the
		// ledger itself still takes lines.
		l.recovered, _ = l.recover()
	}
	return l, nil
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
	if l.j != nil {
		// Its line is in: the attempt is no longer in flight. A journal
		// that cannot take the end only risks a duplicate at recovery,
		// which the recovery's look at the ledger's end leaves out.
		_ = l.j.end(&r)
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
	if l.j != nil {
		l.j.close() //nolint:errcheck // the ledger's own close decides
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}
