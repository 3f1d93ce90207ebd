package batch

import (
	"errors"
	"fmt"
	"testing"
)

// FuzzParseLine feeds ParseLine any line, in each format: it never
// panics, an error is always an *InputError of the line, a valid item
// has an id and messages, and the id a run checks for repeats (lineIDOf)
// is the item's.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","prompt":"x"}`,
		`{"id":42,"prompt":"x","non_idempotent":true,"tools":[{"name":"f"}]}`,
		`{"id":"c","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stop":"s","max_tokens":3}`,
		fmt.Sprintf(openAIItem, "r1"),
		`{"custom_id":"r","method":"POST","url":"/v1/chat/completions","non_idempotent":false,"body":{"model":"m","messages":[{"role":"user","content":"x"}],"seed":1}}`,
		`{"id":"a"}`, `{oops`, `[]`, `null`, `{"ID":"x","prompt":"y"}`,
	} {
		f.Add([]byte(s), "")
		f.Add([]byte(s), string(OpenAI))
	}
	f.Fuzz(func(t *testing.T, line []byte, format string) {
		if format != "" && format != string(Native) && format != string(OpenAI) {
			return
		}
		it, got, err := ParseLine(line, 5, Format(format))
		id, valid := lineIDOf(line, 5, Format(format))
		if quick, ok := quickID(line); ok && quick != id {
			t.Fatalf("quickID = %q, lineIDOf %q", quick, id)
		}
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.Line != 5 {
				t.Fatalf("error %#v is not an *InputError of line 5", err)
			}
			if id != ie.ID || valid != "" {
				t.Fatalf("lineIDOf = %q, %q; the error names %q", id, valid, ie.ID)
			}
			return
		}
		if it.ID == "" || it.Request == nil || len(it.Request.Messages) == 0 || it.Line != 5 {
			t.Fatalf("valid item %+v lacks an id or messages", it)
		}
		if got != Native && got != OpenAI || format != "" && got != Format(format) {
			t.Fatalf("format %q for a file of %q", got, format)
		}
		if id != it.ID || valid != got {
			t.Fatalf("lineIDOf = %q, %q; ParseLine %q, %q", id, valid, it.ID, got)
		}
	})
}
