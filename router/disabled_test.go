package router_test

import (
	"context"
	"strings"
	"testing"

	"github.com/detourhq/detour/router"
)

// A disabled target (a kill switch in the config) is skipped with its
// reason and never sent to; the next candidate answers.
func TestDisabledTargetIsSkipped(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	route.Chain[0].Disabled = "providers.p1.disabled"
	res, err := h.router.Complete(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.Provider != "p2" {
		t.Fatalf("answered by %s, want p2", res.Target.ID())
	}
	if n := h.srv.Stats().Requests("p1", ""); n != 0 {
		t.Fatalf("the disabled p1 got %d requests", n)
	}
	recs := h.ledger.Records()
	if len(recs) != 2 || recs[0].Status != "skipped_disabled" || !strings.Contains(recs[0].Reason, "providers.p1.disabled") {
		t.Fatalf("ledger %+v, want p1 skipped_disabled naming the setting", recs)
	}
}

// A target its caller holds back (batch's pace) is skipped as paced, not
// as turned off and not as a failure: nothing is parked, and the next
// candidate answers.
func TestPacedTargetIsSkippedAsPaced(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	route.Chain[0].Paced = "detour batch's pace for p1"
	res, err := h.router.Complete(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.Provider != "p2" || h.srv.Stats().Requests("p1", "") != 0 {
		t.Fatalf("answered by %s; p1 got %d requests", res.Target.ID(), h.srv.Stats().Requests("p1", ""))
	}
	recs := h.ledger.Records()
	if recs[0].Status != "skipped_paced" || recs[0].Reason != "detour batch's pace for p1" {
		t.Fatalf("first ledger line %+v, want skipped_paced with the pace", recs[0])
	}
	if _, err := h.health.Allow(route.Chain[0].ID(), h.clk.Now()); err != nil {
		t.Fatalf("the paced target was parked: %v", err)
	}
}
