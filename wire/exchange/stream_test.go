package exchange

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/llm"
)

// closeCounter counts the Close calls of a body.
type closeCounter struct{ n int }

func (c *closeCounter) Close() error { c.n++; return nil }

func TestStream_EndIsStickyAndRedacted(t *testing.T) {
	calls := 0
	s := funcStream("x", &closeCounter{}, testKey, func() (llm.Chunk, error) {
		calls++
		if calls == 1 {
			return llm.Chunk{Content: "a"}, nil
		}
		return llm.Chunk{}, errors.New("bad frame " + testKey)
	})
	if c, err := s.Next(); err != nil || c.Content != "a" {
		t.Fatalf("first Next = %+v, %v", c, err)
	}
	_, end := s.Next()
	if end == nil || strings.Contains(end.Error(), testKey) {
		t.Fatalf("end = %v, want an error without the key", end)
	}
	if _, again := s.Next(); again != end || calls != 2 {
		t.Errorf("Next after the end = %v after %d decodes, want the same error after 2", again, calls)
	}
}

func TestStream_CloseIsIdempotentAndStopsNext(t *testing.T) {
	body := &closeCounter{}
	s := funcStream("x", body, "", func() (llm.Chunk, error) { return llm.Chunk{}, nil })
	for range 3 {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if body.n != 1 || !s.Closed() {
		t.Errorf("body closed %d times (Closed %v), want once", body.n, s.Closed())
	}
	_, err := s.Next()
	if !errors.Is(err, ErrStreamClosed) || err.Error() != "x: stream closed" {
		t.Errorf("Next after Close = %v, want x: stream closed", err)
	}
}

func TestStream_EndedStreamKeepsItsEndAfterClose(t *testing.T) {
	s := funcStream("x", &closeCounter{}, "", func() (llm.Chunk, error) { return llm.Chunk{}, io.EOF })
	if _, err := s.Next(); err != io.EOF {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Next(); err != io.EOF {
		t.Errorf("Next after end and Close = %v, want io.EOF", err)
	}
}

func TestStream_CloseFromAnotherGoroutineUnblocksNext(t *testing.T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	var s *Stream
	s = funcStream("x", pr, "", func() (llm.Chunk, error) {
		_, err := pr.Read(make([]byte, 1)) // blocks until Close
		return llm.Chunk{}, s.Truncated(err)
	})
	time.AfterFunc(20*time.Millisecond, func() { s.Close() })
	done := make(chan error, 1)
	go func() { _, err := s.Next(); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrStreamClosed) {
			t.Errorf("Next = %v, want ErrStreamClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next still blocked after Close")
	}
}

func TestStream_Truncated(t *testing.T) {
	s := funcStream("x", &closeCounter{}, "", nil)
	reset := errors.New("connection reset")
	for _, tc := range []struct {
		in, want error
	}{
		{io.EOF, io.ErrUnexpectedEOF},
		{reset, reset},
	} {
		err := s.Truncated(tc.in)
		if !errors.Is(err, llm.ErrStreamTruncated) || !errors.Is(err, tc.want) || errors.Is(err, io.EOF) ||
			!strings.HasPrefix(err.Error(), "x: ") {
			t.Errorf("Truncated(%v) = %v, want x: ErrStreamTruncated wrapping %v, never io.EOF", tc.in, err, tc.want)
		}
	}
	s.Close()
	if err := s.Truncated(reset); !errors.Is(err, ErrStreamClosed) || errors.Is(err, llm.ErrStreamTruncated) {
		t.Errorf("Truncated after Close = %v, want ErrStreamClosed", err)
	}
}

func TestStream_OnEndRunsOnceAtTheEnd(t *testing.T) {
	n := 0
	s := funcStream("x", io.NopCloser(nil), "", func() (llm.Chunk, error) {
		if n++; n == 1 {
			return llm.Chunk{Content: "a"}, nil
		}
		return llm.Chunk{}, io.EOF
	})
	ends := 0
	s.OnEnd = func() { ends++ }
	if _, err := s.Next(); err != nil || ends != 0 {
		t.Fatalf("first chunk: %v, OnEnd ran %d times before the end", err, ends)
	}
	for range 3 {
		if _, err := s.Next(); err != io.EOF {
			t.Fatalf("err = %v, want io.EOF", err)
		}
	}
	if ends != 1 {
		t.Fatalf("OnEnd ran %d times, want once", ends)
	}
}

// decodeFunc is a ChunkSource that calls itself.
type decodeFunc func() (llm.Chunk, error)

func (f decodeFunc) NextChunk() (llm.Chunk, error) { return f() }

// funcStream returns a Stream of body whose chunks decode returns, readied
// by Init as an adapter readies the one it embeds.
func funcStream(name string, body io.Closer, key string, decode func() (llm.Chunk, error)) *Stream {
	s := new(Stream)
	s.Init(name, body, key, decodeFunc(decode))
	return s
}

// Skip leaves out one unreadable event between readable ones and counts
// it; it refuses the first event when none was read before it, and the
// second of two in a row.
func TestStream_SkipLeavesOutOneBadEventBetweenReadableOnes(t *testing.T) {
	tests := []struct {
		name   string
		events string // r: an event read, b: one that cannot be
		skips  string // what Skip reports for each b, in order: s skipped, f fails
		n      int
	}{
		{name: "one between good ones", events: "rbr", skips: "s", n: 1},
		{name: "the first, nothing read before it", events: "br", skips: "f"},
		{name: "two in a row", events: "rbb", skips: "sf", n: 1},
		{name: "two apart", events: "rbrbr", skips: "ss", n: 2},
		{name: "the last one", events: "rrb", skips: "s", n: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Stream
			got := ""
			for _, e := range tt.events {
				if e == 'r' {
					s.Parsed()
				} else if s.Skip() {
					got += "s"
				} else {
					got += "f"
				}
			}
			if got != tt.skips || s.Skipped() != tt.n || llm.SkippedOf(&s) != tt.n {
				t.Errorf("Skip gave %q, Skipped %d; want %q, %d", got, s.Skipped(), tt.skips, tt.n)
			}
		})
	}
}
