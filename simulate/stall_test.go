package simulate

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// readResult is the end of a body read in the background.
type readResult struct {
	b   []byte
	err error
}

// readRest reads what is left of body in the background.
func readRest(body io.Reader) <-chan readResult {
	c := make(chan readResult, 1)
	go func() {
		b, err := io.ReadAll(body)
		c <- readResult{b, err}
	}()
	return c
}

func TestStreamStall_SilentUntilTheContextEnds(t *testing.T) {
	for _, d := range allDialects {
		t.Run(string(d), func(t *testing.T) {
			forEachWay(t, func(t *testing.T, way string) {
				r := newRig(t, way, Provider{Name: "p", Dialect: d,
					Script: []Fault{{Kind: StreamStall, Chunks: 2}, {Kind: StreamStall, Chunks: 2}}})
				for _, stream := range []bool{true, false} {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					resp, err := r.ask(t, ctx, "p", "m", stream)
					if err != nil {
						t.Fatalf("stream=%v: %v", stream, err)
					}
					defer resp.Body.Close()
					if resp.StatusCode != 200 {
						t.Fatalf("stream=%v: status %d", stream, resp.StatusCode)
					}
					if stream {
						events := 2
						if d == DialectResponses {
							events = 5 // the four opening events go in one write, then "Hello"
						}
						got := readFrames(t, resp.Body, frameEnd(d), events)
						if n := strings.Count(string(got), frameEnd(d)); n != events || !strings.HasSuffix(string(got), frameEnd(d)) {
							t.Errorf("sent before the stall: %q", got)
						}
					} else {
						// The whole body's Content-Length, half of it sent.
						half := make([]byte, resp.ContentLength/2)
						if resp.ContentLength < 100 {
							t.Fatalf("Content-Length %d", resp.ContentLength)
						}
						if _, err := io.ReadFull(resp.Body, half); err != nil {
							t.Fatalf("first half: %v", err)
						}
					}
					rest := readRest(resp.Body)
					select {
					case res := <-rest:
						t.Fatalf("stream=%v: the stall ended by itself: %q, %v", stream, res.b, res.err)
					case <-time.After(100 * time.Millisecond):
					}
					cancel()
					select {
					case res := <-rest:
						if !isBroken(res.err) || len(res.b) != 0 {
							t.Errorf("stream=%v: after the context ended: %q, %v; want nothing more and a failed read", stream, res.b, res.err)
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("stream=%v: the read outlived the context", stream)
					}
				}
				if n := r.srv.Stats().Served("p", "m", StreamStall); n != 2 {
					t.Errorf("stalls served %d, want 2", n)
				}
			})
		})
	}
}

func TestStreamStall_CloseBreaksTheStream(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Script: []Fault{{Kind: StreamStall, Chunks: 1}}})
		resp, err := r.ask(t, context.Background(), "p", "m", true)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		readFrames(t, resp.Body, "\n\n", 1)
		rest := readRest(resp.Body)
		closed := make(chan struct{})
		go func() { r.srv.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("Close blocked on a stalled stream")
		}
		select {
		case res := <-rest:
			if !isBroken(res.err) {
				t.Errorf("after Close: %q, %v; want a broken stream, not a clean end", res.b, res.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the client never returned")
		}
	})
}
