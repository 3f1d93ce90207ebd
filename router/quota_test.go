package router_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// ask sends one whole request of max_tokens n down route and returns the
// target that answered ("" on failure) and the error.
func (h *harness) ask(route *router.Route, n int) (string, error) {
	h.t.Helper()
	req := prompt("hello")
	req.MaxTokens = n
	res, err := h.router.Complete(context.Background(), route, req, router.Options{})
	if err != nil {
		return "", err
	}
	return res.Target.ID(), nil
}

// lastFor is the last ledger line of target id, or a zero Record.
func (h *harness) lastFor(id string) ledger.Record {
	var out ledger.Record
	for _, r := range h.ledger.Records() {
		if r.Provider+"/"+r.Model == id {
			out = r
		}
	}
	return out
}

// An answer (or a failure) whose headers say nothing is left parks its
// target until the reset they name, before the next request: the next
// one goes to the fallback at once, and none reaches the target until
// the reset. Whole and streamed answers alike, and a 429 that is not
// retried.
func TestRouter_RemainingZeroParksUntilTheReset(t *testing.T) {
	zeroRequests := http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"30s"},
		"X-Ratelimit-Limit-Requests": {"30"}}
	zeroTokens := http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"30s"},
		"X-Ratelimit-Limit-Tokens": {"6000"}}
	tests := []struct {
		name   string
		first  sim.Fault
		stream bool
		header string
	}{
		{"answer, requests left 0", sim.Fault{Kind: sim.OK, Header: zeroRequests}, false, "x-ratelimit-remaining-requests: 0"},
		{"streamed answer, requests left 0", sim.Fault{Kind: sim.OK, Header: zeroRequests}, true, "x-ratelimit-remaining-requests: 0"},
		{"answer, tokens left 0", sim.Fault{Kind: sim.OK, Header: zeroTokens}, false, "x-ratelimit-remaining-tokens: 0"},
		{"429 not retried, tokens left 0", sim.Fault{Kind: sim.RateLimit, RetryAfter: 20 * time.Second, Header: zeroTokens}, false,
			"x-ratelimit-remaining-tokens: 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p2", model: "b"})
			route.Budget = policy.Budget{MaxServerWait: 5 * time.Second} // a 20 s Retry-After is not waited
			h.script("p1", "a", tt.first)
			send := func() string {
				t.Helper()
				if !tt.stream {
					id, err := h.ask(route, 64)
					if err != nil {
						t.Fatal(err)
					}
					return id
				}
				res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := drain(t, res.Stream); err != nil {
					t.Fatal(err)
				}
				return res.Target.ID()
			}
			send()
			h.clk.Advance(25 * time.Second) // past the 429's own Retry-After (20 s), before the reset (30 s)
			if got := send(); got != "p2/b" {
				t.Fatalf("request after the headers said 0 left answered by %s, want p2/b", got)
			}
			last := h.lastFor("p1/a")
			if last.Status != ledger.StatusSkippedQuota || !strings.Contains(last.Reason, tt.header) {
				t.Fatalf("p1/a's line: %s %q, want skipped_quota (a park seen coming) naming %q", last.Status, last.Reason, tt.header)
			}
			if n := h.srv.Stats().Requests("p1", "a"); n != 1 {
				t.Fatalf("p1/a got %d sends before its reset, want 1", n)
			}
			h.clk.Advance(6 * time.Second)
			if got := send(); got != "p1/a" {
				t.Fatalf("request after the reset answered by %s, want p1/a", got)
			}
		})
	}
}

// Fewer tokens left than the next request needs (its input by estimate
// plus max_tokens) skip the target for that request alone: a smaller one
// still goes to it.
func TestRouter_TokensLeftBelowTheEstimateSkips(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p2", model: "b"})
	h.script("p1", "a", sim.Fault{Kind: sim.OK, Header: http.Header{"X-Ratelimit-Remaining-Tokens": {"200"},
		"X-Ratelimit-Reset-Tokens": {"20s"}, "X-Ratelimit-Limit-Tokens": {"6000"}}})
	if got, err := h.ask(route, 64); err != nil || got != "p1/a" {
		t.Fatalf("first request: %s, %v", got, err)
	}
	if got, err := h.ask(route, 500); err != nil || got != "p2/b" {
		t.Fatalf("a request of 500 tokens with 200 left: answered by %s (%v), want p2/b", got, err)
	}
	last := h.lastFor("p1/a")
	if last.Status != ledger.StatusSkippedQuota || !strings.Contains(last.Reason, "x-ratelimit-remaining-tokens: 200") {
		t.Fatalf("p1/a's line: %s %q, want skipped_quota naming the header", last.Status, last.Reason)
	}
	if got, err := h.ask(route, 64); err != nil || got != "p1/a" {
		t.Fatalf("a request of 64 tokens with 200 left: answered by %s (%v), want p1/a", got, err)
	}
	h.clk.Advance(21 * time.Second) // the sim says nothing more: what it said lapses at its reset
	if got, err := h.ask(route, 500); err != nil || got != "p1/a" {
		t.Fatalf("after the reset: answered by %s (%v), want p1/a", got, err)
	}
}

// rpm: 3 and six requests in a row: three sends, no failure, the rest
// answered by the next candidate, each skip naming when the window frees
// up; after it, the target is sent to again.
func TestRouter_DeclaredRPMSkipsASpentWindow(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p2", model: "b"})
	route.Chain[0].Quotas = []router.Quota{{Key: "p1/a", Source: "targets.p1/a.limits", Limits: router.Limits{RPM: 3}}}
	var by []string
	for range 6 {
		id, err := h.ask(route, 64)
		if err != nil {
			t.Fatal(err)
		}
		by = append(by, id)
		h.clk.Advance(time.Second)
	}
	if got := strings.Join(by, " "); got != "p1/a p1/a p1/a p2/b p2/b p2/b" {
		t.Fatalf("answered by %s", got)
	}
	last := h.lastFor("p1/a")
	if last.Status != ledger.StatusSkippedQuota || !strings.Contains(last.Reason, "targets.p1/a.limits rpm 3 of 3 requests used, frees at 12:01:00 UTC") {
		t.Fatalf("p1/a's line: %s %q", last.Status, last.Reason)
	}
	if n := h.srv.Stats().Requests("p1", "a"); n != 3 {
		t.Fatalf("p1/a got %d sends, want 3", n)
	}
	h.clk.Advance(55 * time.Second)
	if id, err := h.ask(route, 64); err != nil || id != "p1/a" {
		t.Fatalf("after the window: %s, %v; want p1/a", id, err)
	}
}

// An account's quota counts every target billed to the key: two models
// of one provider share rpm 2, and the third request goes elsewhere.
func TestRouter_AccountQuotaIsSharedByItsTargets(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p1", model: "b"}, spec{provider: "p2", model: "c"})
	q := router.Quota{Key: "account:p1", Source: "providers.p1.limits", Limits: router.Limits{RPM: 2}}
	route.Chain[0].Quotas = []router.Quota{q}
	route.Chain[1].Quotas = []router.Quota{q}
	h.script("p1", "a", sim.Fault{Kind: sim.Unavailable}, sim.Fault{Kind: sim.Unavailable})
	// The first request: a fails twice (two sends of the account), b is
	// over the account's rpm and skipped, c answers.
	if id, err := h.ask(route, 64); err != nil || id != "p2/c" {
		t.Fatalf("answered by %s (%v), want p2/c", id, err)
	}
	if last := h.lastFor("p1/b"); last.Status != ledger.StatusSkippedQuota || !strings.Contains(last.Reason, "providers.p1.limits rpm 2 of 2") {
		t.Fatalf("p1/b's line: %s %q", last.Status, last.Reason)
	}
}

// Tokens are reserved by estimate while a send is out and set right to
// what it used once it is over: sequential requests that each reserve
// more than half of tpm all go, since each really used a few tokens; a
// failed send gives its reservation back.
func TestRouter_DeclaredTPMCountsWhatWasUsed(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p2", model: "b"})
	route.Chain[0].Quotas = []router.Quota{{Key: "p1/a", Source: "targets.p1/a.limits", Limits: router.Limits{TPM: 1000}}}
	route.Budget = policy.Budget{MaxPerTarget: 1}
	h.script("p1", "a", sim.Fault{Kind: sim.Unavailable})
	for i := range 4 {
		want := "p1/a"
		if i == 0 {
			want = "p2/b" // a failed: its 600 tokens are given back
		}
		if id, err := h.ask(route, 600); err != nil || id != want {
			t.Fatalf("request %d answered by %s (%v), want %s", i, id, err, want)
		}
	}
	// A request larger than the window allows never goes.
	if id, err := h.ask(route, 2000); err != nil || id != "p2/b" {
		t.Fatalf("a request of 2000 tokens: %s (%v), want p2/b", id, err)
	}
	if last := h.lastFor("p1/a"); last.Status != ledger.StatusSkippedQuota || !strings.Contains(last.Reason, "tpm") {
		t.Fatalf("p1/a's line: %s %q", last.Status, last.Reason)
	}
}

// A route with nothing else left waits for the window within its
// deadline when its budget queues; one that does not queue fails as rate
// limited, naming when to come back.
func TestRouter_SpentWindowQueuesOrFailsRateLimited(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"})
	route.Chain[0].Quotas = []router.Quota{{Key: "p1/a", Source: "targets.p1/a.limits", Limits: router.Limits{RPM: 1}}}
	if _, err := h.ask(route, 64); err != nil {
		t.Fatal(err)
	}
	_, err := h.ask(route, 64)
	var re *router.Error
	if !errors.As(err, &re) || re.Exhaustion != router.RateLimited || !re.RetryAt.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("err = %v (%+v), want rate limited with RetryAt at the window's end", err, re)
	}
	route.Budget = policy.Batch()
	start := h.clk.Now()
	if id, err := h.ask(route, 64); err != nil || id != "p1/a" {
		t.Fatalf("queued: %s, %v", id, err)
	}
	if waited := h.clk.Now().Sub(start); waited != time.Minute {
		t.Fatalf("waited %s, want the minute's rest (1m0s)", waited)
	}
	if n := h.srv.Stats().Requests("p1", "a"); n != 2 {
		t.Fatalf("p1/a got %d sends, want 2", n)
	}
}
