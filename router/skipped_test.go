package router_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// One unreadable event mid-stream is left out by the target's decoder: the
// answer is whole but for it, and marked degraded, naming it among what was
// dropped, in the Result and in the ledger; a buffered answer says so when
// Stream returns (its headers are written then).
func TestStream_MalformedEventIsSkippedAndMarksTheAnswerDegraded(t *testing.T) {
	for _, d := range []sim.Dialect{sim.DialectOpenAI, sim.DialectAnthropic, sim.DialectGemini} {
		for _, buffered := range []bool{false, true} {
			name := string(d) + map[bool]string{false: "/streamed", true: "/buffered"}[buffered]
			t.Run(name, func(t *testing.T) {
				h, route := newHarness(t, spec{provider: "p1", model: "m", dialect: d}, spec{provider: "p2", model: "m"})
				route.Buffered = buffered
				h.script("p1", "m", sim.Fault{Kind: sim.StreamMalformedEvent, Chunks: 3})
				res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if buffered && (!res.Degraded || len(res.Dropped) != 1) {
					t.Errorf("buffered answer handed over: degraded %v, dropped %q; want it marked already", res.Degraded, res.Dropped)
				}
				text, err := drain(t, res.Stream)
				if err != nil || text != "Hello from p1/m." || res.Target.ID() != "p1/m" {
					t.Fatalf("%s answered %q, %v; want p1's whole answer", res.Target.ID(), text, err)
				}
				want := []string{"1 malformed event"}
				if !res.Degraded || !cmp.Equal(res.Dropped, want) {
					t.Errorf("Result degraded %v, dropped %q; want true, %q", res.Degraded, res.Dropped, want)
				}
				recs := h.ledger.Records()
				if len(recs) != 1 || recs[0].Status != ledger.StatusOK || !recs[0].Degraded || !cmp.Equal(recs[0].Dropped, want) {
					t.Errorf("ledger %+v; want one ok line, degraded, dropped %q", recs, want)
				}
			})
		}
	}
}

// A whole answer the target read from a stream that left events out
// (llm.Response.Skipped) is degraded the same way.
func TestComplete_AnswerWithSkippedEventsIsDegraded(t *testing.T) {
	mem := &ledger.Memory{}
	r := &router.Router{Ledger: mem}
	route := &router.Route{Name: "r", Chain: []router.Target{{Provider: "p", Model: "m",
		Client: &fixedClient{resp: llm.Response{Message: llm.Message{Content: "Hi"}, Skipped: 2}}}}}
	res, err := r.Complete(context.Background(), route, prompt("hello"), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2 malformed events"}
	if !res.Degraded || !cmp.Equal(res.Dropped, want) {
		t.Errorf("Result degraded %v, dropped %q; want true, %q", res.Degraded, res.Dropped, want)
	}
	if recs := mem.Records(); len(recs) != 1 || !recs[0].Degraded || !cmp.Equal(recs[0].Dropped, want) {
		t.Errorf("ledger %+v; want degraded, dropped %q", recs, want)
	}
}
