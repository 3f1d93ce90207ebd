package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// A ledger record's time is when its attempt started, and an answer from
// another family than the route's first is marked degraded (a failover to
// the same family is not).
func TestLedger_StartTimeAndDegraded(t *testing.T) {
	h, route := newHarness(t,
		spec{provider: "a", model: "m", family: "f1"},
		spec{provider: "b", model: "m", family: "f1"},
		spec{provider: "c", model: "o", family: "f2"})
	h.script("a", "m", simulate.Fault{Kind: simulate.NoCredits})
	h.script("b", "m", simulate.Fault{Kind: simulate.Unauthorized})
	h.script("c", "o", simulate.Fault{Kind: simulate.SlowFirstToken, Delay: 2 * time.Second}) // c takes 2 s
	res, err := h.router.Complete(context.Background(), route, prompt("hi"), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs := h.ledger.Records()
	if len(recs) != 3 || recs[2].Provider != "c" || recs[2].Status != "ok" || !res.Degraded {
		t.Fatalf("records %+v, degraded %v: want a, b failed, c answered degraded", h.rows(), res.Degraded)
	}
	for i, r := range recs {
		end := r.Time.Add(time.Duration(r.Seconds * float64(time.Second)))
		if i+1 < len(recs) && end.After(recs[i+1].Time) {
			t.Errorf("record %d (%s) ends at %s, after the next one starts at %s: its time is not its start",
				i, r.Provider, end.Format(time.StampMilli), recs[i+1].Time.Format(time.StampMilli))
		}
		if want := i == 2; r.Degraded != want {
			t.Errorf("record %d (%s %s) degraded = %v, want %v", i, r.Provider, r.Status, r.Degraded, want)
		}
	}
	if end := h.clk.Now(); !recs[2].Time.Equal(end.Add(-2*time.Second)) || recs[2].Seconds != 2 {
		t.Errorf("c's record: time %s, %.3fs; want its start, 2 s before the end (%s)",
			recs[2].Time.Format(time.StampMilli), recs[2].Seconds, end.Format(time.StampMilli))
	}

	// The same family elsewhere answers: not degraded.
	h.newLedger()
	h.health.Release("account:a", h.clk.Now())
	h.health.Release("a/m", h.clk.Now())
	h.health.Release("account:b", h.clk.Now()) // the key of b is good again
	h.script("a", "m", simulate.Fault{Kind: simulate.ServerError}, simulate.Fault{Kind: simulate.ServerError})
	res, err = h.router.Complete(context.Background(), route, prompt("hi"), router.Options{})
	if err != nil || res.Degraded || res.Target.Provider != "b" {
		t.Fatalf("failover: %v, %+v", err, h.rows())
	}
	for _, r := range h.ledger.Records() {
		if r.Degraded {
			t.Errorf("record %s %s degraded on a failover within the family", r.Provider, r.Status)
		}
	}
}
