package batch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// openLines writes lines to a file and opens it as a batch input.
func openLines(t *testing.T, lines ...string) (*Input, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := OpenInput(path)
	if err == nil {
		t.Cleanup(func() { in.Close() })
	}
	return in, err
}

const openAIItem = `{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"x"}]}}`

// Two lines with one id would give two results under one id: the file
// is refused whole at opening, before any send, naming both lines.
func TestOpenInput_RefusesRepeatedIDsNamingBothLines(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		key   string
		dups  []Duplicate
		count int
	}{
		{"two answers", []string{`{"id":"a","prompt":"x"}`, `{"id":"b","prompt":"y"}`, `{"id":"a","prompt":"z"}`},
			"id", []Duplicate{{ID: "a", First: 1, Line: 3}}, 1},
		{"an invalid line and a valid one", []string{`{"id":"a","prompt":""}`, "", `{"id":"a","prompt":"y"}`},
			"id", []Duplicate{{ID: "a", First: 1, Line: 3}}, 1},
		{"a number and its text", []string{`{"id":42,"prompt":"x"}`, `{"id":"42","prompt":"y"}`},
			"id", []Duplicate{{ID: "42", First: 1, Line: 2}}, 1},
		{"OpenAI's custom_id", []string{fmt.Sprintf(openAIItem, "r1"), fmt.Sprintf(openAIItem, "r2"), fmt.Sprintf(openAIItem, "r1")},
			"custom_id", []Duplicate{{ID: "r1", First: 1, Line: 3}}, 1},
		{"three of one id", []string{`{"id":"a","prompt":"x"}`, `{"id":"a","prompt":"y"}`, `{"id":"a","prompt":"z"}`},
			"id", []Duplicate{{ID: "a", First: 1, Line: 2}, {ID: "a", First: 1, Line: 3}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openLines(t, tt.lines...)
			var de *DuplicateIDError
			if !errors.As(err, &de) {
				t.Fatalf("OpenInput = %v, want a *DuplicateIDError", err)
			}
			if d := cmp.Diff(tt.dups, de.Dups); d != "" || de.Key != tt.key || de.Count != tt.count {
				t.Fatalf("key %q, count %d, dups (-want +got):\n%s", de.Key, de.Count, d)
			}
			d := tt.dups[0]
			for _, want := range []string{fmt.Sprintf("line %d repeats %q of line %d", d.Line, d.ID, d.First),
				"nothing was sent", "give each line a " + tt.key + " of its own"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q lacks %q", err, want)
				}
			}
		})
	}
}

func TestOpenInput_NamesTheFirstTenRepeatsAndCountsAll(t *testing.T) {
	var lines []string
	for i := range 14 {
		lines = append(lines, fmt.Sprintf(`{"id":"x%d","prompt":"p"}`, i%2))
	}
	_, err := openLines(t, lines...)
	var de *DuplicateIDError
	if !errors.As(err, &de) || de.Count != 12 || len(de.Dups) != 10 {
		t.Fatalf("OpenInput = %v", err)
	}
	if !strings.Contains(err.Error(), "12 lines repeat an earlier line's id") || !strings.Contains(err.Error(), " and 2 more;") {
		t.Fatalf("error = %q", err)
	}
}

// Lines that name no id that reads are input errors of their own, never
// repeats; distinct ids pass.
func TestOpenInput_LinesWithoutIDsAreNoRepeats(t *testing.T) {
	in, err := openLines(t, `{oops`, `{"prompt":"x"}`, `{"prompt":"y"}`, `{"id":"a","prompt":"x"}`, `{"id":"b","prompt":"x"}`)
	if err != nil || in.Items != 5 {
		t.Fatalf("OpenInput = %v, %v", in, err)
	}
}

func TestParseLine_OpenAILineSaysItHasSideEffects(t *testing.T) {
	line := `{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","non_idempotent":true,"body":{"messages":[{"role":"user","content":"hi"}]}}`
	it, _, err := ParseLine([]byte(line), 1, OpenAI)
	if err != nil || !it.NonIdempotent || strings.Contains(string(it.Request.Raw.Body), "non_idempotent") {
		t.Fatalf("item %+v, %v: want NonIdempotent, and a body without detour's field", it, err)
	}
}
