package evalresults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/detourhq/detour/internal/durable"
)

// ErrLocked means another process is writing the results file.
var ErrLocked = errors.New("another detour eval is writing this results file")

// File is a results file opened for a run: what earlier runs wrote
// (Records), and where this run appends, one line per call, each synced
// to disk before the call counts as done. A torn last line (a crash
// mid-write) is cut on opening; lines that are no record are kept and
// counted. Append is safe for concurrent use.
type File struct {
	// Path is the file's name as given.
	Path string
	// Records are the records the file held when opened, then those
	// appended, in order.
	Records []Record
	// Torn is 1 when a torn last line was cut on opening.
	Torn int
	// Unreadable counts lines that are no record (kept as they are).
	Unreadable int

	f    *os.File
	mu   sync.Mutex // guards f's writes, Records and done
	done map[string]bool
}

// Open opens (or creates) the results file at path, locked
// against other runs, and reads it.
func Open(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if err := durable.TryLock(f); errors.Is(err, durable.ErrHeld) {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrLocked)
	} else if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := &File{Path: path, f: f, done: map[string]bool{}}
	good, err := r.read(f)
	if err == nil {
		err = r.cut(good)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// Read reads the records of a results file without opening it
// for writing (for summaries and the eval gate); a torn last line is
// left out.
func Read(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &File{Path: path, done: map[string]bool{}}
	if _, err := r.read(f); err != nil {
		return nil, err
	}
	return r.Records, nil
}

// read reads every line of f and returns the length of its whole lines.
func (r *File) read(f io.Reader) (good int64, err error) {
	br := bufio.NewReaderSize(f, 64<<10)
	var off int64
	for {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return 0, fmt.Errorf("reading %s: %w", r.Path, rerr)
		}
		if len(line) == 0 {
			return good, nil
		}
		off += int64(len(line))
		if line[len(line)-1] != '\n' {
			r.Torn = 1
			return good, nil
		}
		good = off
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec Record
		if json.Unmarshal(line, &rec) != nil || rec.Target == "" || rec.Task == "" || rec.Outcome == "" {
			r.Unreadable++
			continue
		}
		r.Records = append(r.Records, rec)
		r.done[rec.key()] = true
	}
}

// cut drops a torn tail after good bytes, durably.
func (r *File) cut(good int64) error {
	st, err := r.f.Stat()
	if err != nil {
		return err
	}
	switch {
	case good < st.Size():
		if err := r.f.Truncate(good); err != nil {
			return err
		}
		return r.f.Sync()
	case st.Size() == 0:
		return durable.SyncDir(r.Path)
	}
	return nil
}

// Has reports whether the file holds the call (digest, target, task, rep).
func (r *File) Has(digest, target, task string, rep int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done[callKey(digest, target, task, rep)]
}

// Append writes rec as one line and syncs it.
func (r *File) Append(rec Record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(line); err != nil {
		return fmt.Errorf("writing %s: %w", r.Path, err)
	}
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", r.Path, err)
	}
	r.Records = append(r.Records, rec)
	r.done[rec.key()] = true
	return nil
}

// Snapshot returns a copy of the records held now.
func (r *File) Snapshot() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.Records...)
}

// Close closes the file.
func (r *File) Close() error { return r.f.Close() }
