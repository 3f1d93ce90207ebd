package router_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// drain reads a stream to its end and returns its text and final error
// (nil for a clean io.EOF).
func drain(t *testing.T, s llm.Stream) (string, error) {
	t.Helper()
	defer s.Close()
	var b strings.Builder
	for {
		c, err := s.Next()
		if err == io.EOF {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		b.WriteString(c.Content)
	}
}

func streamPrompt() *llm.Request {
	r := prompt("stream please")
	r.Stream = true
	return r
}

// Rule 8, before the first byte: a failure fails over invisibly.
func TestStream_FailureBeforeFirstByteFailsOverInvisibly(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	h.script("p1", "m", f(sim.NoCredits))
	res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text, err := drain(t, res.Stream)
	if err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if res.Target.ID() != "p2/m" || !strings.Contains(text, "p2/m") || strings.Contains(text, "p1/m") {
		t.Fatalf("target %s text %q, want only p2's answer", res.Target.ID(), text)
	}
	rows := h.rows()
	if len(rows) != 2 || rows[0].Status != "http_402" || rows[1].Status != "ok" {
		t.Fatalf("ledger = %+v", rows)
	}
}

// An error frame that arrives before any output is still before the first
// byte: it fails over.
func TestStream_ErrorFrameBeforeOutputFailsOver(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	h.script("p1", "m", sim.Fault{Kind: sim.StreamError, Chunks: 1}, sim.Fault{Kind: sim.StreamError, Chunks: 1})
	res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text, err := drain(t, res.Stream)
	if err != nil || !strings.Contains(text, "p2/m") {
		t.Fatalf("text %q err %v, want p2's whole answer", text, err)
	}
}

// Rule 8, after the first byte: a cut ends the stream with an error and no
// second model's text is spliced on.
func TestStream_CutAfterOutputIsAnErrorNeverSpliced(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	h.script("p1", "m", sim.Fault{Kind: sim.StreamCut, Chunks: 3})
	res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text, err := drain(t, res.Stream)
	if !errors.Is(err, llm.ErrStreamTruncated) {
		t.Fatalf("err = %v, want ErrStreamTruncated", err)
	}
	if text == "" || strings.Contains(text, "p2") {
		t.Fatalf("text %q: want p1's partial output only", text)
	}
	if n := h.srv.Stats().Requests("p2", ""); n != 0 {
		t.Fatalf("p2 got %d requests after output started", n)
	}
	rows := h.rows()
	last := rows[len(rows)-1]
	if last.Target != "p1/m" || last.Status != "net_truncated" || last.Action != string(policy.Fail) {
		t.Fatalf("last record = %+v, want p1 net_truncated fail", last)
	}
}

// A buffered route holds the stream until complete, so a cut mid-answer
// still fails over invisibly.
func TestStream_BufferedCutFailsOverInvisibly(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	route.Buffered = true
	route.Budget = policy.Budget{MaxPerTarget: 1}
	h.script("p1", "m", sim.Fault{Kind: sim.StreamCut, Chunks: 3})
	res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text, err := drain(t, res.Stream)
	if err != nil || !strings.Contains(text, "p2/m") || strings.Contains(text, "p1") {
		t.Fatalf("text %q err %v, want only p2's whole answer", text, err)
	}
	rows := h.rows()
	if len(rows) != 2 || rows[0].Status != "net_truncated" || rows[0].Action != "failover" || rows[1].Status != "ok" {
		t.Fatalf("ledger = %+v", rows)
	}
}

// A target that sends nothing within the route's first-token limit is left
// before any byte reaches the caller.
func TestStream_FirstTokenDeadlineMovesOn(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	route.FirstToken = 30 * time.Millisecond
	route.Budget = policy.Budget{MaxPerTarget: 1}
	h.script("p1", "m", f(sim.Hang))
	res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text, err := drain(t, res.Stream)
	if err != nil || !strings.Contains(text, "p2/m") {
		t.Fatalf("text %q err %v", text, err)
	}
	rows := h.rows()
	if rows[0].Target != "p1/m" || rows[0].Status != "first_token_timeout" || rows[0].Kind != "transient" {
		t.Fatalf("first record = %+v, want p1 first_token_timeout transient", rows[0])
	}
}

// Closing a stream early records a cancel, which never opens the target.
func TestStream_CallerCloseIsNotTheTargetsFault(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"})
	for range 5 {
		res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res.Stream.Close()
	}
	for _, r := range h.rows() {
		if r.Status != "canceled" {
			t.Fatalf("record %+v, want canceled", r)
		}
	}
	if st, _ := h.health.State("p1/m", h.clk.Now()); st != "closed" {
		t.Fatalf("health = %s after caller closes, want closed", st)
	}
}

// A complete stream records ok with its usage once it ends.
func TestStream_CompleteRecordsUsage(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"})
	res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.ledger.Records()) != 0 {
		t.Fatal("record written before the stream ended")
	}
	if _, err := drain(t, res.Stream); err != nil {
		t.Fatal(err)
	}
	recs := h.ledger.Records()
	if len(recs) != 1 || recs[0].Status != "ok" || recs[0].TokensOut == 0 || recs[0].TokensIn == 0 {
		t.Fatalf("records = %+v, want one ok with usage", recs)
	}
}

// A buffered route holds no more than MaxBuffer: past it the stream sends
// what it holds and streams the rest, so memory stays bounded, and a cut
// after that point is the caller's error (the answer already flowed), not
// an invisible failover.
func TestStream_BufferedPastMaxBufferStreamsOn(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	route.Buffered = true
	route.MaxBuffer = 8 // bytes: the second content chunk passes it
	route.Budget = policy.Budget{MaxPerTarget: 1}
	h.script("p1", "m", sim.Fault{Kind: sim.StreamCut, Chunks: 3})
	res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text, err := drain(t, res.Stream)
	if !errors.Is(err, llm.ErrStreamTruncated) || text == "" || strings.Contains(text, "p2") {
		t.Fatalf("text %q err %v: want p1's partial answer cut, past max_buffer", text, err)
	}
	if n := h.srv.Stats().Requests("p2", ""); n != 0 {
		t.Fatalf("p2 got %d requests: the stream had flowed", n)
	}
}

// over_buffer: fail_over drops a buffered answer that passes MaxBuffer
// before any of it reaches the caller, records max_buffer, and lets the
// next candidate answer in full.
func TestStream_BufferedPastMaxBufferFailsOverWhenAsked(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	route.Buffered = true
	route.MaxBuffer = 8 << 10 // p1's 2,000 pieces pass it; p2's short answer does not
	route.FailOverPastBuffer = true
	h.script("p1", "m", sim.Fault{Kind: sim.OK, Pieces: 2000})
	res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text, err := drain(t, res.Stream)
	if err != nil || !strings.Contains(text, "p2/m") || strings.Contains(text, "p1") {
		t.Fatalf("text %q err %v, want only p2's whole answer", text, err)
	}
	rows := h.rows()
	if len(rows) != 2 || rows[0].Status != "max_buffer" || rows[0].Kind != "transient" || rows[0].Action != "failover" ||
		rows[1].Status != "ok" {
		t.Fatalf("ledger = %+v, want p1 max_buffer failing over at once, then p2 ok", rows)
	}
	if r := h.ledger.Records()[0].Reason; !strings.Contains(r, "max_buffer") {
		t.Fatalf("reason %q does not name max_buffer", r)
	}
	if n := h.srv.Stats().Requests("p1", ""); n != 1 {
		t.Fatalf("p1 got %d requests, want 1: a runaway answer is not asked for again", n)
	}
}
