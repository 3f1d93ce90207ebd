package router

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/fit"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
)

// stubClient is a client that is never called: the eligibility table
// sends nothing.
type stubClient struct{}

func (stubClient) Complete(context.Context, *llm.Request) (*llm.Response, error) {
	panic("router: stubClient sends nothing")
}

func (stubClient) Stream(context.Context, *llm.Request) (llm.Stream, error) {
	panic("router: stubClient sends nothing")
}

// Every check of eligibility is one check: for a candidate each one
// excludes, admit records the skip eligible names, next never offers it
// to policy as the candidate to move to, and unreached (the walk ended
// before it) records the same skip for the final error. The head (p1/m) has just failed; the candidate after it (b) is
// the only one that could follow. It is long by its table, one row per
// check.
func TestEligible_AdmitNextAndUnreachedAgree(t *testing.T) {
	long := &llm.Request{MaxTokens: 64, Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("lorem ipsum dolor ", 400)}}}
	withTools := &llm.Request{MaxTokens: 64, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		Tools: []llm.Tool{{Name: "f", Parameters: []byte(`{"type":"object"}`)}}}
	tests := []struct {
		name string
		// setup excludes b (or not): it may change the route, the
		// request, b itself, or the walk's state once it exists.
		setup  func(r *Route, b *Target)
		state  func(w *walk, b *Target, clk *clock.Fake)
		req    *llm.Request
		status string // "" for the control: b may be sent to
		reason string // a part of the reason
	}{
		{name: "control: nothing excludes it"},
		{name: "turned off", setup: func(_ *Route, b *Target) { b.Disabled = "providers.p2.disabled" },
			status: ledger.StatusSkippedDisabled, reason: "turned off by providers.p2.disabled"},
		{name: "held back by the caller", setup: func(_ *Route, b *Target) { b.Paced = "the pace of p2: next turn in 3m" },
			status: ledger.StatusSkippedPaced, reason: "next turn in 3m"},
		{name: "no key", setup: func(_ *Route, b *Target) { b.Client, b.KeyEnv = nil, "P2_KEY" },
			status: ledger.StatusSkippedNoKey, reason: "P2_KEY is not set"},
		{name: "the eval gate does not approve it", setup: func(r *Route, _ *Target) {
			r.Approve = func(t *Target) (bool, string) { return t.Provider != "p2", "accuracy 20% is below 80%" }
		}, status: ledger.StatusSkippedUnapproved, reason: "routes.test.eval_gate: accuracy 20%"},
		{name: "the same target had its turn", setup: func(_ *Route, b *Target) { b.Provider = "p1" },
			status: ledger.StatusSkippedTried, reason: "already had its turn"},
		{name: "a failure reached its account", state: func(w *walk, b *Target, _ *clock.Fake) {
			w.chain.reach(b.AccountKey(), "402 no credits")
		}, status: ledger.StatusSkippedAccount, reason: "account p2 failed in this request: 402 no credits"},
		{name: "a failure reached its endpoint", state: func(w *walk, b *Target, _ *clock.Fake) {
			w.chain.reach(b.EndpointKey(), "connection refused")
		}, status: ledger.StatusSkippedEndpoint, reason: "failed in this request: connection refused"},
		{name: "it cannot honour the request", setup: func(_ *Route, b *Target) { b.Offers = []string{"images"} },
			req: withTools, status: ledger.StatusSkippedContract, reason: "cannot honour tools"},
		{name: "the request does not fit it even adapted", setup: func(r *Route, b *Target) {
			r.Adapt, b.Context = &fit.Adaptation{KeepLastTurns: 2}, 100
		}, req: long, status: ledger.StatusSkippedContract, reason: "even adapted by routes.test.adapt"},
		{name: "a daily ceiling", setup: func(r *Route, _ *Target) { r.DailyCost = 1e-9 },
			status: ledger.StatusSkippedCost, reason: "the daily ceiling of route:test"},
		{name: "the extra-cost ceiling", setup: func(r *Route, _ *Target) { r.Budget.MaxExtraCost = 1e-9 },
			status: ledger.StatusSkippedCost, reason: "extra-cost ceiling"},
		{name: "parked", state: func(w *walk, b *Target, clk *clock.Fake) {
			w.r.health().Park(b.ID(), clk.Now().Add(10*time.Minute), "429 rate limited", clk.Now())
		}, status: ledger.StatusSkippedParked, reason: "parked until 12:10:00 UTC (429 rate limited)"},
		{name: "its account parked", state: func(w *walk, b *Target, clk *clock.Fake) {
			w.r.health().Park(b.AccountKey(), clk.Now().Add(time.Hour), "402 no credits", clk.Now())
		}, status: ledger.StatusSkippedParked, reason: "account p2 parked until"},
		{name: "another caller's probe is out", state: func(w *walk, b *Target, clk *clock.Fake) {
			hb := w.r.health()
			hb.Park(b.ID(), clk.Now().Add(time.Second), "503", clk.Now())
			clk.Advance(2 * time.Second)
			if p, err := hb.Allow(b.ID(), clk.Now()); err != nil || !p.Probe {
				t.Fatalf("Allow = %+v, %v: want the probe", p, err)
			}
		}, status: ledger.StatusSkippedParked, reason: "probe in flight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			route := &Route{Name: "test", Chain: []Target{
				{Provider: "p1", Model: "m", Client: stubClient{}},
				{Provider: "p2", Model: "m", Client: stubClient{}, PriceIn: 100, PriceOut: 100},
			}}
			if tt.setup != nil {
				tt.setup(route, &route.Chain[1])
			}
			clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
			mem := &ledger.Memory{}
			r := &Router{Ledger: mem, Clock: clk, Health: health.New(health.Settings{})}
			w, err := r.newWalk(route, Options{}, &plainSender{})
			if err != nil {
				t.Fatal(err)
			}
			w.ask.req = tt.req
			if w.ask.req == nil {
				w.ask.req = &llm.Request{MaxTokens: 64, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
			}
			head, b := w.chain.cands[0], w.chain.cands[1]
			w.chain.state(head).tried = true // the head had its turn and failed
			if tt.state != nil {
				tt.state(w, b, clk)
			}

			v := w.eligible(b, clk.Now(), false)
			if v.status != tt.status || !strings.Contains(v.reason, tt.reason) {
				t.Fatalf("eligible = %q %q, want %q with %q", v.status, v.reason, tt.status, tt.reason)
			}
			if n := w.next(0, head); n.Exists != (tt.status == "") {
				t.Errorf("next offers policy a candidate: %v; eligible says %q", n.Exists, v.status)
			}
			// The walk ends before b: the error names the skip eligible
			// says, and the ledger has its line.
			if cd := w.unreached(b, 1, clk.Now()); cd.Status != tt.status || tt.status != "" && cd.Reason != v.reason {
				t.Errorf("unreached = %q %q, eligible says %q %q", cd.Status, cd.Reason, v.status, v.reason)
			}
			if recs := mem.Records(); len(recs) != 0 && (tt.status == "" || len(recs) != 1 || recs[0].Status != v.status ||
				recs[0].Reason != v.reason || recs[0].Hop != 1) || len(recs) == 0 && tt.status != "" {
				t.Errorf("unreached recorded %+v, eligible says %q %q at hop 1", recs, v.status, v.reason)
			}
			mem = &ledger.Memory{}
			r.Ledger = mem
			if _, skip := w.admit(b, false); skip != (tt.status != "") {
				t.Fatalf("admit skips: %v; eligible says %q", skip, v.status)
			}
			recs := mem.Records()
			if tt.status == "" {
				if len(recs) != 0 {
					t.Fatalf("admit recorded %+v for a candidate it let through", recs)
				}
				return
			}
			if len(recs) != 1 || recs[0].Status != v.status || recs[0].Reason != v.reason || recs[0].Action != "skip" {
				t.Fatalf("admit recorded %+v, eligible says %q %q", recs, v.status, v.reason)
			}
		})
	}
}
