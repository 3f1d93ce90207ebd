package batch

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/detourhq/detour/internal/durable"
)

// maxLine is the longest input line read; a longer one is an input error.
const maxLine = 64 << 20

// Input is a batch file opened for a run: a first pass over it has found
// its format, counted its items and hashed its bytes. Not safe for
// concurrent use.
type Input struct {
	// Path is the file's name as given.
	Path string
	// Format is the format of its first valid line (Native when it has
	// none).
	Format Format
	// Items counts its non-blank lines, valid or not.
	Items int
	// Digest is the SHA-256 of its bytes, in hex: the file's identity, from
	// which a run's idempotency keys are made.
	Digest string

	f *os.File
}

// OpenInput opens the batch file at path and reads it once through. A
// file in which two lines name one id is refused (*DuplicateIDError).
func OpenInput(path string) (*Input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	in := &Input{Path: path, f: f}
	h := sha256.New()
	var ids idSet
	err = scanLines(io.TeeReader(f, h), func(n int, line []byte, tooLong bool) bool {
		in.Items++
		if tooLong {
			return true
		}
		id, ok := "", false
		if in.Format != "" {
			id, ok = quickID(line)
		}
		if !ok {
			var format Format
			if id, format = lineIDOf(line, n, in.Format); in.Format == "" {
				in.Format = format
			}
		}
		ids.add(id, n)
		return true
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if in.Format == "" {
		in.Format = Native
	}
	if err := ids.err(path, in.Format); err != nil {
		f.Close()
		return nil, err
	}
	in.Digest = hex.EncodeToString(h.Sum(nil))
	return in, nil
}

// Close closes the file.
func (in *Input) Close() error { return in.f.Close() }

// each reads the file again from its start and calls fn with each
// non-blank line (line is fn's only until it returns), until fn returns
// false.
func (in *Input) each(fn func(n int, line []byte, tooLong bool) bool) error {
	if _, err := in.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return scanLines(in.f, fn)
}

// scanLines calls fn with every non-blank line of r, numbered from 1 (blank
// lines count), without its line ending. A line over maxLine comes empty,
// with tooLong set. fn returning false stops the scan.
func scanLines(r io.Reader, fn func(n int, line []byte, tooLong bool) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var acc []byte
	long := false
	for n := 1; ; n++ {
		for {
			chunk, err := br.ReadSlice('\n')
			if !long {
				if len(acc)+len(chunk) > maxLine {
					long, acc = true, acc[:0]
				} else {
					acc = append(acc, chunk...)
				}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && err != io.EOF {
				return err
			}
			eof := err == io.EOF
			if eof && len(acc) == 0 && !long {
				return nil
			}
			line := bytes.TrimRight(acc, "\r\n")
			if long || len(bytes.TrimSpace(line)) > 0 {
				if !fn(n, line, long) {
					return nil
				}
			}
			acc, long = acc[:0], false
			if eof {
				return nil
			}
			break
		}
	}
}

// ErrLocked means another process holds the results file: two runs must
// not write one file.
var ErrLocked = errors.New("another detour batch is writing this file")

// Output is a run's results file, opened for appending under an exclusive
// lock (flock; none on systems without it). Opening it reads what an
// earlier run wrote: the outcomes to skip, a torn last line to cut, and
// pending lines to drop so that their items run again. Write is safe for
// concurrent use.
type Output struct {
	// Path is the file's name as given.
	Path string
	// Format is the format of its lines.
	Format Format
	// Torn is 1 when the file ended in a torn line (a crash mid-write), cut
	// away on opening; else 0.
	Torn int
	// Dropped counts the pending lines of an earlier run, dropped on
	// opening: their items run again.
	Dropped int
	// Unreadable counts lines before the end that are no results line:
	// kept, and their items run again.
	Unreadable int

	f    *os.File
	done map[string]bool // keys (doneKey) of the outcomes the file holds; read-only once open

	mu      sync.Mutex // guards writes to f and written
	written int64      // lines written
	err     error      // the first failed write or sync, after which every Write fails

	smu    sync.Mutex // serialises syncs; guards synced
	synced int64      // lines known to be on disk
}

// OpenOutput opens (or creates) the results file at path for lines of
// format f. A file that holds lines of the other format is refused.
func OpenOutput(path string, f Format) (*Output, error) {
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockFile(file); err != nil {
		file.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	o := &Output{Path: path, Format: f, f: file, done: map[string]bool{}}
	keep, good, pending, err := o.read()
	if err != nil {
		file.Close()
		return nil, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	switch {
	case pending > 0:
		o.Dropped = pending
		err = o.rewrite(keep)
	case good < st.Size():
		if err = file.Truncate(good); err == nil {
			err = file.Sync()
		}
	case st.Size() == 0:
		err = durable.SyncDir(path) // a new file: its name must last too
	}
	if err != nil {
		o.f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// read reads the file's lines: it fills done and the counts, and returns
// the offsets of the lines to keep ([start, end) pairs: all but pending
// ones), the length of the file without its torn tail, and how many lines
// are pending.
func (o *Output) read() (keep [][2]int64, good int64, pending int, err error) {
	var off int64
	var unreadable [][2]int64 // lines that did not read, since the last good one
	br := bufio.NewReaderSize(o.f, 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return nil, 0, 0, fmt.Errorf("reading %s: %w", o.Path, rerr)
		}
		if len(line) == 0 {
			break
		}
		start := off
		off += int64(len(line))
		if line[len(line)-1] != '\n' {
			break // torn: no line end
		}
		key, st, format, ok := readDone(line)
		switch {
		case !ok && len(bytes.TrimSpace(line)) == 0:
			// a blank line: harmless, kept
		case !ok:
			unreadable = append(unreadable, [2]int64{start, off})
			continue
		case format != o.Format:
			return nil, 0, 0, fmt.Errorf("%s holds %s results lines; its input is %s: write them to another file", o.Path, format, o.Format)
		case st == StatusPending:
			pending++
		default:
			o.done[key] = true
		}
		o.Unreadable += len(unreadable)
		keep = append(keep, unreadable...) // not ours to delete
		unreadable = unreadable[:0]
		if st != StatusPending {
			keep = append(keep, [2]int64{start, off})
		}
		good = off
	}
	// Lines that do not read at the very end are what a crash left
	// (blocks of zeros after a power loss): cut with the torn tail.
	if good < off {
		o.Torn = 1
	}
	return keep, good, pending, nil
}

// rewrite replaces the file by its kept lines, atomically: a new file,
// locked, written, synced, renamed over the old. The new file's name is
// new too (os.CreateTemp): a fixed one could be a file of the user's,
// the run's input even, and would be truncated.
func (o *Output) rewrite(keep [][2]int64) error {
	tmp, err := os.CreateTemp(filepath.Dir(o.Path), "."+filepath.Base(o.Path)+".*.tmp")
	if err != nil {
		return err
	}
	if err := lockFile(tmp); err != nil {
		tmp.Close()
		return err
	}
	w := bufio.NewWriter(tmp)
	for _, k := range keep {
		if _, err = io.Copy(w, io.NewSectionReader(o.f, k[0], k[1]-k[0])); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), o.Path)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	o.f.Close()
	o.f = tmp
	return durable.SyncDir(o.Path)
}

// doneKey is the key of an outcome: its id, or for a line that was no
// valid item, its line number (so that the line, fixed, runs).
func doneKey(id string, invalidLine int) string {
	if invalidLine > 0 {
		return "l:" + strconv.Itoa(invalidLine)
	}
	return "i:" + id
}

// Has reports whether the file held the outcome of key (doneKey) when it
// was opened.
func (o *Output) Has(key string) bool { return o.done[key] }

// Write appends line (one results line, ending in a newline) with one
// write, then returns once it is on disk: concurrent writers share one
// fsync (group commit).
func (o *Output) Write(line []byte) error {
	o.mu.Lock()
	if o.err != nil {
		o.mu.Unlock()
		return o.err
	}
	if _, err := o.f.Write(line); err != nil {
		o.err = fmt.Errorf("writing %s: %w", o.Path, err)
		o.mu.Unlock()
		return o.err
	}
	o.written++
	seq := o.written
	o.mu.Unlock()
	return o.syncTo(seq)
}

// syncTo returns once line seq is on disk, syncing unless a sync begun
// after it was written has covered it.
func (o *Output) syncTo(seq int64) error {
	o.smu.Lock()
	defer o.smu.Unlock()
	if o.synced >= seq {
		return nil
	}
	o.mu.Lock()
	upTo := o.written // every line counted here was written before the sync below
	o.mu.Unlock()
	if err := o.f.Sync(); err != nil {
		o.mu.Lock()
		if o.err == nil {
			o.err = fmt.Errorf("syncing %s: %w", o.Path, err)
		}
		err = o.err
		o.mu.Unlock()
		return err
	}
	o.synced = upTo
	return nil
}

// Close closes the file (each Write has already synced its line).
func (o *Output) Close() error { return o.f.Close() }
