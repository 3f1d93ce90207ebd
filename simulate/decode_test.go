package simulate

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/anthropic"
	"github.com/detourhq/detour/wire/gemini"
	"github.com/detourhq/detour/wire/openai"
	"github.com/detourhq/detour/wire/responses"
)

// The helpers below read the simulator's answers through the real client
// decoders of wire/*, so the tests pin what a client makes of each fault.

// allDialects lists every dialect, OpenAI's first.
var allDialects = []Dialect{DialectOpenAI, DialectAnthropic, DialectGemini, DialectResponses}

// frameEnd is what ends one SSE event in dialect d's streams.
func frameEnd(d Dialect) string {
	if d == DialectGemini {
		return "\r\n\r\n"
	}
	return "\n\n"
}

// decodeStream reads resp with dialect d's stream decoder.
func decodeStream(t *testing.T, d Dialect, resp *http.Response) llm.Stream {
	t.Helper()
	var st llm.Stream
	var err error
	switch d {
	case DialectAnthropic:
		st, err = anthropic.DecodeStream(resp)
	case DialectGemini:
		st, err = gemini.DecodeStream(resp)
	case DialectResponses:
		st, err = responses.DecodeStream(resp)
	default:
		st, err = openai.DecodeStream(resp)
	}
	if err != nil {
		t.Fatalf("%s DecodeStream: %v", d, err)
	}
	return st
}

// decodeResponse reads resp with dialect d's decoder of whole answers.
func decodeResponse(d Dialect, resp *http.Response) (*llm.Response, error) {
	switch d {
	case DialectAnthropic:
		return anthropic.DecodeResponse(resp)
	case DialectGemini:
		return gemini.DecodeResponse(resp)
	case DialectResponses:
		return responses.DecodeResponse(resp)
	}
	return openai.DecodeResponse(resp)
}

// errMalformed is dialect d's ErrMalformed.
func errMalformed(d Dialect) error {
	switch d {
	case DialectAnthropic:
		return anthropic.ErrMalformed
	case DialectGemini:
		return gemini.ErrMalformed
	case DialectResponses:
		return responses.ErrMalformed
	}
	return openai.ErrMalformed
}

// drain reads st to its end: the chunks, and the error that ended it (nil
// for io.EOF, the complete end).
func drain(st llm.Stream) ([]llm.Chunk, error) {
	defer st.Close()
	var out []llm.Chunk
	for {
		c, err := st.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
}

// summary is what a drained stream carried.
type summary struct {
	text    string
	deltas  int // chunks with content
	finish  llm.FinishReason
	usage   *llm.Usage // the last one sent
	err     error
	nChunks int
}

func summarize(chunks []llm.Chunk, err error) summary {
	s := summary{err: err, nChunks: len(chunks)}
	var b strings.Builder
	for _, c := range chunks {
		if c.Content != "" {
			s.deltas++
			b.WriteString(c.Content)
		}
		if c.FinishReason != "" {
			s.finish = c.FinishReason
		}
		if c.Usage != nil {
			s.usage = c.Usage
		}
	}
	s.text = b.String()
	return s
}

// replay wraps a captured body as a response with header, for the decoders.
func replay(header http.Header, body []byte) *http.Response {
	return &http.Response{StatusCode: 200, Header: header, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
}

// readFrames reads body until it has k whole events ended by end, and
// returns them; it fails the test after 5 s.
func readFrames(t *testing.T, body io.Reader, end string, k int) []byte {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		var got []byte
		buf := make([]byte, 4096)
		for strings.Count(string(got), end) < k {
			n, err := body.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				done <- result{got, err}
				return
			}
		}
		done <- result{got, nil}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("read %d events: %v after %q", k, r.err, r.b)
		}
		return r.b
	case <-time.After(5 * time.Second):
		t.Fatalf("%d events never came", k)
	}
	return nil
}

// gateClock is a Clock whose sleeps wait for the test: each Sleep sends its
// duration on asked, then returns once release is closed.
type gateClock struct {
	asked   chan time.Duration
	release chan struct{}
}

func newGateClock() *gateClock {
	return &gateClock{asked: make(chan time.Duration, 1000), release: make(chan struct{})}
}

func (c *gateClock) Now() time.Time { return epoch }

func (c *gateClock) Sleep(ctx context.Context, d time.Duration) bool {
	c.asked <- d
	select {
	case <-c.release:
		return true
	case <-ctx.Done():
		return false
	}
}

// isBroken reports a body read that failed rather than ended: a cut,
// reset or ended context, never a clean io.EOF.
func isBroken(err error) bool {
	return err != nil && !errors.Is(err, io.EOF)
}
