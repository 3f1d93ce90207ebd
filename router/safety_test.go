package router_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/fit"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// srow is one ledger line as the safety table asserts it: target, status,
// action and a word its reason must hold.
type srow struct {
	Target, Status, Action, Reason string
}

// TestSafety_FaultTable is the safety issue's fault-injection table: one
// request per row, each with exactly one expected outcome and its ledger
// lines. Rows that need a tool runner or a live gateway have their own
// tests: a tool started then a timeout (toolrun: no replay, reconcile
// called), a config reload mid-stream (gateway/admin_test.go). It is long
// by its table, one row per case.
func TestSafety_FaultTable(t *testing.T) {
	p1 := spec{provider: "p1", model: "m", family: "fam"}
	p2 := spec{provider: "p2", model: "m", family: "fam"}
	p3 := spec{provider: "p3", model: "m", family: "fam"}
	small := spec{provider: "p2", model: "small", family: "other", context: 100}
	mid := spec{provider: "p2", model: "mid", family: "other", context: 600}
	long := strings.Repeat("a long history that fills the window. ", 200) // about 1,900 tokens
	tests := []struct {
		name    string
		chain   []spec
		setup   func(h *harness, r *router.Route)
		prompt  string
		req     *llm.Request // instead of prompt
		opts    router.Options
		want    []srow
		answer  string // the target that answers; "" for an error
		wantErr error
		errText string // what the error must say
		dropped string // what the answer's Dropped must hold
	}{
		{
			name: "unknown commit state on a non-idempotent request fails closed", chain: []spec{p1, p2},
			setup: func(h *harness, r *router.Route) {
				r.HeaderTimeout = 30 * time.Millisecond
				h.script("p1", "m", f(sim.Hang))
			},
			opts:    router.Options{NonIdempotent: true},
			want:    []srow{{"p1/m", "header_timeout", "fail", "header_timeout"}},
			wantErr: router.ErrAllFailed,
		},
		{
			name: "a long Retry-After on the primary with a healthy fallback: fall over, not queue", chain: []spec{p1, p2},
			setup: func(h *harness, r *router.Route) {
				h.script("p1", "m", sim.Fault{Kind: sim.RateLimit, RetryAfter: 10 * time.Minute})
			},
			want:   []srow{{"p1/m", "http_429", "failover", "429"}, {"p2/m", "ok", "return", ""}},
			answer: "p2/m",
		},
		{
			name: "a context too long for the fallback, no adaptation: skipped, named", chain: []spec{p1, small},
			setup: func(h *harness, r *router.Route) {
				h.script("p1", "m", sim.Fault{Kind: sim.ServerError}, sim.Fault{Kind: sim.ServerError})
				r.Budget = policy.Budget{MaxPerTarget: 1}
			},
			prompt: long,
			want: []srow{{"p1/m", "http_500", "fail", "500"},
				{"p2/small", "skipped_contract", "skip", "about 1681 input tokens (its context is 100"}},
			wantErr: router.ErrAllFailed, errText: "p2/small: cannot honour about 1681 input tokens (its context is 100; routes.test.adapt would shorten",
		},
		{
			name: "a history too long for the fallback, adaptation declared: the fallback gets the last turns", chain: []spec{p1, mid},
			setup: func(h *harness, r *router.Route) {
				h.script("p1", "m", sim.Fault{Kind: sim.ServerError})
				r.Budget = policy.Budget{MaxPerTarget: 1}
				r.Adapt = &fit.Adaptation{KeepLastTurns: 2}
			},
			req:    history(12),
			want:   []srow{{"p1/m", "http_500", "fallback", "500"}, {"p2/mid", "ok", "return", ""}},
			answer: "p2/mid",
		},
		{
			name: "a request too long for the fallback even adapted: skipped, named", chain: []spec{p1, small},
			setup: func(h *harness, r *router.Route) {
				h.script("p1", "m", sim.Fault{Kind: sim.ServerError})
				r.Budget = policy.Budget{MaxPerTarget: 1}
				r.Adapt = &fit.Adaptation{KeepLastTurns: 2}
			},
			prompt: long,
			want: []srow{{"p1/m", "http_500", "fail", "500"},
				{"p2/small", "skipped_contract", "skip", "even adapted by routes.test.adapt"}},
			wantErr: router.ErrAllFailed, errText: "p2/small: cannot honour about 1681 input tokens even adapted by routes.test.adapt (its context is 100)",
		},
		{
			name: "a fallback over the extra-cost ceiling is skipped; a cheaper one answers", chain: []spec{p1, p2, p3},
			setup: func(h *harness, r *router.Route) {
				r.Chain[1].PriceIn, r.Chain[1].PriceOut = 1000, 1000
				r.Budget = policy.Budget{MaxExtraCost: 0.001, MaxPerTarget: 1}
				h.script("p1", "m", sim.Fault{Kind: sim.ServerError})
			},
			want: []srow{{"p1/m", "http_500", "failover", "500"}, {"p2/m", "skipped_cost", "skip", "extra-cost ceiling"},
				{"p3/m", "ok", "return", ""}},
			answer: "p3/m",
		},
		{
			name: "a fallback over the extra-cost ceiling, lower_max_tokens: it answers with fewer tokens, degraded", chain: []spec{p1, p2},
			setup: func(h *harness, r *router.Route) {
				r.Chain[1].PriceIn, r.Chain[1].PriceOut = 1000, 1000 // 64 tokens out cost $0.064
				r.Budget = policy.Budget{MaxExtraCost: 0.040, MaxPerTarget: 1}
				r.LowerMaxTokens = true
				h.script("p1", "m", sim.Fault{Kind: sim.ServerError})
			},
			want:    []srow{{"p1/m", "http_500", "failover", "500"}, {"p2/m", "ok", "return", ""}},
			answer:  "p2/m",
			dropped: "max_tokens lowered to 3",
		},
		{
			name: "the daily ceiling reached: the priced target is skipped", chain: []spec{p1, p2},
			setup: func(h *harness, r *router.Route) {
				r.Chain[0].PriceIn, r.Chain[0].PriceOut = 1000, 1000
				r.DailyCost = 0.01 // below one send's worst case
			},
			want:   []srow{{"p1/m", "skipped_cost", "skip", "daily ceiling"}, {"p2/m", "ok", "return", ""}},
			answer: "p2/m",
		},
		{
			name: "the chain exhausted with a static answer", chain: []spec{p1},
			setup: func(h *harness, r *router.Route) {
				r.StaticAnswer, r.Budget = "busy, try later", policy.Budget{MaxPerTarget: 1}
				h.script("p1", "m", sim.Fault{Kind: sim.ServerError})
			},
			want:   []srow{{"p1/m", "http_500", "fail", "500"}, {"detour/static", "last_resort", "static", "static answer"}},
			answer: "detour/static",
		},
		{
			name: "the chain exhausted with a kept answer", chain: []spec{p1},
			setup: func(h *harness, r *router.Route) {
				r.CacheAnswers, r.Budget = time.Hour, policy.Budget{MaxPerTarget: 1}
				if _, err := h.router.Complete(context.Background(), r, prompt("hi"), router.Options{}); err != nil {
					t.Fatal(err)
				}
				h.newLedger()
				h.script("p1", "m", sim.Fault{Kind: sim.ServerError})
			},
			want:   []srow{{"p1/m", "http_500", "fail", "500"}, {"detour/cache", "last_resort", "static", "p1/m gave"}},
			answer: "detour/cache",
		},
		{
			name: "a disabled target is skipped", chain: []spec{p1, p2},
			setup:  func(h *harness, r *router.Route) { r.Chain[0].Disabled = "targets.p1/m.disabled" },
			want:   []srow{{"p1/m", "skipped_disabled", "skip", "targets.p1/m.disabled"}, {"p2/m", "ok", "return", ""}},
			answer: "p2/m",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, route := newHarness(t, tt.chain...)
			if tt.setup != nil {
				tt.setup(h, route)
			}
			text := tt.prompt
			if text == "" {
				text = "hi"
			}
			req := prompt(text)
			if tt.req != nil {
				req = tt.req
			}
			res, err := h.router.Complete(context.Background(), route, req, tt.opts)
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			case tt.wantErr == nil && err != nil:
				t.Fatal(err)
			case tt.answer != "" && res.Target.ID() != tt.answer:
				t.Fatalf("answered by %s, want %s", res.Target.ID(), tt.answer)
			case tt.errText != "" && !strings.Contains(err.Error(), tt.errText):
				t.Fatalf("error %q does not say %q", err, tt.errText)
			case tt.req != nil && res != nil && (!res.Degraded || !slices.Contains(res.Dropped, "context adapted")):
				t.Fatalf("an adapted answer: degraded %v, dropped %q", res.Degraded, res.Dropped)
			case tt.dropped != "" && (!res.Degraded || !strings.Contains(strings.Join(res.Dropped, "; "), tt.dropped)):
				t.Fatalf("answer degraded %v, dropped %q: want %q", res.Degraded, res.Dropped, tt.dropped)
			}
			var got []srow
			for _, r := range h.ledger.Records() {
				row := srow{r.Provider + "/" + r.Model, r.Status, r.Action, ""}
				got = append(got, row)
			}
			recs := h.ledger.Records()
			for i, w := range tt.want {
				if i < len(recs) && !strings.Contains(recs[i].Reason, w.Reason) {
					t.Errorf("line %d reason %q lacks %q", i, recs[i].Reason, w.Reason)
				}
			}
			want := make([]srow, len(tt.want))
			for i, w := range tt.want {
				want[i] = srow{w.Target, w.Status, w.Action, ""}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("ledger (-want +got):\n%s", d)
			}
		})
	}
}

// history is a conversation of n turns, each about 90 tokens, ending in a
// short question: too long for a 600-token window, its last turns not.
func history(n int) *llm.Request {
	req := &llm.Request{MaxTokens: 64, Messages: []llm.Message{{Role: llm.RoleSystem, Content: "You are terse."}}}
	turn := strings.Repeat("some earlier detail worth a few tokens. ", 10)
	for i := range n {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("turn %d: %s", i, turn)},
			llm.Message{Role: llm.RoleAssistant, Content: "noted"})
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: "so what now?"})
	return req
}
