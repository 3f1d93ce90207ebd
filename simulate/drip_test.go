package simulate

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// memRig is a rig in memory on the wall clock: inside a synctest bubble,
// the bubble's.
func memRig(t *testing.T, providers ...Provider) *rig {
	t.Helper()
	srv, err := NewServer(providers...)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return &rig{srv: srv, client: &http.Client{Transport: srv.Transport()}}
}

// An EmptyDeltas stream sends its first events, then an event that
// carries nothing every Gap, for as long as the client reads, in every
// dialect: the next content event with its text emptied.
func TestEmptyDeltas_NothingEveryGapUntilTheContextEnds(t *testing.T) {
	// Chunks reach the first content event: OpenAI's role chunk, then
	// "Hello"; Anthropic's message_start, content_block_start and ping
	// before it; Gemini's first chunk is content; the Responses API's
	// opening events (response.created, .in_progress, output_item.added,
	// content_part.added) in one write, then "Hello".
	first := map[Dialect]int{DialectOpenAI: 2, DialectAnthropic: 4, DialectGemini: 1, DialectResponses: 2}
	empty := map[Dialect]string{DialectOpenAI: `"content":""`, DialectAnthropic: `"text":""`, DialectGemini: `"text": ""`,
		DialectResponses: `"delta":""`}
	for _, d := range allDialects {
		t.Run(string(d), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := memRig(t, Provider{Name: "p", Dialect: d,
					Script: []Fault{{Kind: EmptyDeltas, Chunks: first[d], Gap: 2 * time.Second}}})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				resp, err := r.ask(t, ctx, "p", "m", true)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				br := bufio.NewReader(resp.Body)
				frame := func() string {
					t.Helper()
					var b strings.Builder
					for !strings.HasSuffix(b.String(), frameEnd(d)) {
						line, err := br.ReadString('\n')
						if err != nil {
							t.Fatalf("after %q: %v", b.String(), err)
						}
						b.WriteString(line)
					}
					return b.String()
				}
				head := ""
				events := first[d]
				if d == DialectResponses {
					events += 3 // its first write holds four opening events
				}
				for range events {
					head += frame()
				}
				if !strings.Contains(head, "Hello") {
					t.Errorf("the head lacks the first content: %q", head)
				}
				start := time.Now()
				var last string
				for i := range 5 {
					f := frame()
					if !strings.Contains(f, empty[d]) || (last != "" && f != last) {
						t.Fatalf("event %d is %q, want the same event with %s", i, f, empty[d])
					}
					last = f
				}
				if took := time.Since(start); took != 10*time.Second {
					t.Errorf("5 empty events took %s, want 5 gaps of 2s", took)
				}
				cancel()
				if _, err := br.ReadString('\n'); err == nil {
					t.Error("the stream went on after the context ended")
				}
			})
		})
	}
}

// A Trickle sends its body one byte a Gap: a whole answer that takes
// its length in gaps, every dialect alike, streamed or not.
func TestTrickle_OneByteAGap(t *testing.T) {
	for _, d := range allDialects {
		for _, stream := range []bool{false, true} {
			name := string(d) + map[bool]string{false: "/whole", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := memRig(t, Provider{Name: "p", Dialect: d, Script: []Fault{{Kind: Trickle}}})
					resp, err := r.ask(t, context.Background(), "p", "m", stream)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					start := time.Now()
					one := make([]byte, 16)
					if n, err := resp.Body.Read(one); n != 1 || err != nil {
						t.Fatalf("first read: %d bytes, %v; want 1", n, err)
					}
					rest, err := io.ReadAll(resp.Body)
					if err != nil {
						t.Fatal(err)
					}
					n := 1 + len(rest)
					if want := time.Duration(n-1) * DefaultTrickleGap; !stream && time.Since(start) != want {
						t.Errorf("%d bytes took %s, want %s", n, time.Since(start), want)
					}
					if stream && time.Since(start) < time.Duration(n-1)*DefaultTrickleGap {
						t.Errorf("%d bytes took %s, want at least a gap a byte", n, time.Since(start))
					}
					if n < 100 {
						t.Errorf("the answer is %d bytes", n)
					}
				})
			})
		}
	}
}
