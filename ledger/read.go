package ledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLineBytes is the longest line Scan reads. Detour's own lines are well
// under 1 KiB; a longer one means the file is not a ledger.
const MaxLineBytes = 1 << 20

// LineError is a ledger line that could not be read: not JSON, not a record,
// or longer than MaxLineBytes.
type LineError struct {
	// Path is the file, when the reader knows it (ReadFile does).
	Path string
	// Line is the 1-based line number.
	Line int
	// Err says what is wrong with it.
	Err error
}

// Error returns "ledger: line N: ..." or "ledger: PATH:N: ...".
func (e *LineError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("ledger: %s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("ledger: line %d: %v", e.Line, e.Err)
}

// Unwrap returns Err.
func (e *LineError) Unwrap() error { return e.Err }

// Scan reads JSON lines from r and calls fn with each record, in order. Blank
// lines are skipped; fields a record does not know are ignored (a newer
// detour may add some). A malformed line stops the scan with a *LineError
// naming its line number; an error from fn stops it and is returned as is;
// a read error is returned wrapped.
func Scan(r io.Reader, fn func(Record) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if b[0] != '{' {
			return &LineError{Line: line, Err: errors.New("not a JSON object")}
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return &LineError{Line: line, Err: err}
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &LineError{Line: line + 1, Err: fmt.Errorf("longer than %d bytes", MaxLineBytes)}
		}
		return fmt.Errorf("ledger: read: %w", err)
	}
	return nil
}

// ReadFile reads every record of the JSONL ledger at path. On a malformed
// line it returns the records before it together with the *LineError, so a
// report can still use a file whose last line a crash cut short.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	defer f.Close()
	var recs []Record
	err = Scan(f, func(r Record) error {
		recs = append(recs, r)
		return nil
	})
	if le := (*LineError)(nil); errors.As(err, &le) {
		le.Path = path
	}
	return recs, err
}
