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
