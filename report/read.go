package report

import (
	"bufio"
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
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	var long []byte
	tooLong := false
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) <= ledger.MaxLineBytes {
				long = append(long, chunk...)
			} else {
				tooLong = true
			}
			continue
		}
		line := chunk
		if len(long) > 0 || tooLong {
			line = append(long, chunk...)
		}
		if len(line) > 0 {
			n++
			if tooLong {
				s.lines++
				s.unreadable++
				s.noteUnreadable(name + ":" + strconv.Itoa(n))
			} else if s.addLine(line, f) != nil {
				s.noteUnreadable(name + ":" + strconv.Itoa(n))
			}
		}
		long, tooLong = long[:0], false
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

func strconvAtoi(s string) (int, error) { return strconv.Atoi(s) }

type errBadTime string

func (e errBadTime) Error() string {
	return fmt.Sprintf("%q is neither an RFC 3339 time (2025-06-01T12:00:00Z) nor a duration back from now (24h, 90m, 7d)", string(e))
}
