package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// readAll reads every event from r until an error, and returns the events
// and that error (io.EOF at a clean end).
func readAll(t *testing.T, r *Reader) ([]Event, error) {
	t.Helper()
	var evs []Event
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("reader never ended")
		}
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestReader_Framing(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{name: "empty input", in: ""},
		{name: "blank lines only", in: "\n\r\n\r\n\n"},
		{name: "one event LF", in: "data: hello\n\n", want: []Event{{Data: "hello"}}},
		{name: "one event CRLF", in: "data: hello\r\n\r\n", want: []Event{{Data: "hello"}}},
		{name: "one event CR", in: "data: hello\r\r", want: []Event{{Data: "hello"}}},
		{
			name: "mixed line endings",
			in:   "data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r",
			want: []Event{{Data: "a\nb\nc"}, {Data: "d"}},
		},
		{
			name: "comments ignored",
			in:   ": OPENROUTER PROCESSING\n\n:\ndata: x\n: inside\n\n",
			want: []Event{{Data: "x"}},
		},
		{
			name: "multi-line data joined with LF",
			in:   "data: {\"a\":\ndata: 1}\n\n",
			want: []Event{{Data: "{\"a\":\n1}"}},
		},
		{name: "no space after colon", in: "data:x\n\n", want: []Event{{Data: "x"}}},
		{name: "only one space stripped", in: "data:  x \n\n", want: []Event{{Data: " x "}}},
		{name: "field without colon is empty value", in: "data\n\n", want: []Event{{Data: ""}}},
		{name: "empty data lines", in: "data:\ndata:\n\n", want: []Event{{Data: "\n"}}},
		{
			name: "event name",
			in:   "event: message_start\ndata: {}\n\nevent: ping\ndata: {}\n\n",
			want: []Event{{Event: "message_start", Data: "{}"}, {Event: "ping", Data: "{}"}},
		},
		{name: "event without data is dropped", in: "event: ping\n\ndata: x\n\n", want: []Event{{Data: "x"}}},
		{name: "event name does not leak into next event", in: "event: a\n\ndata: x\n\n", want: []Event{{Data: "x"}}},
		{name: "last event name wins", in: "event: a\nevent: b\ndata: x\n\n", want: []Event{{Event: "b", Data: "x"}}},
		{
			name: "id persists across events",
			in:   "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
			want: []Event{{ID: "7", Data: "a"}, {ID: "7", Data: "b"}, {ID: "", Data: "c"}},
		},
		{name: "id with NUL ignored", in: "id: 1\nid: a\x00b\ndata: x\n\n", want: []Event{{ID: "1", Data: "x"}}},
		{
			name: "retry",
			in:   "retry: 2500\ndata: a\n\nretry: 1s\ndata: b\n\nretry: 99999999999999999999\ndata: c\n\n",
			want: []Event{{Retry: 2500, Data: "a"}, {Data: "b"}, {Data: "c"}},
		},
		{name: "unknown fields ignored", in: "foo: bar\ndata : x\nDATA: y\ndata: z\n\n", want: []Event{{Data: "z"}}},
		{name: "byte order mark skipped", in: "\xEF\xBB\xBFdata: x\n\n", want: []Event{{Data: "x"}}},
		{name: "byte order mark only at the very start", in: "\n\xEF\xBB\xBFdata: x\n\ndata: y\n\n", want: []Event{{Data: "y"}}},
		{name: "second byte order mark kept", in: "\xEF\xBB\xBFdata: x\n\n\xEF\xBB\xBFdata: y\n\ndata: z\n\n", want: []Event{{Data: "x"}, {Data: "z"}}},
		{name: "unterminated last event", in: "data: a\n\ndata: b\n", want: []Event{{Data: "a"}, {Data: "b"}}},
		{name: "unterminated last line", in: "data: a\n\ndata: [DONE]", want: []Event{{Data: "a"}, {Data: "[DONE]"}}},
		{name: "unterminated event without data dropped", in: "data: a\n\nevent: x\n", want: []Event{{Data: "a"}}},
		{name: "invalid UTF-8 kept as bytes", in: "data: \xff\xfe\n\n", want: []Event{{Data: "\xff\xfe"}}},
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte", iotest.OneByteReader},
		{"half", iotest.HalfReader},
		{"data+EOF", iotest.DataErrReader},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				got, err := readAll(t, NewReader(rd.wrap(strings.NewReader(tt.in))))
				if err != io.EOF {
					t.Fatalf("final error = %v, want io.EOF", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestReader_IncompleteMarksUnterminatedLastEvent(t *testing.T) {
	r := NewReader(strings.NewReader("data: a\n\ndata: {\"cut"))
	if _, err := r.Next(); err != nil || r.Incomplete() {
		t.Fatalf("first event: err %v, incomplete %v; want nil, false", err, r.Incomplete())
	}
	ev, err := r.Next()
	if err != nil || ev.Data != "{\"cut" || !r.Incomplete() {
		t.Fatalf("last event = %q, %v, incomplete %v; want {\"cut, nil, true", ev.Data, err, r.Incomplete())
	}
	if _, err := r.Next(); err != io.EOF || r.Incomplete() {
		t.Fatalf("after last: %v, incomplete %v; want io.EOF, false", err, r.Incomplete())
	}
}

func TestReader_CRLFSplitAcrossReads(t *testing.T) {
	// Each read ends right after a '\r'; the '\n' comes with the next read.
	in := "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"
	r := NewReader(iotest.OneByteReader(strings.NewReader(in)))
	got, err := readAll(t, r)
	if err != io.EOF {
		t.Fatalf("final error = %v, want io.EOF", err)
	}
	want := []Event{{Data: "a\nb"}, {Data: "c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestReader_LoneCRDispatchesWithoutWaitingForNextByte(t *testing.T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	go pw.Write([]byte("data: x\r\r"))
	got := make(chan Event, 1)
	go func() {
		ev, _ := NewReader(pr).Next()
		got <- ev
	}()
	select {
	case ev := <-got:
		if ev.Data != "x" {
			t.Fatalf("Data = %q, want x", ev.Data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next blocked waiting for a byte after a lone CR")
	}
}

func TestReader_ReadErrorDropsPendingEventAndSticks(t *testing.T) {
	boom := errors.New("connection reset by peer")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: partial"), iotest.ErrReader(boom)))
	if ev, err := r.Next(); err != nil || ev.Data != "a" {
		t.Fatalf("first = %q, %v; want a, nil", ev.Data, err)
	}
	for i := 0; i < 2; i++ {
		if _, err := r.Next(); err != boom {
			t.Fatalf("call %d: err = %v, want %v", i, err, boom)
		}
	}
}

func TestReader_TooLong(t *testing.T) {
	tests := []struct {
		name string
		in   io.Reader
	}{
		{"endless line", iotest.OneByteReader(endless('a'))},
		{"endless line, big reads", endless('a')},
		{"long comment", strings.NewReader(":" + strings.Repeat("x", 200) + "\n\ndata: x\n\n")},
		{"data over many lines", strings.NewReader(strings.Repeat("data: 0123456789\n", 20) + "\n")},
		{"endless event", io.MultiReader(strings.NewReader("event: x\n"), endlessLines("data: 0123456789\n"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(tt.in)
			r.MaxEventSize = 100
			_, err := readAll(t, r)
			if !errors.Is(err, ErrTooLong) {
				t.Fatalf("err = %v, want ErrTooLong", err)
			}
			if _, err := r.Next(); !errors.Is(err, ErrTooLong) {
				t.Fatalf("second call err = %v, want ErrTooLong again", err)
			}
		})
	}
}

func TestReader_AtLimitIsAccepted(t *testing.T) {
	r := NewReader(strings.NewReader("data:" + strings.Repeat("x", 95) + "\n\n"))
	r.MaxEventSize = 100
	ev, err := r.Next()
	if err != nil || len(ev.Data) != 95 {
		t.Fatalf("Next = %d bytes, %v; want 95, nil", len(ev.Data), err)
	}
}

// endless is an io.Reader that yields the byte c forever.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// endlessLines repeats one line forever.
func endlessLines(line string) io.Reader {
	return &repeater{s: line}
}

type repeater struct {
	s   string
	off int
}

func (r *repeater) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.s[r.off:])
		n += c
		r.off = (r.off + c) % len(r.s)
	}
	return n, nil
}

func BenchmarkReader(b *testing.B) {
	chunk := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}` + "\n\n"
	in := strings.Repeat(chunk, 1000)
	b.Run("burst", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			r := NewReader(strings.NewReader(in))
			for {
				if _, err := r.NextView(); err != nil {
					break
				}
			}
			r.Release()
		}
	})
	// An event a read, as a slow stream's source gives them.
	b.Run("trickle", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			r := NewReader(&pieceReader{piece: len(chunk), s: in})
			for {
				if _, err := r.NextView(); err != nil {
					break
				}
			}
			r.Release()
		}
	})
}

// pieceReader returns s at most piece bytes a read.
type pieceReader struct {
	piece int
	s     string
}

func (p *pieceReader) Read(b []byte) (int, error) {
	if p.s == "" {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.piece)], p.s)
	p.s = p.s[n:]
	return n, nil
}

func TestReader_ReadyOnlyWhenAWholeEventWithDataIsBuffered(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     bool
	}{
		{"nothing buffered", "data: a\n\n", false},
		{"a whole event", "data: a\n\ndata: b\n\n", true},
		{"half an event", "data: a\n\ndata: b\n", false},
		{"a comment only", "data: a\n\n: ping\n\n", false},
		{"blank data only", "data: a\n\ndata: \n\n", false},
		{"an event after a comment", "data: a\n\n: ping\n\ndata: b\n\n", true},
		{"CR line endings", "data: a\r\rdata: b\r\r", true},
		{"CRLF line endings", "data: a\r\n\r\ndata: b\r\n\r\n", true},
		{"the end of the input", "data: a\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.in))
			defer r.Release()
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
			if got := r.Ready(); got != tc.want {
				t.Errorf("Ready() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReader_ReadyAfterTheEnd(t *testing.T) {
	r := NewReader(strings.NewReader("data: a\n\n"))
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	if !r.Ready() {
		t.Error("Ready() = false after the end: Next returns at once")
	}
}

func TestReader_ReleaseStopsTheReader(t *testing.T) {
	r := NewReader(strings.NewReader("data: a\n\ndata: b\n\n"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	r.Release()
	r.Release() // a second call does nothing
	if _, err := r.Next(); !errors.Is(err, ErrReleased) {
		t.Errorf("Next after Release: %v, want ErrReleased", err)
	}
	// A reader that had ended keeps its error.
	r = NewReader(strings.NewReader(""))
	if _, err := r.Next(); err != io.EOF {
		t.Fatal(err)
	}
	r.Release()
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next after the end and Release: %v, want io.EOF", err)
	}
}
