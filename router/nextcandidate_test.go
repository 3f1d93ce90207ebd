package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// A candidate that the eval gate or a daily ceiling excludes is never
// offered to policy as the next one. Here it is the only candidate after
// a rate-limited head whose Retry-After (55 s) passes the deadline less
// the reserve: with no real candidate to keep the reserve for, the head's
// wait fits and the head answers, where a hop to the excluded candidate
// would have ended the request with nothing.
func TestRouter_ExcludedCandidateIsNoNextCandidate(t *testing.T) {
	for _, tt := range []struct {
		name    string
		exclude func(r *router.Route)
	}{
		{"eval gate", func(r *router.Route) {
			r.Approve = func(t *router.Target) (bool, string) { return t.Provider != "p2", "accuracy 20% is below 80%" }
		}},
		{"daily ceiling", func(r *router.Route) {
			r.Chain[0].PriceIn, r.Chain[0].PriceOut = 0, 0 // the head is free: no ceiling holds it
			r.DailyCost = 1e-9
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
			tt.exclude(route)
			h.script("p1", "m", simulate.Fault{Kind: simulate.RateLimit, RetryAfter: 55 * time.Second}, simulate.Fault{Kind: simulate.OK})
			res, err := h.router.Complete(context.Background(), route, prompt("hi"), router.Options{})
			if err != nil {
				t.Fatalf("%v\nledger: %+v", err, h.rows())
			}
			if res.Target.Provider != "p1" {
				t.Fatalf("answered by %s, want p1", res.Target.ID())
			}
			want := []row{
				{Target: "p1/m", Status: "http_429", Kind: "transient", Action: "retry", Wait: 55 * time.Second},
				{Target: "p1/m", Status: "ok", Action: "return"},
			}
			if d := cmp.Diff(want, h.rows()); d != "" {
				t.Fatalf("ledger (-want +got):\n%s", d)
			}
			if n := h.srv.Stats().Requests("p2", ""); n != 0 {
				t.Fatalf("the excluded p2 got %d requests", n)
			}
		})
	}
}
