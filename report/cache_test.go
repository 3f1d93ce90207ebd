package report

import (
	"testing"
	"time"

	"github.com/detourhq/detour/ledger"
)

// The prompt cache's share of a target's input: tokens_cache_read over
// tokens_in (which counts them too), failures included; null when no
// input was reported.
func TestCacheHitPct(t *testing.T) {
	s := NewSummary()
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for i, l := range []struct{ in, read, write int }{{1000, 0, 800}, {1000, 800, 0}, {1000, 900, 0}, {0, 0, 0}} {
		s.Add(&ledger.Record{Time: t0.Add(time.Duration(i) * time.Second), Provider: "p", Model: "m", Status: ledger.StatusOK,
			TokensIn: l.in, TokensCacheRead: l.read, TokensCacheWrite: l.write})
	}
	s.Add(&ledger.Record{Time: t0, Provider: "q", Model: "n", Status: "http_503"})
	r := s.Report()
	for _, tg := range r.Targets {
		switch tg.Target {
		case "p/m":
			if tg.TokensCacheRead != 1700 || tg.TokensCacheWrite != 800 || tg.CacheHitPct == nil || *tg.CacheHitPct != 56.7 {
				t.Errorf("p/m: read %d write %d hit %v; want 1700, 800, 56.7%%", tg.TokensCacheRead, tg.TokensCacheWrite, tg.CacheHitPct)
			}
		case "q/n":
			if tg.CacheHitPct != nil {
				t.Errorf("q/n reported no input, yet its cache hit is %v", *tg.CacheHitPct)
			}
		}
	}
}

// A group member's answers are counted by how the group put it first
// (the ledger's pick, up to its colon).
func TestPicksCounted(t *testing.T) {
	s := NewSummary()
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for i, p := range []string{"least_busy: 0 in flight", "least_busy: 1 in flight", "affinity: served this prompt prefix last", ""} {
		s.Add(&ledger.Record{Time: t0.Add(time.Duration(i) * time.Second), Provider: "p", Model: "m", Status: ledger.StatusOK, Pick: p})
	}
	got := s.Report().Targets[0].Picks
	if len(got) != 2 || got[0] != (Count{"least_busy", 2}) || got[1] != (Count{"affinity", 1}) {
		t.Errorf("picks %+v, want least_busy 2, affinity 1", got)
	}
}
