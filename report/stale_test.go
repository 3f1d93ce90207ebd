package report

import (
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/ledger"
)

func TestReport_FlagsRoutesWhoseHeadStaysDegraded(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	s := NewSummary()
	add := func(at time.Duration, route, provider, status, kind string, hop int) {
		s.Add(&ledger.Record{Time: t0.Add(at), Route: route, Provider: provider, Model: "m", Status: status, Kind: kind, Hop: hop})
	}
	// walled: the head hits a daily quota, then is skipped for 30 hours.
	add(0, "walled", "free", "http_429", "wall", 0)
	add(time.Second, "walled", "paid", "ok", "", 1)
	for h := 1; h <= 30; h++ {
		add(time.Duration(h)*time.Hour, "walled", "free", ledger.StatusSkippedParked, "", 0)
		add(time.Duration(h)*time.Hour+time.Second, "walled", "paid", "ok", "", 1)
	}
	// failing: the head answers 5 of 25 calls.
	for i := range 25 {
		st, kind := "http_503", "transient"
		if i%5 == 0 {
			st, kind = "ok", ""
		}
		add(time.Duration(i)*time.Minute, "failing", "flaky", st, kind, 0)
	}
	// healthy: a short wall that closed.
	add(0, "healthy", "good", "http_429", "wall", 0)
	add(time.Hour, "healthy", "good", "ok", "", 0)
	// a young wall: open for 2 hours only.
	add(28*time.Hour, "young", "fresh", "http_402", "wall", 0)

	r := s.Report()
	got := map[string]RouteFlag{}
	for _, f := range r.Flags {
		got[f.Route] = f
	}
	if len(got) != 2 {
		t.Fatalf("flags = %+v; want walled and failing only", r.Flags)
	}
	if f := got["walled"]; f.Head != "free/m" || f.Why != "walled" || !f.Since.Equal(t0) || !strings.Contains(f.Text, "1d 6h") {
		t.Errorf("walled = %+v", f)
	}
	if f := got["failing"]; f.Head != "flaky/m" || f.Why != "failing" || f.ReachabilityPct != 20 || f.Calls != 25 {
		t.Errorf("failing = %+v", f)
	}
}

// Failovers in and out, scopes and degraded answers, per target, from the
// ledger's own fields.
func TestReport_FailoversScopesDegraded(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	s := NewSummary()
	recs := []ledger.Record{
		{Route: "r", Provider: "a", Model: "m", Hop: 0, Attempt: 1, Status: "http_402", Kind: "wall", Scope: "account", Action: "fallback"},
		{Route: "r", Provider: "b", Model: "n", Hop: 1, Attempt: 1, Failover: true, Status: "ok", Action: "return", Degraded: true},
		{Route: "r", Provider: "a", Model: "m", Hop: 0, Attempt: 1, Status: ledger.StatusSkippedParked, Action: "skip"},
		{Route: "r", Provider: "b", Model: "n", Hop: 1, Attempt: 1, Failover: true, Status: "http_503", Kind: "transient", Scope: "attempt", Action: "retry"},
		{Route: "r", Provider: "b", Model: "n", Hop: 1, Attempt: 2, Failover: true, Status: "ok", Action: "return", Degraded: true},
		{Provider: "a", Model: "m", Attempt: 1, Status: ledger.StatusProbeOK, Action: "probe"},
	}
	for i := range recs {
		recs[i].Time = t0.Add(time.Duration(i) * time.Minute)
		s.Add(&recs[i])
	}
	r := s.Report()
	by := map[string]Target{}
	for _, tg := range r.Targets {
		by[tg.Target] = tg
	}
	a, b := by["a/m"], by["b/n"]
	if a.FailoversOut != 1 || a.FailoversIn != 0 || a.Probes != 1 || a.Calls != 1 || len(a.FailuresByScope) != 1 || a.FailuresByScope[0] != (ScopeCount{"account", 1}) {
		t.Errorf("a/m = %+v", a)
	}
	if b.FailoversIn != 2 || b.FailoversOut != 0 || b.Degraded != 2 || b.Answers != 2 || b.FailuresByScope[0] != (ScopeCount{"attempt", 1}) {
		t.Errorf("b/n = %+v", b)
	}
	if *a.ReachabilityPct != 0 {
		t.Errorf("a probe_ok counted in reachability: %v", *a.ReachabilityPct)
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		26*time.Hour + 59*time.Minute: "1d 2h",
		5*time.Hour + 12*time.Minute:  "5h 12m",
		74 * time.Hour:                "3d 2h",
		0:                             "0h 0m",
	} {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}
