package report

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/detourhq/detour/ledger"
)

// Summarize reads JSON lines from r into s, counting those f selects. It
// never stops at a bad line; it returns only a read error.
func Summarize(r io.Reader, f Filter, s *Summary) error {
	return s.read(r, "line", f)
}

// SummarizeFrom is Summarize for a named stream (standard input, a pipe):
// plain JSON lines or gzip, told by its first bytes, as SummarizeFile; its
// unreadable lines are named name:N.
func SummarizeFrom(r io.Reader, name string, f Filter, s *Summary) error {
	return s.read(r, name, f)
}

// SummarizeFile reads the ledger at path into s: plain JSON lines or gzip
// (told by its first bytes, whatever its name). A gzip stream cut short
// ends the file like a torn last line. Unreadable lines are named path:N.
func SummarizeFile(path string, f Filter, s *Summary) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	return s.read(fh, path, f)
}

func (s *Summary) read(r io.Reader, name string, f Filter) error {
	l, err := newLines(r, name)
	if err != nil {
		return err
	}
	var rec ledger.Record
	for {
		ok, err := s.nextRecord(l, f, &rec)
		if !ok || err != nil {
			return err
		}
		s.Add(&rec)
	}
}

// lines reads a ledger stream line by line: plain JSON lines, or gzip
// told by its first bytes. A gzip stream cut short ends like a torn last
// line.
type lines struct {
	name    string
	br      *bufio.Reader
	n       int    // lines with bytes read so far, to name them name:N
	long    []byte // a line longer than br's buffer, so far
	tooLong bool   // it is past ledger.MaxLineBytes
	err     error  // to return once the line read with it is out
}

func newLines(r io.Reader, name string) (*lines, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	return &lines{name: name, br: br}, nil
}

// next returns the next line with bytes in it (blank ones too), valid
// until the next call; tooLong when it was past ledger.MaxLineBytes, its
// bytes then dropped. After the last line it returns io.EOF, or the read
// error that ended the stream.
func (l *lines) next() (line []byte, tooLong bool, err error) {
	for {
		if l.err != nil {
			return nil, false, l.err
		}
		chunk, err := l.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(l.long)+len(chunk) <= ledger.MaxLineBytes {
				l.long = append(l.long, chunk...)
			} else {
				l.tooLong = true
			}
			continue
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			l.err = io.EOF
		default:
			l.err = fmt.Errorf("%s: %w", l.name, err)
		}
		line = chunk
		if len(l.long) > 0 || l.tooLong {
			line = append(l.long, chunk...)
		}
		tooLong = l.tooLong
		l.long, l.tooLong = l.long[:0], false
		if len(line) > 0 {
			l.n++
			return line, tooLong, nil
		}
	}
}

// where names the line next returned last: name:N.
func (l *lines) where() string { return l.name + ":" + strconv.Itoa(l.n) }

// nextRecord reads lines from l into rec until one holds a record f
// selects, counting every line read in s (blank ones aside) and noting the
// unreadable ones; false at the end of l.
func (s *Summary) nextRecord(l *lines, f Filter, rec *ledger.Record) (bool, error) {
	for {
		line, tooLong, err := l.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
		if tooLong {
			s.lines++
			s.unreadable++
			s.noteUnreadable(l.where())
			continue
		}
		if isBlank(line) {
			continue
		}
		s.lines++
		r, err := ParseLine(line)
		if err != nil {
			s.unreadable++
			s.noteUnreadable(l.where())
			continue
		}
		if f.Match(&r) {
			*rec = r
			return true, nil
		}
	}
}

func isBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

func strconvAtoi(s string) (int, error) { return strconv.Atoi(s) }

type errBadTime string

func (e errBadTime) Error() string {
	return fmt.Sprintf("%q is neither an RFC 3339 time (2025-06-01T12:00:00Z) nor a duration back from now (24h, 90m, 7d)", string(e))
}
