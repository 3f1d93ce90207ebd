package router_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

func f(k sim.Kind) sim.Fault { return sim.Fault{Kind: k} }

func rateLimit(wait time.Duration) sim.Fault { return sim.Fault{Kind: sim.RateLimit, RetryAfter: wait} }

// TestRouter_FaultTable runs each row's chain and scripted faults under a fake
// clock and checks the ledger line by line and the outcome. It is long by
// its table, one row per case.
func TestRouter_FaultTable(t *testing.T) {
	a := spec{provider: "alpha", model: "m1", family: "fam"}
	b := spec{provider: "beta", model: "m1", family: "fam"}
	c := spec{provider: "gamma", model: "m2", family: "other"}
	tests := []struct {
		name    string
		chain   []spec
		budget  policy.Budget
		faults  map[string][]sim.Fault // provider -> script for its model
		want    []row
		answer  string // target that answers; "" for an error
		wantErr error
		sleeps  []time.Duration
	}{
		{
			name:   "429 retries the same target after Retry-After, then answers",
			chain:  []spec{a, b},
			faults: map[string][]sim.Fault{"alpha": {rateLimit(2 * time.Second)}},
			want: []row{
				{"alpha/m1", "http_429", "transient", "retry", 2 * time.Second},
				{"alpha/m1", "ok", "", "return", 0},
			},
			answer: "alpha/m1",
			sleeps: []time.Duration{2 * time.Second},
		},
		{
			name:   "429 twice: retries once then moves on",
			chain:  []spec{a, b},
			faults: map[string][]sim.Fault{"alpha": {rateLimit(time.Second), rateLimit(time.Second)}},
			want: []row{
				{"alpha/m1", "http_429", "transient", "retry", time.Second},
				{"alpha/m1", "http_429", "transient", "failover", 0},
				{"beta/m1", "ok", "", "return", 0},
			},
			answer: "beta/m1",
			sleeps: []time.Duration{time.Second},
		},
		{
			name:   "402 moves on at once with no wait",
			chain:  []spec{a, c},
			faults: map[string][]sim.Fault{"alpha": {f(sim.NoCredits)}},
			want: []row{
				{"alpha/m1", "http_402", "wall", "fallback", 0},
				{"gamma/m2", "ok", "", "return", 0},
			},
			answer: "gamma/m2",
		},
		{
			name:   "daily quota 429 is a wall: no wait, no retry",
			chain:  []spec{a, b},
			faults: map[string][]sim.Fault{"alpha": {f(sim.DailyQuota)}},
			want: []row{
				{"alpha/m1", "http_429", "wall", "failover", 0},
				{"beta/m1", "ok", "", "return", 0},
			},
			answer: "beta/m1",
		},
		{
			name:   "503 backs off once, then moves on",
			chain:  []spec{a, b},
			faults: map[string][]sim.Fault{"alpha": {f(sim.Unavailable), f(sim.Unavailable)}},
			want: []row{
				{"alpha/m1", "http_503", "transient", "retry", 500 * time.Millisecond},
				{"alpha/m1", "http_503", "transient", "failover", 0},
				{"beta/m1", "ok", "", "return", 0},
			},
			answer: "beta/m1",
			sleeps: []time.Duration{500 * time.Millisecond},
		},
		{
			name:   "Retry-After past the cap parks and moves on without waiting",
			chain:  []spec{a, b},
			faults: map[string][]sim.Fault{"alpha": {rateLimit(5 * time.Minute)}},
			want: []row{
				{"alpha/m1", "http_429", "wall", "failover", 0},
				{"beta/m1", "ok", "", "return", 0},
			},
			answer: "beta/m1",
		},
		{
			name:   "connection reset before headers is transient",
			chain:  []spec{a, b},
			faults: map[string][]sim.Fault{"alpha": {f(sim.Reset)}},
			want: []row{
				{"alpha/m1", "net_reset", "transient", "retry", 500 * time.Millisecond},
				{"alpha/m1", "ok", "", "return", 0},
			},
			answer: "alpha/m1",
			sleeps: []time.Duration{500 * time.Millisecond},
		},
		{
			name:    "400 invalid fails closed: no other provider is asked",
			chain:   []spec{a, b},
			faults:  map[string][]sim.Fault{"alpha": {f(sim.BadRequest)}},
			want:    []row{{"alpha/m1", "http_400", "invalid", "fail", 0}},
			wantErr: router.ErrFailClosed,
		},
		{
			name:    "policy refusal is never routed around",
			chain:   []spec{a, c},
			faults:  map[string][]sim.Fault{"alpha": {f(sim.ContentFilter)}},
			want:    []row{{"alpha/m1", "http_200", "policy", "fail", 0}},
			wantErr: router.ErrFailClosed,
		},
		{
			name: "context overflow fails closed when every later window is declared no larger",
			chain: []spec{{provider: "alpha", model: "small", context: 8192}, {provider: "beta", model: "same", context: 8192},
				{provider: "gamma", model: "smaller", context: 4096}},
			faults: map[string][]sim.Fault{"alpha": {f(sim.ContextOverflow)}},
			want: []row{{"alpha/small", "http_400", "context_overflow", "fail", 0},
				{"beta/same", "skipped_contract", "", "skip", 0}, {"gamma/smaller", "skipped_contract", "", "skip", 0}},
			wantErr: router.ErrFailClosed,
		},
		{
			name:   "context overflow moves to a candidate that declares no window: it may fit",
			chain:  []spec{a, b},
			faults: map[string][]sim.Fault{"alpha": {f(sim.ContextOverflow)}},
			want: []row{
				{"alpha/m1", "http_400", "context_overflow", "failover", 0},
				{"beta/m1", "ok", "", "return", 0},
			},
			answer: "beta/m1",
		},
		{
			name: "context overflow skips a window no larger and moves to one undeclared",
			chain: []spec{{provider: "alpha", model: "small", context: 8192}, {provider: "beta", model: "same", context: 8192},
				{provider: "gamma", model: "unknown"}},
			faults: map[string][]sim.Fault{"alpha": {f(sim.ContextOverflow)}},
			want: []row{
				{"alpha/small", "http_400", "context_overflow", "fallback", 0},
				{"beta/same", "skipped_contract", "", "skip", 0},
				{"gamma/unknown", "ok", "", "return", 0},
			},
			answer: "gamma/unknown",
		},
		{
			name:   "context overflow moves to a larger context",
			chain:  []spec{{provider: "alpha", model: "small", context: 8192}, {provider: "gamma", model: "big", context: 131072}},
			faults: map[string][]sim.Fault{"alpha": {f(sim.ContextOverflow)}},
			want: []row{
				{"alpha/small", "http_400", "context_overflow", "fallback", 0},
				{"gamma/big", "ok", "", "return", 0},
			},
			answer: "gamma/big",
		},
		{
			name:   "keyless candidate is skipped and recorded, not an error",
			chain:  []spec{{provider: "alpha", model: "m1", noKey: true}, b},
			faults: map[string][]sim.Fault{},
			want: []row{
				{"alpha/m1", "skipped_no_key", "", "skip", 0},
				{"beta/m1", "ok", "", "return", 0},
			},
			answer: "beta/m1",
		},
		{
			name:   "401 is a wall for that key",
			chain:  []spec{a, c},
			faults: map[string][]sim.Fault{"alpha": {f(sim.Unauthorized)}},
			want: []row{
				{"alpha/m1", "http_401", "wall", "fallback", 0},
				{"gamma/m2", "ok", "", "return", 0},
			},
			answer: "gamma/m2",
		},
		{
			name:    "every candidate fails",
			chain:   []spec{a, c},
			faults:  map[string][]sim.Fault{"alpha": {f(sim.NoCredits)}, "gamma": {f(sim.InsufficientQuota)}},
			want:    []row{{"alpha/m1", "http_402", "wall", "fallback", 0}, {"gamma/m2", "http_429", "wall", "fail", 0}},
			wantErr: router.ErrAllFailed,
		},
		{
			name:   "route forbids fallback: a wall on the only family member fails",
			chain:  []spec{a, c},
			budget: policy.Budget{},
			faults: map[string][]sim.Fault{"alpha": {f(sim.NoCredits)}},
			want:   []row{{"alpha/m1", "http_402", "wall", "fail", 0}},
			// set NoFallback below by name
			wantErr: router.ErrAllFailed,
		},
		{
			name:   "attempt budget caps sends whatever the faults",
			chain:  []spec{a, b, c},
			budget: policy.Budget{MaxAttempts: 3},
			faults: map[string][]sim.Fault{"alpha": {f(sim.ServerError), f(sim.ServerError)}, "beta": {f(sim.ServerError), f(sim.ServerError)}},
			want: []row{
				{"alpha/m1", "http_500", "transient", "retry", 500 * time.Millisecond},
				{"alpha/m1", "http_500", "transient", "failover", 0},
				{"beta/m1", "http_500", "transient", "fail", 0},
			},
			wantErr: router.ErrAllFailed,
			sleeps:  []time.Duration{500 * time.Millisecond},
		},
		{
			name:   "batch queues for the earliest reset, then answers",
			chain:  []spec{a},
			budget: policy.Batch(),
			faults: map[string][]sim.Fault{"alpha": {f(sim.DailyQuota)}},
			want: []row{
				{"alpha/m1", "http_429", "wall", "queue", 433 * time.Second},
				{"alpha/m1", "ok", "", "return", 0},
			},
			answer: "alpha/m1",
			sleeps: []time.Duration{433 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, route := newHarness(t, tt.chain...)
			route.Budget = tt.budget
			if tt.name == "route forbids fallback: a wall on the only family member fails" {
				route.NoFallback = true
			}
			for _, s := range tt.chain {
				if fs, ok := tt.faults[s.provider]; ok {
					h.script(s.provider, s.model, fs...)
				}
			}
			res, err := h.router.Complete(context.Background(), route, prompt("hello"), router.Options{})
			if diff := cmp.Diff(tt.want, h.rows()); diff != "" {
				t.Errorf("ledger mismatch (-want +got):\n%s", diff)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			} else {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if got := res.Target.ID(); got != tt.answer {
					t.Errorf("answered by %s, want %s", got, tt.answer)
				}
			}
			if diff := cmp.Diff(tt.sleeps, h.clk.Sleeps()); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
			if sends, got := countSends(h), h.srv.Stats().Total(); sends != got {
				t.Errorf("ledger records %d sends, providers received %d", sends, got)
			}
		})
	}
}

func countSends(h *harness) int {
	n := 0
	for _, r := range h.rows() {
		if r.Action != "skip" {
			n++
		}
	}
	return n
}
