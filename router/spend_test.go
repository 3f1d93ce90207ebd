package router_test

import (
	"context"
	"strings"
	"testing"

	"github.com/detourhq/detour/router"
)

// A daily ceiling: once the day's spend leaves no room for a send's worst
// case, priced targets are skipped (skipped_cost) and free ones answer;
// the counter is the route's and the caller's, each.
func TestDailyCeiling(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "free"})
	route.Chain[0].PriceIn, route.Chain[0].PriceOut = 1000, 1000 // $ per million tokens
	route.DailyCost = 0.075                                      // a send's worst case is $0.068 (4 tokens in, 64 out at most); an answer costs $0.014
	ask := func(opts router.Options) *router.Result {
		t.Helper()
		res, err := h.router.Complete(context.Background(), route, streamPrompt(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := ask(router.Options{}); res.Target.Provider != "p1" {
		t.Fatalf("the first request of the day went to %s", res.Target.ID())
	}
	h.newLedger()
	if res := ask(router.Options{}); res.Target.Provider != "p2" {
		t.Fatalf("past the ceiling the request went to %s, want the free p2", res.Target.ID())
	}
	recs := h.ledger.Records()
	if recs[0].Status != "skipped_cost" || !strings.Contains(recs[0].Reason, "daily ceiling of route:") {
		t.Fatalf("ledger %+v, want p1 skipped for the route's daily ceiling", recs)
	}
	if n := h.srv.Stats().Requests("p1", ""); n != 1 {
		t.Fatalf("p1 got %d requests, want 1", n)
	}

	// A caller's own ceiling, on a route without one.
	route.DailyCost = 0
	opts := router.Options{Spend: []router.SpendLimit{{Key: "key:alice", Limit: 0.05}}}
	h.newLedger()
	if res := ask(opts); res.Target.Provider != "p2" {
		t.Fatalf("alice's $0.05 ceiling let a $0.068 send through to %s", res.Target.ID())
	}
	if r := h.ledger.Records()[0].Reason; !strings.Contains(r, "key:alice") {
		t.Fatalf("reason %q does not name alice's ceiling", r)
	}
	if res := ask(router.Options{}); res.Target.Provider != "p1" {
		t.Fatalf("without a ceiling the request went to %s", res.Target.ID())
	}
}
