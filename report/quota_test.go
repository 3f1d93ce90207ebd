package report

import (
	"testing"
	"time"

	"github.com/detourhq/detour/ledger"
)

// Windows are placed as the router places them, from the first send after
// the last window ended, not on the clock: sends at :30 and :50 of one
// minute and :10 of the next fall in one window (3), where clock minutes
// would say 2; a send 70 s after the first opens the next window. Skips,
// probes and last resorts are no sends; tokens are billed in and out.
func TestQuotaPeaks_WindowsAsTheRouterPlacesThem(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 30, 0, time.UTC)
	s := NewSummary()
	s.WatchQuotas([]QuotaWatch{{Key: "target:p/m", Targets: []string{"p/m"}}, {Key: "account:q", Targets: []string{"q/a", "q/b"}}})
	for _, l := range []struct {
		at            time.Duration
		target        string
		status        string
		tokIn, tokOut int
	}{
		{0, "p/m", ledger.StatusOK, 100, 10},
		{20 * time.Second, "p/m", "http_503", 0, 0},
		{40 * time.Second, "p/m", ledger.StatusOK, 200, 20},
		{50 * time.Second, "p/m", ledger.StatusSkippedQuota, 0, 0},
		{55 * time.Second, "p/m", ledger.StatusProbeOK, 1, 1},
		{70 * time.Second, "p/m", ledger.StatusOK, 1000, 0},
		{0, "q/a", ledger.StatusOK, 1, 1},
		{10 * time.Second, "q/b", ledger.StatusOK, 1, 1},
		{20 * time.Second, "x/y", ledger.StatusOK, 1, 1},
	} {
		p, m, _ := cut(l.target)
		s.Add(&ledger.Record{Time: t0.Add(l.at), Provider: p, Model: m, Status: l.status, TokensIn: l.tokIn, TokensOut: l.tokOut})
	}
	got := map[string]QuotaPeak{}
	for _, p := range s.Report().QuotaPeaks {
		got[p.Key+" "+p.Window] = p
	}
	if p := got["target:p/m minute"]; p.Requests != 3 || !p.RequestsStart.Equal(t0) || p.Tokens != 1000 || !p.TokensStart.Equal(t0.Add(70*time.Second)) {
		t.Errorf("p/m minute = %+v; want 3 sends from %s and 1000 tokens from 70 s on", p, t0)
	}
	if p := got["target:p/m day"]; p.Requests != 4 || p.Tokens != 1330 {
		t.Errorf("p/m day = %+v; want 4 sends, 1330 tokens", p)
	}
	if p := got["account:q minute"]; p.Requests != 2 {
		t.Errorf("a quota shared by two targets counts both: %+v", p)
	}
	if len(got) != 6 {
		t.Errorf("peaks %v: want minute, hour and day of the two quotas", got)
	}
}

func cut(target string) (provider, model string, ok bool) {
	for i := range target {
		if target[i] == '/' {
			return target[:i], target[i+1:], true
		}
	}
	return target, "", false
}

// A skipped_quota line's reason is read back into the limit it names, the
// most the router counted, and the skips; a skip for a provider's headers
// names no declared limit and is left out.
func TestQuotaSkips_ReadFromTheRoutersReason(t *testing.T) {
	s := NewSummary()
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for i, reason := range []string{
		"targets.p/m.limits rpm 3 of 3 requests used, frees at 12:01:00 UTC",
		"targets.p/m.limits tpd 99000 of 100000 tokens used, this request needs about 2000, frees at 2026-12-06 00:00:00 UTC",
		"targets.p/m.limits rpm 3 of 3 requests used, frees at 12:02:00 UTC",
		"x-ratelimit-remaining-requests 0 (resets in 20s)",
	} {
		s.Add(&ledger.Record{Time: t0.Add(time.Duration(i) * time.Second), Provider: "p", Model: "m", Status: ledger.StatusSkippedQuota, Reason: reason})
	}
	r := s.Report()
	if len(r.Targets) != 1 {
		t.Fatalf("targets %+v", r.Targets)
	}
	want := []QuotaSkip{{Source: "targets.p/m.limits", Window: "rpm", Unit: "requests", Limit: 3, Used: 3, Skips: 2},
		{Source: "targets.p/m.limits", Window: "tpd", Unit: "tokens", Limit: 100000, Used: 99000, Skips: 1}}
	got := r.Targets[0].QuotaSkips
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("quota skips %+v, want %+v", got, want)
	}
}
