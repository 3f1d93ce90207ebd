package router_test

import (
	"context"
	"strings"
	"testing"

	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// A route's eval gate skips the fallback targets it does not approve
// (skipped_unapproved, with its reason) and sends to the approved ones;
// the route's first target is its own choice and is never gated.
func TestEvalGate_SkipsUnapprovedFallbacks(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"}, spec{provider: "p3", model: "m"})
	var asked []string
	route.Approve = func(tg *router.Target) (bool, string) {
		asked = append(asked, tg.ID())
		if tg.Provider == "p2" {
			return false, "accuracy 40% on suite builtin is below 80%"
		}
		return true, ""
	}
	h.script("p1", "m", simulate.Fault{Kind: simulate.DailyQuota})
	res, err := h.router.Complete(context.Background(), route, prompt("hi"), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.Provider != "p3" {
		t.Fatalf("answered by %s, want p3 (p2 is not approved)", res.Target.ID())
	}
	if n := h.srv.Stats().Requests("p2", ""); n != 0 {
		t.Fatalf("the unapproved p2 got %d requests", n)
	}
	for _, id := range asked {
		if id == "p1/m" {
			t.Fatal("the gate was asked about the route's first target")
		}
	}
	var got []string
	for _, r := range h.ledger.Records() {
		got = append(got, r.Provider+":"+r.Status)
		if r.Status == "skipped_unapproved" && !strings.Contains(r.Reason, "routes.test.eval_gate") || r.Status == "skipped_unapproved" && !strings.Contains(r.Reason, "below 80%") {
			t.Errorf("reason %q should name the gate and why", r.Reason)
		}
	}
	if want := "p1:http_429 p2:skipped_unapproved p3:ok"; strings.Join(got, " ") != want {
		t.Fatalf("ledger %v, want %s", got, want)
	}
}

// With a start target named, that target is the request's first and is
// not gated; the route's own first is then a fallback like any other.
func TestEvalGate_StartTargetIsNotGated(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	route.Approve = func(*router.Target) (bool, string) { return false, "no result" }
	res, err := h.router.Complete(context.Background(), route, prompt("hi"), router.Options{Start: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.Provider != "p2" {
		t.Fatalf("answered by %s, want p2", res.Target.ID())
	}
}
