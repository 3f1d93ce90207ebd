package sse

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzReader checks that the reader never panics, ends with io.EOF or a read
// limit error, and that what it reads survives a trip through Writer:
// writing each event read and reading the result back gives the same events.
// It also writes the input itself as the data of one event (when it holds no
// '\r', which the format turns into a line end) and reads it back unchanged.
func FuzzReader(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.sse"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "\r", "\r\n", "data", "data:", "data: x\r", ":\n", "\xEF\xBB\xBF", "id: \x00\n", "retry: 1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 1 << 16
		r := NewReader(bytes.NewReader(in))
		r.MaxEventSize = limit
		var events []Event
		for {
			ev, err := r.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrTooLong) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(events) > len(in) {
				t.Fatalf("%d events from %d bytes", len(events), len(in))
			}
			if strings.ContainsAny(ev.Data, "\r") || strings.ContainsAny(ev.Event, "\r\n") {
				t.Fatalf("line break inside a field: %+v", ev)
			}
			events = append(events, ev)
		}

		// Read in small pieces, lines cross the read buffer's fills (the
		// copying path of readLine) instead of lying whole in it: the same
		// events must come out.
		for _, rd := range []io.Reader{iotest.OneByteReader(bytes.NewReader(in)), iotest.HalfReader(bytes.NewReader(in)),
			&piecesReader{b: in, sizes: []int{700, 3, 1, 900, 40, 511, 512}}} {
			r := NewReader(rd)
			r.MaxEventSize = limit
			for i := 0; ; i++ {
				ev, err := r.Next()
				if err != nil {
					if i < len(events) {
						t.Fatalf("read in pieces: %v after %d events, want %d", err, i, len(events))
					}
					break
				}
				if i >= len(events) {
					t.Fatalf("read in pieces: event %d = %+v, read whole there were %d", i, ev, len(events))
				}
				if ev != events[i] {
					t.Fatalf("read in pieces: event %d = %+v, read whole it was %+v", i, ev, events[i])
				}
			}
			r.Release()
		}

		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, ev := range events {
			if err := w.WriteEvent(ev.Event, ev.Data); err != nil {
				t.Fatal(err)
			}
		}
		back := NewReader(&buf)
		for i, want := range events {
			got, err := back.Next()
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if got.Event != want.Event || got.Data != want.Data {
				t.Fatalf("event %d = %q/%q after round trip, want %q/%q", i, got.Event, got.Data, want.Event, want.Data)
			}
		}
		if _, err := back.Next(); err != io.EOF {
			t.Fatalf("after round trip: %v, want io.EOF", err)
		}

		if bytes.IndexByte(in, '\r') >= 0 {
			return
		}
		buf.Reset()
		if err := w.WriteData(in); err != nil {
			t.Fatal(err)
		}
		ev, err := NewReader(&buf).Next()
		if err != nil || ev.Data != string(in) {
			t.Fatalf("data round trip = %q, %v; want %q", ev.Data, err, in)
		}
	})
}

// piecesReader returns b in reads of the sizes given, in turn: small and
// large reads mixed, so a Reader switches between waiting with its small
// buffer and its large one.
type piecesReader struct {
	b     []byte
	sizes []int
	i     int
}

func (p *piecesReader) Read(buf []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := copy(buf[:min(len(buf), p.sizes[p.i%len(p.sizes)])], p.b)
	p.i++
	p.b = p.b[n:]
	return n, nil
}
