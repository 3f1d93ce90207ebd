package router_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// Options.Probe with NoFallback sends to a parked start target under the
// store's probe lease: an answer ends every park it was under (its own
// and its account's) and is recorded as probe_ok, action probe; a failure
// keeps the park, is not retried, and is recorded as probe_failed.
// Without Probe (or without NoFallback) a parked start is skipped with no
// send, as before; a start no park holds is sent to as usual.
func TestRouter_ProbeSendsToAParkedStart(t *testing.T) {
	h, route := newHarness(t, spec{provider: "a", model: "m"}, spec{provider: "b", model: "m"})
	now := h.clk.Now()
	h.health.Park("account:a", now.Add(time.Hour), "no credit", now)
	h.health.Park("a/m", now.Add(time.Hour), "overloaded", now)
	ctx := context.Background()
	sends := func() int { return h.srv.Stats().Requests("a", "") }

	if _, err := h.router.Complete(ctx, route, prompt("hi"), router.Options{NoFallback: true}); !errors.Is(err, router.ErrAllFailed) || sends() != 0 {
		t.Fatalf("no-fallback without probe: %v, %d send(s) to a; want a skipped, nothing sent", err, sends())
	}
	if res, err := h.router.Complete(ctx, route, prompt("hi"), router.Options{Probe: true}); err != nil || res.Target.Provider != "b" || sends() != 0 {
		t.Fatalf("probe without no-fallback: %v, %v, %d send(s) to a; want it ignored: b answers", res, err, sends())
	}

	h.script("a", "m", simulate.Fault{Kind: simulate.Unavailable})
	h.newLedger()
	_, err := h.router.Complete(ctx, route, prompt("hi"), router.Options{NoFallback: true, Probe: true})
	recs := h.ledger.Records()
	if !errors.Is(err, router.ErrAllFailed) || sends() != 1 || len(recs) != 1 || recs[0].Status != ledger.StatusProbeFailed ||
		recs[0].Action != "probe" || recs[0].Kind != "transient" {
		t.Fatalf("a failed probe: %v, %d send(s), ledger %+v; want one send, probe_failed, action probe", err, sends(), recs)
	}
	for _, k := range []string{"account:a", "a/m"} {
		if e := h.health.Get(k, h.clk.Now()); e.State != health.Open || !e.Until.Equal(now.Add(time.Hour)) || !e.ProbeUntil.IsZero() {
			t.Fatalf("%s after a failed probe: %+v; want its park kept and the lease back", k, e)
		}
	}

	h.newLedger()
	res, err := h.router.Complete(ctx, route, prompt("hi"), router.Options{NoFallback: true, Probe: true})
	recs = h.ledger.Records()
	if err != nil || res.Target.Provider != "a" || sends() != 2 || len(recs) != 1 || recs[0].Status != ledger.StatusProbeOK ||
		recs[0].Action != "probe" || recs[0].Route != "test" || len(res.Attempts) != 1 || !res.Attempts[0].Probe ||
		res.Attempts[0].Status != ledger.StatusOK {
		t.Fatalf("a probe that answers: %+v, %v, %d sends, ledger %+v; want a's answer recorded probe_ok", res, err, sends(), recs)
	}
	if parks := h.health.Parks(h.clk.Now()); len(parks) != 0 {
		t.Fatalf("after the probe answered: %+v parked, want nothing", parks)
	}

	h.newLedger()
	if _, err := h.router.Complete(ctx, route, prompt("hi"), router.Options{NoFallback: true, Probe: true}); err != nil ||
		h.ledger.Records()[0].Status != ledger.StatusOK {
		t.Fatalf("probe of a start no park holds: %v, ledger %+v; want a plain ok", err, h.ledger.Records())
	}
}

// A probe never races another: a key whose probe lease is out refuses
// the send even under Options.Probe.
func TestRouter_ProbeSkipsAKeyWithAProbeOut(t *testing.T) {
	h, route := newHarness(t, spec{provider: "a", model: "m"})
	now := h.clk.Now()
	h.health.Park("a/m", now.Add(time.Hour), "overloaded", now)
	if _, _, ok := h.health.BeginProbe("a/m", now); !ok {
		t.Fatal("BeginProbe refused")
	}
	_, err := h.router.Complete(context.Background(), route, prompt("hi"), router.Options{NoFallback: true, Probe: true})
	recs := h.ledger.Records()
	if !errors.Is(err, router.ErrAllFailed) || h.srv.Stats().Requests("a", "") != 0 || len(recs) != 1 ||
		recs[0].Status != ledger.StatusSkippedParked {
		t.Fatalf("probe under another's lease: %v, ledger %+v; want skipped_parked, nothing sent", err, recs)
	}
}
