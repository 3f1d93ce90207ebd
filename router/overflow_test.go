package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// A target the request overflowed is never sent it again, not even on
// the new pass down the chain a queue makes.
func TestRouter_OverflowedTargetIsNeverSentAgain(t *testing.T) {
	h, route := newHarness(t, spec{provider: "alpha", model: "small"}, spec{provider: "beta", model: "any"})
	route.Budget = policy.Batch()
	h.script("alpha", "small", sim.Fault{Kind: sim.ContextOverflow})
	h.script("beta", "any", sim.Fault{Kind: sim.RateLimit, RetryAfter: 90 * time.Second})
	res, err := h.router.Complete(context.Background(), route, prompt("a long story"), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.ID() != "beta/any" {
		t.Fatalf("answered by %s, want beta/any after its park", res.Target.ID())
	}
	if n := h.srv.Stats().Requests("alpha", "small"); n != 1 {
		t.Fatalf("alpha/small got %d sends, want 1", n)
	}
	if last := h.lastFor("alpha/small"); last.Status != ledger.StatusSkippedContract {
		t.Fatalf("alpha/small on the second pass: %s %q, want skipped_contract", last.Status, last.Reason)
	}
}
