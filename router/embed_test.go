package router_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// TestRouter_EmbedFaultTable runs embeddings requests down each row's
// chain under a fake clock: the same classification, retries and ledger as
// Complete, and vectors that never mix models: a target of another model
// family than the first candidate is skipped, never sent to. It is long
// by its table, one row per case.
func TestRouter_EmbedFaultTable(t *testing.T) {
	a := spec{provider: "alpha", model: "emb-small", family: "emb"}
	a2 := spec{provider: "alpha", model: "emb-small-v2", family: "emb"}
	b := spec{provider: "beta", model: "emb-small", family: "emb"}
	c := spec{provider: "gamma", model: "other-emb", family: "other"}
	an := spec{provider: "claude", model: "emb-small", family: "emb", dialect: sim.DialectAnthropic}
	g := spec{provider: "google", model: "emb-small", family: "emb", dialect: sim.DialectGemini}
	tests := []struct {
		name      string
		chain     []spec
		faults    map[string][]sim.Fault // "provider/model" -> script
		want      []row
		answer    string // target that answers; "" for an error
		wantErr   error
		errReason map[string]string // target -> a part of its reason in the error
		sleeps    []time.Duration
	}{
		{
			name:   "a daily quota fails over to the same model at another provider",
			chain:  []spec{a, b},
			faults: map[string][]sim.Fault{"alpha/emb-small": {f(sim.DailyQuota)}},
			want: []row{
				{"alpha/emb-small", "http_429", "wall", "failover", 0},
				{"beta/emb-small", "ok", "", "return", 0},
			},
			answer: "beta/emb-small",
		},
		{
			name:   "a missing model fails over to the same family at the same provider",
			chain:  []spec{a, a2},
			faults: map[string][]sim.Fault{"alpha/emb-small": {f(sim.ModelNotFound)}},
			want: []row{
				{"alpha/emb-small", "http_404", "wall", "failover", 0},
				{"alpha/emb-small-v2", "ok", "", "return", 0},
			},
			answer: "alpha/emb-small-v2",
		},
		{
			name:   "a wall fails over to the same family in another dialect (Gemini's batchEmbedContents)",
			chain:  []spec{a, g},
			faults: map[string][]sim.Fault{"alpha/emb-small": {f(sim.InsufficientQuota)}},
			want: []row{
				{"alpha/emb-small", "http_429", "wall", "failover", 0},
				{"google/emb-small", "ok", "", "return", 0},
			},
			answer: "google/emb-small",
		},
		{
			name:   "a Gemini daily quota fails over to the same family elsewhere",
			chain:  []spec{g, b},
			faults: map[string][]sim.Fault{"google/emb-small": {f(sim.DailyQuota)}},
			want: []row{
				{"google/emb-small", "http_429", "wall", "failover", 0},
				{"beta/emb-small", "ok", "", "return", 0},
			},
			answer: "beta/emb-small",
		},
		{
			name:   "a rate limit retries the same target after Retry-After",
			chain:  []spec{a, b},
			faults: map[string][]sim.Fault{"alpha/emb-small": {rateLimit(2 * time.Second)}},
			want: []row{
				{"alpha/emb-small", "http_429", "transient", "retry", 2 * time.Second},
				{"alpha/emb-small", "ok", "", "return", 0},
			},
			answer: "alpha/emb-small",
			sleeps: []time.Duration{2 * time.Second},
		},
		{
			name:   "another family is skipped, never sent to, and the same family after it answers",
			chain:  []spec{a, c, b},
			faults: map[string][]sim.Fault{"alpha/emb-small": {f(sim.NoCredits)}},
			want: []row{
				{"alpha/emb-small", "http_402", "wall", "failover", 0},
				{"gamma/other-emb", "skipped_contract", "", "skip", 0},
				{"beta/emb-small", "ok", "", "return", 0},
			},
			answer: "beta/emb-small",
		},
		{
			name:   "with only another family left the request fails, whatever the route allows",
			chain:  []spec{a, c},
			faults: map[string][]sim.Fault{"alpha/emb-small": {f(sim.NoCredits)}},
			want: []row{{"alpha/emb-small", "http_402", "wall", "fail", 0},
				{"gamma/other-emb", "skipped_contract", "", "skip", 0}},
			wantErr: router.ErrAllFailed,
			errReason: map[string]string{
				"gamma/other-emb": "model family other is not emb, the first candidate's: vectors of different models do not mix",
			},
		},
		{
			name:   "a client that cannot embed is skipped",
			chain:  []spec{an, b},
			faults: map[string][]sim.Fault{},
			want: []row{
				{"claude/emb-small", "skipped_contract", "", "skip", 0},
				{"beta/emb-small", "ok", "", "return", 0},
			},
			answer: "beta/emb-small",
		},
		{
			name:    "a family no candidate can embed fails closed as unsupported",
			chain:   []spec{an, c},
			want:    []row{{"claude/emb-small", "skipped_contract", "", "skip", 0}, {"gamma/other-emb", "skipped_contract", "", "skip", 0}},
			wantErr: router.ErrUnsupported,
			errReason: map[string]string{
				"claude/emb-small": "cannot embed",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, route := newHarness(t, tt.chain...)
			for id, fs := range tt.faults {
				p, m, _ := strings.Cut(id, "/")
				h.script(p, m, fs...)
			}
			req := &llm.EmbedRequest{Input: []string{"hello", "world"}}
			res, err := h.router.Embed(context.Background(), route, req, router.Options{})
			if diff := cmp.Diff(tt.want, h.rows()); diff != "" {
				t.Errorf("ledger mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.sleeps, h.clk.Sleeps()); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
			st := h.srv.Stats()
			if sends := countSends(h); sends != st.Embeds("", "") || st.Embeds("", "") != st.Total() {
				t.Errorf("ledger records %d sends, providers received %d embeddings of %d requests", sends,
					st.Embeds("", ""), st.Total())
			}
			if n := st.Embeds("gamma", ""); n != 0 {
				t.Errorf("the other family got %d embeddings requests", n)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				var re *router.Error
				if !errors.As(err, &re) {
					t.Fatalf("err %T is no *router.Error", err)
				}
				for _, cand := range re.Candidates {
					if part, ok := tt.errReason[cand.Target]; ok && !strings.Contains(cand.Reason, part) {
						t.Errorf("%s: reason %q, want it to hold %q", cand.Target, cand.Reason, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if got := res.Target.ID(); got != tt.answer {
				t.Errorf("answered by %s, want %s", got, tt.answer)
			}
			want := [][]float32{sim.Vector(res.Target.Model, "hello", 0), sim.Vector(res.Target.Model, "world", 0)}
			if diff := cmp.Diff(want, res.Embeddings.Vectors); diff != "" {
				t.Errorf("vectors (-want +got):\n%s", diff)
			}
			// Gemini's embeddings answers count no tokens; OpenAI's do.
			counted := res.Target.Provider != "google"
			if res.Response.Model != res.Target.Model || (res.Embeddings.Usage.InputTokens > 0) != counted {
				t.Errorf("model %q usage %+v", res.Response.Model, res.Embeddings.Usage)
			}
			if last := res.Attempts[len(res.Attempts)-1]; (last.Cost > 0) != counted || last.Usage.InputTokens != res.Embeddings.Usage.InputTokens {
				t.Errorf("last attempt %+v: cost and tokens should come from the embeddings usage", last)
			}
			if req.Model != "" {
				t.Errorf("the caller's request was changed: model %q", req.Model)
			}
		})
	}
}

func TestRouter_EmbedStartPicksTheFamily(t *testing.T) {
	h, route := newHarness(t, spec{provider: "alpha", model: "e1", family: "one"},
		spec{provider: "beta", model: "e2", family: "two"}, spec{provider: "gamma", model: "e2b", family: "two"})
	h.script("beta", "e2", f(sim.DailyQuota))
	res, err := h.router.Embed(context.Background(), route, &llm.EmbedRequest{Input: []string{"x"}}, router.Options{Start: "beta"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.ID() != "gamma/e2b" {
		t.Errorf("answered by %s, want gamma/e2b", res.Target.ID())
	}
	if n := h.srv.Stats().Embeds("alpha", ""); n != 0 {
		t.Errorf("family one got %d requests", n)
	}
}

func TestRouter_EmbedRefusesIdempotencyKeyAndNoInput(t *testing.T) {
	h, route := newHarness(t, spec{provider: "alpha", model: "e1"})
	if _, err := h.router.Embed(context.Background(), route, &llm.EmbedRequest{}, router.Options{}); !errors.Is(err, llm.ErrNoInput) {
		t.Errorf("no input: %v", err)
	}
	if _, err := h.router.Embed(context.Background(), route, &llm.EmbedRequest{Input: []string{"x"}},
		router.Options{IdempotencyKey: "k"}); err == nil {
		t.Error("an idempotency key was accepted")
	}
	if h.srv.Stats().Total() != 0 {
		t.Error("a refused request was sent")
	}
}
