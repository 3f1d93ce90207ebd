package wiretest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/sse"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Fixture reads testdata/streams/name of the package under test.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// StreamSeeds returns every testdata/streams/*.sse fixture of the package
// under test, each whole and cut in half; it fails when there is none.
func StreamSeeds(f *testing.F) [][]byte {
	files, err := filepath.Glob(filepath.Join("testdata", "streams", "*.sse"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no stream fixtures: %v", err)
	}
	var out [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b, b[:len(b)/2])
	}
	return out
}

// Drain reads a stream to its end and returns the chunks and the final
// error (io.EOF for a complete end), each chunk cloned (a raw stream's
// borrow the stream's buffer: see llm.Chunk). It fails the test when the
// stream gives 100000 chunks without ending.
func Drain(t testing.TB, st llm.Stream) ([]llm.Chunk, error) {
	t.Helper()
	var out []llm.Chunk
	for range 100000 {
		c, err := st.Next()
		if err != nil {
			return out, err
		}
		out = append(out, c.Clone())
	}
	t.Fatal("stream never ended")
	return nil, nil
}

// WantStreamError checks that err is a ProviderError of dialect from
// inside a stream (phase stream, status 200, a body) and returns it.
func WantStreamError(t testing.TB, err error, dialect string) *llm.ProviderError {
	t.Helper()
	var pe *llm.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want *llm.ProviderError", err, err)
	}
	if pe.Phase != llm.PhaseStream || pe.Status != http.StatusOK || pe.Dialect != dialect {
		t.Errorf("ProviderError = phase %q status %d dialect %q, want stream 200 %s", pe.Phase, pe.Status, pe.Dialect, dialect)
	}
	if len(pe.Body) == 0 {
		t.Error("ProviderError.Body is empty")
	}
	return pe
}

// WantKeyless checks that err is a failure (not nil, not io.EOF) whose
// text, in every format, holds no key, nor does the body or message of a
// ProviderError in it.
func WantKeyless(t testing.TB, err error, key string) {
	t.Helper()
	if err == nil || err == io.EOF {
		t.Fatalf("err = %v, want a failure", err)
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err)} {
		if strings.Contains(s, key) {
			t.Errorf("key leaked: %s", s)
		}
	}
	var pe *llm.ProviderError
	if errors.As(err, &pe) && (bytes.Contains(pe.Body, []byte(key)) || strings.Contains(pe.Message, key)) {
		t.Errorf("key leaked in ProviderError body or message: %+v", pe)
	}
}

// SplitEvents splits a recorded event stream into its events, each with
// the blank line (sep: "\n\n", or "\r\n\r\n") that ends it; the last one
// as it is.
func SplitEvents(b []byte, sep string) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.Index(b, []byte(sep))
		if i < 0 {
			return append(out, b)
		}
		out = append(out, b[:i+len(sep)])
		b = b[i+len(sep):]
	}
	return out
}

// WriteEvents writes the first n events (all of them when n < 0), flushing
// each, after the caller has written the status and headers.
func WriteEvents(w http.ResponseWriter, events [][]byte, n int) {
	for i, ev := range events {
		if n >= 0 && i >= n {
			break
		}
		w.Write(ev)
		w.(http.Flusher).Flush()
	}
}

// Hanging returns a handler that runs before (when not nil) and then hangs
// until the client goes away or release is called. Register release with
// t.Cleanup after the server's Close, so that it runs first.
func Hanging(before func(w http.ResponseWriter)) (h http.HandlerFunc, release func()) {
	done := make(chan struct{})
	h = func(w http.ResponseWriter, r *http.Request) {
		if before != nil {
			before(w)
		}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
	return h, func() { close(done) }
}

// Golden compares the JSON got, indented, with testdata/encode/name.json,
// which the -update flag rewrites first.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	pretty.WriteByte('\n')
	path := filepath.Join("testdata", "encode", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), pretty.String()); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// Repeat returns a body that yields prefix once, then ev for ever: a
// stream that never ends, for measuring what each event costs.
func Repeat(prefix, ev string) io.ReadCloser {
	return io.NopCloser(&repeatReader{prefix: prefix, ev: ev})
}

type repeatReader struct {
	prefix, ev string
	off        int
	started    bool
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if !r.started {
		r.started = true
		return copy(p, r.prefix), nil
	}
	n := 0
	for n < len(p) {
		m := copy(p[n:], r.ev[r.off:])
		n += m
		r.off = (r.off + m) % len(r.ev)
	}
	return n, nil
}

// NoGarbagePerEvent fails t when reading the next chunks of s (a raw
// stream over an endless body such as Repeat's, past its prefix) makes any
// allocation, or a chunk's content is not content: thousands of slow
// same-dialect streams then cost no garbage collections.
func NoGarbagePerEvent(t testing.TB, s llm.Stream, content string) {
	t.Helper()
	allocs := testing.AllocsPerRun(1000, func() {
		c, err := s.Next()
		if err != nil || c.Content != content {
			t.Fatalf("Next = %+v, %v", c, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.2f allocations per event of a raw stream, want 0", allocs)
	}
}

// DrainSkipping drains st (Drain) and fails t unless its chunks' contents
// join to content and it left out skipped events (llm.Skipper); it
// returns the error that ended st.
func DrainSkipping(t testing.TB, st llm.Stream, content string, skipped int) error {
	t.Helper()
	got, err := Drain(t, st)
	var b strings.Builder
	for _, c := range got {
		b.WriteString(c.Content)
	}
	if b.String() != content || llm.SkippedOf(st) != skipped {
		t.Errorf("content %q, %d skipped; want %q, %d", b.String(), llm.SkippedOf(st), content, skipped)
	}
	return err
}

// WantMalformed fails t unless err is the malformed error of a stream
// (wrapping malformed, not a truncation) whose ProviderError holds body,
// the event that could not be read.
func WantMalformed(t testing.TB, err, malformed error, body string) {
	t.Helper()
	if !errors.Is(err, malformed) || errors.Is(err, llm.ErrStreamTruncated) {
		t.Fatalf("end = %v, want %v, not a truncation", err, malformed)
	}
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Phase != llm.PhaseStream || string(pe.Body) != body {
		t.Errorf("err = %v, want a stream ProviderError holding %q", err, body)
	}
}

// Unreadable counts the whole events of body a stream decoder cannot
// read, up to where it stops reading: what a stream that ends cleanly must
// have left out and counted (llm.Skipper). read is the dialect's model of
// its decoder: given each event's name and trimmed data, it reports
// whether the decoder cannot read it (bad), or stops reading there (stop).
// An event cut off by the end of body is a cut, never counted.
func Unreadable(body io.Reader, read func(name string, data []byte) (bad, stop bool)) int {
	var r sse.Reader
	r.Init(body)
	n := 0
	for {
		ev, err := r.Next()
		if err != nil {
			return n
		}
		bad, stop := read(ev.Event, bytes.TrimSpace([]byte(ev.Data)))
		if stop {
			return n
		}
		if bad && !r.Incomplete() {
			n++
		}
	}
}

// EventCost measures one event of s, a stream over an endless body such
// as Repeat's (past its prefix): one Next an iteration, its allocations
// reported. It is what each event of a long answer costs the decoder.
func EventCost(b *testing.B, s llm.Stream) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// IDAndModelOutliveTheBody fails t unless the response decode makes of
// body carries id and model that stay as they were once body is written
// over: the decoders let an answer's text borrow the body (the call's
// own), but its id and model, which records and logs keep apart from the
// answer, must be copies.
func IDAndModelOutliveTheBody(t testing.TB, decode func([]byte) (*llm.Response, error), body []byte, id, model string) {
	t.Helper()
	resp, err := decode(body)
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'x'
	}
	if resp.ID != id || resp.Model != model {
		t.Errorf("id %q, model %q after the body was written over, want %q, %q: they must be copies", resp.ID, resp.Model, id, model)
	}
}
