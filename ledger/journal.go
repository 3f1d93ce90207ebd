package ledger

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Journal is a Sink that notes each attempt before it is sent, so that an
// attempt in flight when its process dies (SIGKILL, the OOM killer, a
// crash) still gets its line: the router calls Begin just before the
// send, the Write of the record with the same RequestID, Hop and Attempt
// ends it, and whatever a dead process began and never ended is written
// as StatusInterrupted by the next process that opens the ledger. A send
// the upstream saw, and may have billed, is never missing from the ledger.
type Journal interface {
	Sink
	// Begin notes that r's attempt is about to be sent. r carries what is
	// known then: Time (the start), RequestID, Route, Provider, Model,
	// Hop, Attempt and Failover.
	Begin(r Record) error
}

// StatusInterrupted is an attempt its process began and never ended: the
// process died while it was in flight, and the next detour to open the
// ledger wrote this line from the dead process's journal. Its phase is
// "unknown": the upstream may have answered it, and billed it.
const StatusInterrupted = "interrupted"

// journalMax is the size past which a journal is rewritten with only the
// attempts still in flight: a process serving for months keeps a file of
// a few hundred KiB at most.
const journalMax = 256 << 10

// tailWindow is how much of the ledger's end recovery reads to leave out
// an attempt whose line was written just before its process died, and
// whose end the journal never got.
const tailWindow = 1 << 20

// attemptKey names one attempt within a ledger.
type attemptKey struct {
	id     string
	hop, n int
}

// keyOf is r's attempt key.
func keyOf(r *Record) attemptKey { return attemptKey{r.RequestID, r.Hop, r.Attempt} }

// journal is one process's file of attempts begun and not yet written:
// "+" and the record's line when one begins, "-" and its key when its
// line is in the ledger. The process holds an exclusive flock on it for
// as long as it lives; a journal whose lock is free belongs to a dead
// process. Its fields are guarded by the File's mutex.
type journal struct {
	path string
	f    *os.File
	open map[attemptKey]Record // each attempt in flight, as begun
	size int64
	buf  []byte
}

// journalGlob is the pattern of the journals of the ledger at path:
// hidden files beside it, one per process that wrote to it.
func journalGlob(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+".inflight.*")
}

// openJournal creates this process's journal for the ledger at path and
// locks it.
func openJournal(path string) (*journal, error) {
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(path)
	jp := filepath.Join(dir, "."+base+".inflight."+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(r[:]))
	f, err := os.OpenFile(jp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if ok, err := tryLock(f); err != nil || !ok {
		f.Close()
		os.Remove(jp)
		return nil, fmt.Errorf("lock %s: %v", jp, err)
	}
	return &journal{path: jp, f: f, open: map[attemptKey]Record{}}, nil
}

// begin notes r's attempt.
func (j *journal) begin(r *Record) error {
	line, err := appendLine(append(j.buf[:0], '+'), r)
	if err != nil {
		return err
	}
	j.buf = line
	j.open[keyOf(r)] = *r
	return j.write(line)
}

// end notes that r's line is in the ledger, when r's attempt was begun.
func (j *journal) end(r *Record) error {
	k := keyOf(r)
	if _, ok := j.open[k]; !ok {
		return nil
	}
	delete(j.open, k)
	if j.size >= journalMax {
		return j.compact()
	}
	j.buf = appendEnd(j.buf[:0], k)
	return j.write(j.buf)
}

// appendEnd appends the end line of k: "-", the quoted request id, the
// hop and the attempt, and a newline.
func appendEnd(b []byte, k attemptKey) []byte {
	b = append(b, '-')
	b = strconv.AppendQuote(b, k.id)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(k.hop), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(k.n), 10)
	return append(b, '\n')
}

// write appends b.
func (j *journal) write(b []byte) error {
	n, err := j.f.Write(b)
	j.size += int64(n)
	return err
}

// compact rewrites the journal with only the attempts still in flight.
func (j *journal) compact() error {
	if err := j.f.Truncate(0); err != nil {
		return err
	}
	if _, err := j.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	j.size = 0
	for _, r := range j.open {
		line, err := appendLine(append(j.buf[:0], '+'), &r)
		if err != nil {
			return err
		}
		j.buf = line
		if err := j.write(line); err != nil {
			return err
		}
	}
	return nil
}

// close closes the journal, and removes it when nothing is in flight; an
// attempt begun and never written is left for the next process to
// recover.
func (j *journal) close() error {
	if len(j.open) == 0 {
		os.Remove(j.path) //nolint:errcheck // a leftover empty journal recovers to nothing
	}
	return j.f.Close()
}

// Begin notes r's attempt in this process's journal (created beside the
// ledger at the first Begin); see Journal. On a system without flock it
// does nothing.
func (l *File) Begin(r Record) error {
	if !canJournal {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("ledger: %s: %w", l.path, os.ErrClosed)
	}
	if l.j == nil {
		j, err := openJournal(l.path)
		if err != nil {
			return fmt.Errorf("ledger: journal: %w", err)
		}
		l.j = j
	}
	if err := l.j.begin(&r); err != nil {
		return fmt.Errorf("ledger: journal: %w", err)
	}
	return nil
}

// Recovered is how many attempts OpenFile found that dead processes began
// and never wrote, and wrote as StatusInterrupted.
func (l *File) Recovered() int { return l.recovered }

// recover writes the attempts that dead processes' journals hold open as
// StatusInterrupted lines, then removes those journals. A journal whose
// process lives (its lock is held) is left alone.
func (l *File) recover() (int, error) {
	paths, err := filepath.Glob(journalGlob(l.path))
	if err != nil || len(paths) == 0 {
		return 0, err
	}
	written := 0
	var firstErr error
	for _, p := range paths {
		n, err := l.recoverOne(p)
		written += n
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return written, firstErr
}

// recoverOne recovers the journal at p when its process is dead.
func (l *File) recoverOne(p string) (int, error) {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return 0, nil // gone: another process recovered it
	}
	defer f.Close()
	if ok, err := tryLock(f); err != nil || !ok {
		return 0, err // its process lives
	}
	// Another process may have recovered and removed it between our open
	// and our lock: then the path names another file, or none.
	if st, err := os.Stat(p); err != nil || !sameFile(f, st) {
		return 0, nil
	}
	recs, err := openAttempts(f)
	if err != nil {
		return 0, fmt.Errorf("ledger: journal %s: %w", p, err)
	}
	if len(recs) > 0 {
		written := l.alreadyWritten()
		pid := journalPID(p)
		n := 0
		for _, r := range recs {
			if written[keyOf(&r)] {
				continue
			}
			r.Status, r.Kind, r.Action, r.Phase = StatusInterrupted, "", "", "unknown"
			r.Reason = "detour" + pid + " stopped while this attempt was in flight (killed or crashed): the upstream may have answered and billed it"
			if err := l.Write(r); err != nil {
				return n, err
			}
			n++
		}
		if err := os.Remove(p); err != nil {
			return n, err
		}
		return n, nil
	}
	return 0, os.Remove(p)
}

// journalPID is " (pid N)" from a journal's name, or "".
func journalPID(p string) string {
	name := filepath.Base(p)
	i := bytes.LastIndexByte([]byte(name), '.')
	if i < 0 {
		return ""
	}
	pid, _, _ := bytes.Cut([]byte(name[i+1:]), []byte("-"))
	if _, err := strconv.Atoi(string(pid)); err != nil {
		return ""
	}
	return " (pid " + string(pid) + ")"
}

// sameFile reports whether f is the file st describes.
func sameFile(f *os.File, st os.FileInfo) bool {
	fs, err := f.Stat()
	return err == nil && os.SameFile(fs, st)
}

// openAttempts reads a journal and returns the records of the attempts it
// began and did not end, in the order they began. A torn last line (the
// process died in its write) is left out.
func openAttempts(r io.Reader) ([]Record, error) {
	var order []attemptKey
	open := map[attemptKey]Record{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) < 2 {
			continue
		}
		switch line[0] {
		case '+':
			var rec Record
			if json.Unmarshal(line[1:], &rec) != nil {
				continue
			}
			k := keyOf(&rec)
			if _, ok := open[k]; !ok {
				order = append(order, k)
			}
			open[k] = rec
		case '-':
			if k, ok := parseEnd(string(line[1:])); ok {
				delete(open, k)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []Record
	for _, k := range order {
		if r, ok := open[k]; ok {
			out = append(out, r)
			delete(open, k)
		}
	}
	return out, nil
}

// parseEnd reads an end line's key: a quoted request id, the hop and the
// attempt, separated by spaces.
func parseEnd(s string) (attemptKey, bool) {
	id, err := strconv.QuotedPrefix(s)
	if err != nil {
		return attemptKey{}, false
	}
	var k attemptKey
	if k.id, err = strconv.Unquote(id); err != nil {
		return attemptKey{}, false
	}
	if _, err := fmt.Sscanf(s[len(id):], " %d %d", &k.hop, &k.n); err != nil {
		return attemptKey{}, false
	}
	return k, true
}

// alreadyWritten returns the attempts whose lines stand in the last
// tailWindow bytes of the ledger: a process killed between writing an
// attempt's line and ending it in its journal.
func (l *File) alreadyWritten() map[attemptKey]bool {
	seen := map[attemptKey]bool{}
	f, err := os.Open(l.path)
	if err != nil {
		return seen
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return seen
	}
	off := max(st.Size()-tailWindow, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return seen
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	for line := range bytes.Lines(b) {
		var r struct {
			RequestID string `json:"request_id"`
			Hop       int    `json:"hop"`
			Attempt   int    `json:"attempt"`
		}
		if json.Unmarshal(line, &r) == nil {
			seen[attemptKey{r.RequestID, r.Hop, r.Attempt}] = true
		}
	}
	return seen
}
