package sse

import (
	"io"
	"strings"
	"testing"
)

// An event's data is read where it came, in the input buffer: a stream of
// events that each lie whole in a read, or that are cut off at the end of
// one (the rest carried to the buffer's start for the next read), makes
// the reader hold no line or data buffer of its own, which thousands of
// slow streams would each keep. (An event whose blank line comes in a
// later read than its data has the data copied: TestReader_ViewOutlivesTheNextRead.)
func TestReader_DataIsAViewOfTheInput(t *testing.T) {
	event := `data: {"choices":[{"index":0,"delta":{"content":"Hello!"}}]}` + "\n\n"
	in := strings.Repeat(event, 50)
	if len(event)%2 != 0 {
		t.Fatal("the event's length must be even: pieces of one and a half events cut it in its middle")
	}
	// Pieces of one event each (a slow stream), of one and a half (events
	// cut off in the middle of their data line), and of all of them.
	for _, piece := range []int{len(event), len(event) * 3 / 2, len(in)} {
		r := NewReader(&pieceReader{piece: piece, s: in})
		n := 0
		for {
			v, err := r.NextView()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("pieces of %d: %v", piece, err)
			}
			if want := event[len("data: ") : len(event)-2]; string(v.Data) != want {
				t.Fatalf("pieces of %d: event %d data %q, want %q", piece, n, v.Data, want)
			}
			n++
		}
		if n != 50 {
			t.Fatalf("pieces of %d: %d events, want 50", piece, n)
		}
		if cap(r.line) != 0 || cap(r.data) != 0 {
			t.Errorf("pieces of %d: the reader made a line buffer of %d and a data buffer of %d bytes, want none", piece, cap(r.line), cap(r.data))
		}
		r.Release()
	}
}

// A view is copied before the read that would write over it: the blank
// line that ends an event may come in a later read than its data, and
// an event of two data lines is put together.
func TestReader_ViewOutlivesTheNextRead(t *testing.T) {
	for _, c := range []struct {
		name   string
		pieces []string
		want   []string
	}{
		{"blank line in the next read", []string{"data: first\n", "\ndata: second\n", "\n"}, []string{"first", "second"}},
		{"line cut off", []string{"data: fi", "rst\n\nda", "ta: second\n\n"}, []string{"first", "second"}},
		{"two data lines", []string{"data: a\n", "data: b\n\n"}, []string{"a\nb"}},
		{"a long line", []string{"data: " + strings.Repeat("x", 3000), strings.Repeat("y", 3000) + "\n\n"}, []string{strings.Repeat("x", 3000) + strings.Repeat("y", 3000)}},
	} {
		r := NewReader(&listReader{pieces: c.pieces})
		var got []string
		for {
			v, err := r.NextView()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			got = append(got, string(v.Data))
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: events %q, want %q", c.name, got, c.want)
		}
		r.Release()
	}
}

// listReader hands out a piece per read; what a read cannot take stays
// for the next.
type listReader struct{ pieces []string }

func (l *listReader) Read(p []byte) (int, error) {
	if len(l.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.pieces[0])
	if l.pieces[0] = l.pieces[0][n:]; l.pieces[0] == "" {
		l.pieces = l.pieces[1:]
	}
	return n, nil
}
