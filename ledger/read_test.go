package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	const good = `{"time":"2025-06-01T12:00:00.000Z","request_id":"r","status":"ok"}`
	tests := []struct {
		name     string
		in       string
		wantN    int // records handed to fn
		wantLine int // 0: no error
	}{
		{"empty", "", 0, 0},
		{"two lines", good + "\n" + good + "\n", 2, 0},
		{"no final newline", good + "\n" + good, 2, 0},
		{"blank lines skipped", "\n" + good + "\n\n  \n" + good + "\n", 2, 0},
		{"unknown field ignored", `{"status":"ok","new_field":1}` + "\n", 1, 0},
		{"CRLF", good + "\r\n", 1, 0},
		{"torn last line", good + "\n" + good[:30], 1, 2},
		{"garbage in the middle", good + "\n" + good + "\nnot json\n" + good + "\n", 2, 3},
		{"wrong type", good + "\n" + `{"hop":"one"}` + "\n", 1, 2},
		{"bad time", `{"time":"yesterday"}` + "\n", 0, 1},
		{"null", "null\n", 0, 1},
		{"array", "[]\n", 0, 1},
		{"line number counts blank lines", "\n\n" + "{\n", 0, 3},
		{"too long", good + "\n" + `{"reason":"` + strings.Repeat("x", MaxLineBytes) + `"}` + "\n", 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			err := Scan(strings.NewReader(tt.in), func(r Record) error {
				n++
				return nil
			})
			if n != tt.wantN {
				t.Errorf("fn called %d times, want %d", n, tt.wantN)
			}
			if tt.wantLine == 0 {
				if err != nil {
					t.Fatalf("Scan = %v", err)
				}
				return
			}
			var le *LineError
			if !errors.As(err, &le) || le.Line != tt.wantLine {
				t.Fatalf("Scan = %v, want a *LineError on line %d", err, tt.wantLine)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("error %q does not name the line", err)
			}
		})
	}
}

func TestScan_FnErrorStopsAndIsReturned(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Scan(strings.NewReader("{}\n{}\n{}\n"), func(Record) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Fatalf("Scan = %v after %d records, want stop after 2", err, n)
	}
}

func TestReadFile_ReturnsRecordsBeforeABadLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	data := `{"request_id":"a"}` + "\n" + `{"request_id":"b"}` + "\n" + `{"request_id":`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadFile(path)
	if len(recs) != 2 || recs[0].RequestID != "a" || recs[1].RequestID != "b" {
		t.Fatalf("records = %+v", recs)
	}
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || le.Path != path {
		t.Fatalf("err = %v, want line 3 of %s", err, path)
	}
	if want := "ledger: " + path + ":3: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %q, want prefix %q", err, want)
	}

	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
