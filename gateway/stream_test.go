package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	sim "github.com/detourhq/detour/simulate"
)

// The answers of the fake providers; p1's cut after the role chunk and
// three pieces reads "Hello from p1" (DESIGN.md rule 8: never followed by
// p2's text).
const (
	p1Answer = "Hello from p1/m."
	p2Answer = "Hello from p2/m."
)

// noSplice checks that text is a strict prefix of p1's answer with nothing
// of p2's.
func noSplice(t *testing.T, text string) {
	t.Helper()
	if text == "" || text == p1Answer || !strings.HasPrefix(p1Answer, text) || strings.Contains(text, "p2") {
		t.Errorf("client text %q: want a strict prefix of %q and nothing of %q", text, p1Answer, p2Answer)
	}
}

func TestStream_CutAfterOutputEndsWithErrorNeverSplices(t *testing.T) {
	cut := []sim.Fault{{Kind: sim.StreamCut, Chunks: 4}}
	t.Run("openai", func(t *testing.T) {
		f := newFixture(t, setup{p1: cut})
		stream := f.openai().Chat.Completions.NewStreaming(ctx(t), userHi())
		var text strings.Builder
		for stream.Next() {
			if cs := stream.Current().Choices; len(cs) > 0 {
				text.WriteString(cs[0].Delta.Content)
			}
		}
		if stream.Err() == nil {
			t.Fatal("the stream ended without error: a cut answer passed as complete")
		}
		noSplice(t, text.String())
		if n := f.sim.Stats().Requests("p2", ""); n != 0 {
			t.Errorf("p2 got %d requests after output started", n)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		f := newFixture(t, setup{p1: cut})
		stream := f.anthropic().Messages.NewStreaming(ctx(t), messageHi())
		var msg anthropic.Message
		for stream.Next() {
			msg.Accumulate(stream.Current()) //nolint:errcheck // the text is checked below
		}
		var apiErr *anthropic.Error
		if !errors.As(stream.Err(), &apiErr) || apiErr.Type() != "overloaded_error" {
			t.Fatalf("stream error %v, want an overloaded_error event", stream.Err())
		}
		if len(msg.Content) != 1 {
			t.Fatalf("content %s", msg.RawJSON())
		}
		noSplice(t, msg.Content[0].Text)
	})
	t.Run("raw", func(t *testing.T) {
		f := newFixture(t, setup{p1: cut})
		resp, body := f.post("/v1/chat/completions", `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 200 || strings.Contains(body, "[DONE]") || !strings.HasSuffix(body, "\n\n") {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
		var last struct {
			Error map[string]any `json:"error"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(events[len(events)-1], "data: ")), &last); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"message", "type", "param", "code"} {
			if _, ok := last.Error[k]; !ok {
				t.Errorf("error event %v lacks %q", last.Error, k)
			}
		}
		recs := f.ledger.Records()
		if len(recs) != 1 || recs[0].Status != "net_truncated" || recs[0].Action != "fail" {
			t.Errorf("ledger %+v", recs)
		}
	})
}

func TestStream_FailureBeforeOutputFailsOverInvisibly(t *testing.T) {
	// p1 sends its role chunk, then dies, twice (the retry too): no output
	// reached the client.
	before := []sim.Fault{{Kind: sim.StreamCut, Chunks: 1}, {Kind: sim.StreamCut, Chunks: 1}}
	t.Run("openai", func(t *testing.T) {
		f := newFixture(t, setup{p1: before})
		stream := f.openai().Chat.Completions.NewStreaming(ctx(t), userHi())
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			if !acc.AddChunk(stream.Current()) {
				t.Fatal("accumulator refused a chunk")
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if c := acc.Choices[0].Message.Content; c != p2Answer {
			t.Errorf("content %q, want one clean answer from p2", c)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		f := newFixture(t, setup{p1: before})
		stream := f.anthropic().Messages.NewStreaming(ctx(t), messageHi())
		var msg anthropic.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil || len(msg.Content) != 1 || msg.Content[0].Text != p2Answer {
			t.Errorf("err %v, message %s", err, msg.RawJSON())
		}
	})
}

func TestStream_KeepAliveBeforeTheFirstToken(t *testing.T) {
	// p1 takes 300 ms before its headers; the keep-alive is 40 ms.
	f := newFixture(t, setup{
		gateway: defaultGateway + "  keepalive: 40ms\n",
		p1:      []sim.Fault{{Kind: sim.SlowFirstToken, Delay: 300 * time.Millisecond}},
	})
	req, _ := http.NewRequest(http.MethodPost, f.ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("headers after %s: want them before the first token", took)
	}
	r := bufio.NewReader(resp.Body)
	first, _ := r.ReadString('\n')
	if first != ": ping\n" {
		t.Errorf("first line %q, want a keep-alive comment", first)
	}
	rest, _ := io.ReadAll(r)
	if !strings.Contains(string(rest), `"content":"Hello"`) || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("stream %q", rest)
	}
	if g := resp.Trailer.Get("X-Detour-Provider"); g != "p1" {
		t.Errorf("trailer x-detour-provider = %q (trailers %v)", g, resp.Trailer)
	}
}

func TestStream_ClientDisconnectCancelsUpstream(t *testing.T) {
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "stream", false: "complete"}[stream]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, setup{p1: sim.Faults(sim.Hang)})
			c, cancel := context.WithCancel(ctx(t))
			done := make(chan struct{})
			go func() {
				defer close(done)
				client := f.openai(option.WithMaxRetries(0))
				if stream {
					s := client.Chat.Completions.NewStreaming(c, userHi())
					for s.Next() {
					}
					return
				}
				client.Chat.Completions.New(c, userHi()) //nolint:errcheck // cancelled on purpose
			}()
			waitFor(t, "the upstream to get the request", func() bool { return f.sim.Stats().Served("p1", "", sim.Hang) == 1 })
			start := time.Now()
			cancel()
			<-done
			waitFor(t, "the upstream to see the cancel", func() bool { return f.upstreamCanceled.Load() == 1 })
			if took := time.Since(start); took > time.Second {
				t.Errorf("the upstream call ended %s after the client left", took)
			}
			waitFor(t, "the ledger's canceled record", func() bool {
				recs := f.ledger.Records()
				return len(recs) == 1 && recs[0].Status == "canceled" && recs[0].Kind == "canceled"
			})
			if n := f.sim.Stats().Requests("p2", ""); n != 0 {
				t.Errorf("the gateway moved on to p2 (%d) for a client that left", n)
			}
			// Not the target's fault: p1 is not parked and answers the next request.
			resp, body := f.post("/v1/chat/completions", chatBody)
			if resp.StatusCode != 200 || resp.Header.Get("X-Detour-Provider") != "p1" {
				t.Errorf("next request: %d %s", resp.StatusCode, body)
			}
			waitFor(t, "the canceled outcome in the log", func() bool { return strings.Contains(f.logs.String(), "outcome=canceled") })
		})
	}
}

func TestStream_RouteLimits(t *testing.T) {
	routes := `  fast:
    chain: [p1/m, p2/m]
    first_token: 150ms
    budget: {max_per_target: 1}
  patient:
    chain: [p1/m, p2/m]
    idle_timeout: 100ms
`
	t.Run("first token deadline moves on before any byte", func(t *testing.T) {
		f := newFixture(t, setup{routes: routes, p1: []sim.Fault{{Kind: sim.SlowFirstToken, Delay: 3 * time.Second}}})
		start := time.Now()
		resp, body := f.post("/v1/chat/completions", `{"model":"fast","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 200 || !strings.Contains(body, `"content":" p2"`) || strings.Contains(body, "p1") ||
			resp.Header.Get("X-Detour-Provider") != "p2" {
			t.Errorf("%d %v %s", resp.StatusCode, resp.Header, body)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("took %s", took)
		}
	})
	t.Run("a stall after output is an error, never a complete answer", func(t *testing.T) {
		f := newFixture(t, setup{routes: routes, tweak: func(p *sim.Provider) { p.Latency.PerChunk = 150 * time.Millisecond }})
		stream := f.anthropic().Messages.NewStreaming(ctx(t), anthropic.MessageNewParams{Model: "patient", MaxTokens: 9,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		var msg anthropic.Message
		for stream.Next() {
			msg.Accumulate(stream.Current()) //nolint:errcheck // checked below
		}
		if stream.Err() == nil || !strings.Contains(stream.Err().Error(), "idle_timeout") {
			t.Errorf("stream error %v, want a stall error event", stream.Err())
		}
		if msg.StopReason != "" {
			t.Errorf("a stalled answer ended with stop reason %q", msg.StopReason)
		}
	})
}

func TestStream_IdleLimitCountsFromTheLastChunk(t *testing.T) {
	// Nine chunks 50 ms apart take longer than the 250 ms idle limit in
	// all: only a limit re-armed at each chunk lets the answer finish.
	f := newFixture(t, setup{routes: `  steady:
    chain: [p1/m, p2/m]
    idle_timeout: 250ms
`, tweak: func(p *sim.Provider) { p.Latency.PerChunk = 50 * time.Millisecond }})
	start := time.Now()
	resp, body := f.post("/v1/chat/completions", `{"model":"steady","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Contains(body, `"error"`) ||
		resp.Header.Get("X-Detour-Provider") != "p1" {
		t.Errorf("%d %v %q", resp.StatusCode, resp.Header, body)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("took %s: the chunks were not spread over more than the idle limit", took)
	}
}

func TestStream_PingsDuringSilences(t *testing.T) {
	f := newFixture(t, setup{gateway: defaultGateway + "  keepalive: 30ms\n",
		tweak: func(p *sim.Provider) { p.Latency.PerChunk = 100 * time.Millisecond }})
	resp, body := f.post("/v1/chat/completions", `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, ": ping\n\n") || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
}

func TestStream_ClientLeavesMidStream(t *testing.T) {
	f := newFixture(t, setup{tweak: func(p *sim.Provider) { p.Latency.PerChunk = 100 * time.Millisecond }})
	c, cancel := context.WithCancel(ctx(t))
	req, _ := http.NewRequestWithContext(c, http.MethodPost, f.ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(resp.Body).ReadString('\n'); !strings.Contains(line, `"role":"assistant"`) {
		t.Fatalf("first line %q", line)
	}
	cancel()
	resp.Body.Close()
	waitFor(t, "the upstream to see the cancel", func() bool { return f.upstreamCanceled.Load() == 1 })
	waitFor(t, "the ledger's canceled record", func() bool {
		recs := f.ledger.Records()
		return len(recs) == 1 && recs[0].Status == "canceled" && recs[0].Kind == "canceled"
	})
	waitFor(t, "the canceled outcome in the log", func() bool { return strings.Contains(f.logs.String(), "outcome=canceled") })
	// A client that went away is no error of the gateway's: INFO.
	if line := f.logLine(resp.Header.Get("X-Request-Id")); !strings.Contains(line, "level=INFO") {
		t.Errorf("log line %q: want INFO", line)
	}
}

// Events the upstream sends apart go out apart: the gateway batches only
// events that are already there, so a lone event is never held back.
func TestStream_LoneEventsAreFlushedAtOnce(t *testing.T) {
	f := newFixture(t, setup{tweak: func(p *sim.Provider) { p.Latency.PerChunk = 100 * time.Millisecond }})
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, f.ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var times []time.Time
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if strings.HasPrefix(line, "data: ") {
			times = append(times, time.Now())
		}
		if err != nil || strings.HasPrefix(line, "data: [DONE]") {
			break
		}
	}
	if len(times) < 4 {
		t.Fatalf("%d events", len(times))
	}
	// The upstream waits 100ms between events: had the gateway held them,
	// they would arrive together.
	if gap := times[len(times)-1].Sub(times[1]); gap < 150*time.Millisecond {
		t.Errorf("events arrived within %s of each other: held back instead of flushed", gap)
	}
}
