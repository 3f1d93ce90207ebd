package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConn_ResetIsATransportErrorWrappingECONNRESET(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Script: Faults(Reset)})
		for _, stream := range []bool{false, true} {
			r.srv.Enqueue("p", "", Fault{Kind: Reset})
			resp, err := r.post(t, context.Background(), "p", chatBody("m", stream))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("stream=%v: got a %d response, want a transport error", stream, resp.StatusCode)
			}
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("stream=%v: error %v does not wrap ECONNRESET", stream, err)
			}
			var op *net.OpError
			if !errors.As(err, &op) {
				t.Errorf("stream=%v: error %v is not a *net.OpError", stream, err)
			}
		}
		// The script's own Reset is still queued: one more request resets, the next answers.
		if _, err := r.post(t, context.Background(), "p", chatBody("m", false)); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("third request: %v", err)
		}
		resp, _ := r.mustPost(t, "p", chatBody("m", false))
		if resp.StatusCode != 200 {
			t.Errorf("after the resets: status %d", resp.StatusCode)
		}
		if n := r.srv.Stats().Served("p", "m", Reset); n != 3 {
			t.Errorf("resets served %d, want 3", n)
		}
	})
}

func TestConn_StreamCutFailsTheBodyRead(t *testing.T) {
	for _, chunks := range []int{0, 2, 99} {
		forEachWay(t, func(t *testing.T, way string) {
			r := newRig(t, way, Provider{Name: "p", Script: []Fault{{Kind: StreamCut, Chunks: chunks}}})
			resp, err := r.post(t, context.Background(), "p", chatBody("m", true))
			if err != nil {
				t.Fatalf("chunks=%d: %v", chunks, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			events, err := readEvents(resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("chunks=%d: read error %v, want io.ErrUnexpectedEOF (not a clean end)", chunks, err)
			}
			want := min(chunks, 6) // role chunk + 5 content chunks; never the finish chunk
			if len(events) != want {
				t.Errorf("chunks=%d: %d events before the cut, want %d", chunks, len(events), want)
			}
			for _, ev := range events {
				if ev == "[DONE]" || strings.Contains(ev, "finish_reason\":\"stop") {
					t.Errorf("cut stream carried its end: %s", ev)
				}
			}
		})
	}
}

func TestConn_StreamCutOfAPlainAnswerTruncatesTheBody(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Script: Faults(StreamCut)})
		resp, err := r.post(t, context.Background(), "p", chatBody("m", false))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("read error %v, want io.ErrUnexpectedEOF", err)
		}
		if resp.ContentLength <= int64(len(b)) || len(b) == 0 {
			t.Errorf("Content-Length %d, read %d bytes", resp.ContentLength, len(b))
		}
	})
}

func TestConn_StreamErrorSendsAnErrorFrame(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Script: []Fault{
			{Kind: StreamError, Chunks: 2},
			{Kind: StreamError, Body: `{"error":{"message":"overloaded","code":502}}`},
		}})
		_, raw := r.mustPost(t, "p", chatBody("m", true))
		events := sseEvents(t, raw)
		if len(events) != 3 {
			t.Fatalf("events:\n%s", strings.Join(events, "\n"))
		}
		var frame struct {
			Error *struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(events[2]), &frame); err != nil || frame.Error == nil {
			t.Fatalf("frame %s: %v", events[2], err)
		}
		if frame.Error.Type != "server_error" || !strings.Contains(frame.Error.Message, "The server had an error processing your request.") {
			t.Errorf("frame %s", events[2])
		}
		for _, ev := range events[:2] {
			if strings.Contains(ev, `"error"`) {
				t.Errorf("a normal chunk has an error key: %s", ev)
			}
		}
		_, raw = r.mustPost(t, "p", chatBody("m", true))
		if diff := cmp.Diff([]string{`{"error":{"message":"overloaded","code":502}}`}, sseEvents(t, raw)); diff != "" {
			t.Errorf("custom frame (-want +got):\n%s", diff)
		}
	})
}

func TestConn_HangReturnsWhenTheContextEnds(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Script: Faults(Hang, Hang)})
		for _, stream := range []bool{false, true} {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			start := time.Now()
			resp, err := r.post(t, ctx, "p", chatBody("m", stream))
			cancel()
			if err == nil {
				resp.Body.Close()
				t.Fatalf("got a %d response from a hung provider", resp.StatusCode)
			}
			if !isTimeout(err) {
				t.Errorf("error %v, want the context's deadline", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		}
		resp, _ := r.mustPost(t, "p", chatBody("m", false))
		if resp.StatusCode != 200 {
			t.Errorf("after the hangs: %d", resp.StatusCode)
		}
	})
}

func TestConn_CloseEndsAHangingRequest(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Script: Faults(Hang)})
		errc := make(chan error, 1)
		go func() {
			resp, err := r.post(t, context.Background(), "p", chatBody("m", false))
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			errc <- err
		}()
		for r.srv.Stats().Total() == 0 {
			time.Sleep(time.Millisecond)
		}
		done := make(chan struct{})
		go func() { r.srv.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Close blocked on a hanging request")
		}
		select {
		case <-errc:
		case <-time.After(5 * time.Second):
			t.Fatal("the client never returned")
		}
	})
}

func TestConn_SlowFirstTokenWaitsOnTheClock(t *testing.T) {
	forEachWay(t, func(t *testing.T, way string) {
		r := newRig(t, way, Provider{Name: "p", Latency: Latency{FirstToken: 300 * time.Millisecond},
			Script: []Fault{{Kind: SlowFirstToken, Delay: 45 * time.Second}}})
		r.srv.LatencyScale = 0.5
		start := time.Now()
		resp, _ := r.mustPost(t, "p", chatBody("m", true))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("a fake-clock delay took %v of real time", d)
		}
		// The fault's delay is not scaled; the provider's latency is.
		if diff := cmp.Diff([]time.Duration{45 * time.Second, 150 * time.Millisecond}, r.clock.Sleeps()); diff != "" {
			t.Errorf("sleeps (-want +got):\n%s", diff)
		}
	})
}

func TestConn_LatencyScale(t *testing.T) {
	lat := Latency{Error: 130 * time.Millisecond, FirstToken: 400 * time.Millisecond, PerChunk: 20 * time.Millisecond}
	cases := []struct {
		scale float64
		want  []time.Duration
	}{
		{0, []time.Duration{130 * time.Millisecond, 400 * time.Millisecond, 20 * time.Millisecond}},
		{0.1, []time.Duration{13 * time.Millisecond, 40 * time.Millisecond, 2 * time.Millisecond}},
		{-1, nil},
	}
	for _, c := range cases {
		r := newRig(t, "memory", Provider{Name: "p", Latency: lat, Script: Faults(RateLimit)})
		r.srv.LatencyScale = c.scale
		r.mustPost(t, "p", chatBody("m", false)) // 429: Error latency
		r.mustPost(t, "p", chatBody("m", true))  // stream: FirstToken, then PerChunk between events
		got := r.clock.Sleeps()
		if len(got) > 3 {
			got = got[:3]
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("scale %v: first sleeps (-want +got):\n%s", c.scale, diff)
		}
	}
}
