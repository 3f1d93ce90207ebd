package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/ledger"
)

// seriesLedger is a hand-written ledger of two routes over three hours
// across midnight (2025-06-01 23:00 to 2025-06-02 01:59 UTC). Its counts,
// worked out by hand, are the wants below.
const seriesLedger = `
{"time":"2025-06-01T23:05:00.000Z","request_id":"r1","route":"default","provider":"groq","model":"llama","hop":0,"attempt":1,"status":"http_429","kind":"wall","action":"failover","reason":"tokens per day"}
{"time":"2025-06-01T23:05:01.000Z","request_id":"r1","route":"default","provider":"openrouter","model":"sonnet","hop":1,"attempt":1,"failover":true,"status":"http_402","kind":"wall","action":"fallback"}
{"time":"2025-06-01T23:05:02.000Z","request_id":"r1","route":"default","provider":"deepseek","model":"chat","hop":2,"attempt":1,"failover":true,"status":"ok","action":"return","tokens_in":100,"tokens_out":20,"cost":0.002,"seconds":0.5}
{"time":"2025-06-01T23:40:00.000Z","request_id":"r2","route":"default","provider":"groq","model":"llama","hop":0,"status":"skipped_parked","action":"skip"}
{"time":"2025-06-01T23:40:00.000Z","request_id":"r2","route":"default","provider":"openrouter","model":"sonnet","hop":1,"attempt":1,"failover":true,"status":"ok","action":"return","tokens_in":200,"tokens_out":50,"cost":0.01}
{"time":"2025-06-01T23:59:59.999Z","request_id":"r3","route":"default","provider":"groq","model":"llama","hop":0,"attempt":1,"status":"http_503","kind":"transient","action":"retry"}
{"time":"2025-06-02T00:00:01.000Z","request_id":"r3","route":"default","provider":"groq","model":"llama","hop":0,"attempt":2,"status":"ok","action":"return","tokens_in":10,"tokens_out":5}
{"time":"2025-06-02T00:10:00.000Z","request_id":"r4","route":"batch","provider":"deepseek","model":"chat","hop":0,"attempt":1,"status":"ok","action":"return","tokens_in":50,"tokens_out":10,"cost":0.001}
{"time":"2025-06-02T00:20:00.000Z","request_id":"r5","route":"default","provider":"groq","model":"llama","hop":0,"attempt":1,"status":"http_429","kind":"wall","action":"failover"}
{"time":"2025-06-02T00:20:01.000Z","request_id":"r5","route":"default","provider":"openrouter","model":"sonnet","hop":1,"attempt":1,"failover":true,"status":"net_timeout","kind":"transient","action":"fallback"}
{"time":"2025-06-02T00:20:09.000Z","request_id":"r5","route":"default","provider":"deepseek","model":"chat","hop":2,"attempt":1,"failover":true,"status":"ok","action":"return","cost":0.003}
{"time":"2025-06-02T00:30:00.000Z","provider":"groq","model":"llama","status":"probe_failed","kind":"wall"}
{"time":"2025-06-02T00:31:00.000Z","provider":"groq","model":"llama","status":"probe_ok","cost":0.0001}
{"time":"2025-06-02T00:45:00.000Z","request_id":"r6","route":"default","provider":"deepseek","model":"chat","hop":0,"attempt":1,"status":"client_stalled","kind":"canceled","action":"fail"}
{"time":"2025-06-02T01:15:00.000Z","request_id":"r7","route":"default","provider":"groq","model":"llama","hop":0,"status":"skipped_parked","action":"skip"}
{"time":"2025-06-02T01:15:00.000Z","request_id":"r7","route":"default","provider":"openrouter","model":"sonnet","hop":1,"failover":true,"status":"skipped_no_key","action":"skip"}
{"time":"2025-06-02T01:15:00.000Z","request_id":"r7","route":"default","provider":"deepseek","model":"chat","hop":2,"attempt":1,"failover":true,"status":"http_500","action":"static"}
{"time":"2025-06-02T01:15:01.000Z","request_id":"r7","route":"default","provider":"detour","model":"static","hop":3,"failover":true,"status":"last_resort","action":"static"}
`

func seriesSummary(t *testing.T) *Summary {
	t.Helper()
	s := NewSummary()
	if err := Summarize(strings.NewReader(seriesLedger), Filter{}, s); err != nil {
		t.Fatal(err)
	}
	if s.lines != 18 || s.unreadable != 0 {
		t.Fatalf("read %d lines, %d unreadable; want 18, 0", s.lines, s.unreadable)
	}
	return s
}

func pct(v float64) *float64 { return &v }

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func row(b Bucket, name string, rows []SeriesRow) (Tally, bool) {
	for _, r := range rows {
		if r.Name == name {
			return r.Tally, true
		}
	}
	return Tally{}, false
}

func TestSeries_HourBucketsAcrossMidnight(t *testing.T) {
	got := seriesSummary(t).Series(time.Hour)
	want := []Bucket{
		{Start: utc("2025-06-01T23:00:00Z"), Tally: Tally{Calls: 5, Answers: 2, Failures: 3,
			FailuresByKind: map[string]int{"wall": 2, "transient": 1}, Skips: 1,
			ReachabilityPct: pct(40), TokensIn: 300, TokensOut: 70, CostUSD: 0.012}},
		{Start: utc("2025-06-02T00:00:00Z"), Tally: Tally{Calls: 6, Answers: 3, Failures: 3,
			FailuresByKind: map[string]int{"wall": 1, "transient": 1, "canceled": 1}, ClientStalled: 1,
			Probes: 2, ProbesFailed: 1, ReachabilityPct: pct(60), // 3 / (6 - 1 stalled)
			TokensIn: 60, TokensOut: 15, CostUSD: 0.0041}},
		{Start: utc("2025-06-02T01:00:00Z"), Tally: Tally{Calls: 1, Failures: 1,
			FailuresByKind: map[string]int{Unclassified: 1}, Skips: 2, LastResort: 1,
			ReachabilityPct: pct(0)}},
	}
	opt := cmp.FilterPath(func(p cmp.Path) bool {
		f := p.Last().String()
		return f == ".Providers" || f == ".Targets"
	}, cmp.Ignore())
	if d := cmp.Diff(want, got, opt); d != "" {
		t.Fatalf("hour buckets (-want +got):\n%s", d)
	}

	// The first hour, split by provider and by target.
	b := got[0]
	if d := cmp.Diff([]string{"deepseek", "groq", "openrouter"}, names(b.Providers)); d != "" {
		t.Errorf("providers of 23:00 (-want +got):\n%s", d)
	}
	g, _ := row(b, "groq", b.Providers)
	if d := cmp.Diff(Tally{Calls: 2, Failures: 2, FailuresByKind: map[string]int{"wall": 1, "transient": 1},
		Skips: 1, ReachabilityPct: pct(0)}, g); d != "" {
		t.Errorf("groq at 23:00 (-want +got):\n%s", d)
	}
	o, _ := row(b, "openrouter/sonnet", b.Targets)
	if d := cmp.Diff(Tally{Calls: 2, Answers: 1, Failures: 1, FailuresByKind: map[string]int{"wall": 1},
		ReachabilityPct: pct(50), TokensIn: 200, TokensOut: 50, CostUSD: 0.01}, o); d != "" {
		t.Errorf("openrouter/sonnet at 23:00 (-want +got):\n%s", d)
	}
	// Probes are no calls: groq's reachability at 00:00 is its one answer
	// of two calls, whatever its probes did.
	g, _ = row(got[1], "groq", got[1].Providers)
	if g.Calls != 2 || g.Answers != 1 || g.Probes != 2 || g.ProbesFailed != 1 || *g.ReachabilityPct != 50 {
		t.Errorf("groq at 00:00: %+v, want 2 calls, 1 answer, 2 probes (1 failed), 50%%", g)
	}
	if _, ok := row(got[2], "detour/static", got[2].Targets); !ok {
		t.Errorf("01:00 has no detour/static row: %+v", got[2].Targets)
	}
}

func names(rows []SeriesRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

func TestSeries_DayBucketsFoldHoursAtUTCMidnight(t *testing.T) {
	got := seriesSummary(t).Series(24 * time.Hour)
	if len(got) != 2 {
		t.Fatalf("%d day buckets, want 2: %+v", len(got), got)
	}
	if !got[0].Start.Equal(utc("2025-06-01T00:00:00Z")) || !got[1].Start.Equal(utc("2025-06-02T00:00:00Z")) {
		t.Errorf("day starts %v, %v; want both UTC midnights", got[0].Start, got[1].Start)
	}
	want := Tally{Calls: 7, Answers: 3, Failures: 4,
		FailuresByKind: map[string]int{"wall": 1, "transient": 1, "canceled": 1, Unclassified: 1},
		ClientStalled:  1, Skips: 2, LastResort: 1, Probes: 2, ProbesFailed: 1, ReachabilityPct: pct(50),
		TokensIn: 60, TokensOut: 15, CostUSD: 0.0041}
	if d := cmp.Diff(want, got[1].Tally); d != "" {
		t.Errorf("2025-06-02 (-want +got):\n%s", d)
	}
	ds, _ := row(got[1], "deepseek/chat", got[1].Targets)
	if ds.Calls != 4 || ds.Answers != 2 || *ds.ReachabilityPct != 66.7 {
		t.Errorf("deepseek/chat on 06-02: %+v, want 4 calls, 2 answers, 66.7%%", ds)
	}
}

func TestRoutes_AnswersByHopAndTarget(t *testing.T) {
	got := seriesSummary(t).Report().Routes
	want := []RouteUse{
		{Route: "default", Answers: 4, LastResort: 1, Hops: []HopUse{
			{Hop: 0, Answers: 1, Targets: []TargetAnswers{{Target: "groq/llama", Answers: 1}}},
			{Hop: 1, Answers: 1, Targets: []TargetAnswers{{Target: "openrouter/sonnet", Answers: 1}}},
			{Hop: 2, Answers: 2, Targets: []TargetAnswers{{Target: "deepseek/chat", Answers: 2}}},
		}},
		{Route: "batch", Answers: 1, Hops: []HopUse{
			{Hop: 0, Answers: 1, Targets: []TargetAnswers{{Target: "deepseek/chat", Answers: 1}}},
		}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
}

func TestRoutes_TargetsAtOneHopMostAnswersFirst(t *testing.T) {
	s := NewSummary()
	for i, p := range []string{"b", "a", "b", "c", "a", "b"} {
		s.Add(&ledger.Record{Time: utc("2025-06-01T10:00:00Z").Add(time.Duration(i) * time.Minute),
			Route: "r", Provider: p, Model: "m", Hop: 1, Status: ledger.StatusOK})
	}
	want := []TargetAnswers{{Target: "b/m", Answers: 3}, {Target: "a/m", Answers: 2}, {Target: "c/m", Answers: 1}}
	if d := cmp.Diff(want, s.Routes()[0].Hops[0].Targets); d != "" {
		t.Errorf("targets at hop 1 (-want +got):\n%s", d)
	}
}

func TestReportBy_BucketSizeAndJSON(t *testing.T) {
	s := seriesSummary(t)
	if r := s.Report(); r.Series != nil || r.BucketSeconds != 0 {
		t.Errorf("Report has a series: %d buckets of %d s", len(r.Series), r.BucketSeconds)
	}
	r := s.ReportBy(0) // about three hours: by 5 minutes (36 of them at most)
	if r.BucketSeconds != 300 || len(r.Series) != 9 {
		t.Errorf("ReportBy(0): %d buckets of %d s, want 9 of 300", len(r.Series), r.BucketSeconds)
	}
	if r := s.ReportBy(time.Hour); r.BucketSeconds != 3600 || len(r.Series) != 3 {
		t.Errorf("ReportBy(1h): %d buckets of %d s, want 3 of 3600", len(r.Series), r.BucketSeconds)
	}
	if r := s.ReportBy(90 * time.Minute); r.BucketSeconds != 7200 {
		t.Errorf("ReportBy(90m): buckets of %d s, want 7200 (rounded up to whole hours)", r.BucketSeconds)
	}
	s.Add(&ledger.Record{Time: utc("2025-06-09T12:00:00Z"), Provider: "groq", Model: "llama", Status: "ok"})
	if r := s.ReportBy(0); r.BucketSeconds != 86400 || len(r.Series) != 3 {
		t.Errorf("ReportBy(0) over 8 days: %d buckets of %d s, want 3 of 86400", len(r.Series), r.BucketSeconds)
	}

	b, err := json.Marshal(s.ReportBy(24 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"routes":[{"route":"default","answers":4,"last_resort":1,"hops":[{"hop":0,"answers":1,"targets":[{"target":"groq/llama","answers":1}]}`,
		`"bucket_seconds":86400`, `"series":[{"start":"2025-06-01T00:00:00Z","calls":5,"answers":2,"failures":3,"failures_by_kind":{"transient":1,"wall":2},"client_stalled":0,"skips":1,"last_resort":0,"probes":0,"probes_failed":0,"reachability_pct":40,"tokens_in":300,"tokens_out":70,"cost_usd":0.012,"providers":[{"name":"deepseek","calls":1,`,
	} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s:\n%s", key, b)
		}
	}
}

func TestSeries_MemoryBoundedByHoursAndTargets(t *testing.T) {
	s := NewSummary()
	start := utc("2025-06-01T00:00:00Z")
	for i := range 100_000 {
		st := ledger.StatusOK
		if i%3 == 0 {
			st = "http_429"
		}
		s.Add(&ledger.Record{Time: start.Add(time.Duration(i) * 2 * time.Second), Route: "default",
			Provider: []string{"a", "b", "c"}[i%3], Model: "m", Hop: i % 3, Status: st, Kind: "wall"})
	}
	// 100,000 records two seconds apart span 55.6 hours: more than a
	// day of minutes, so kept by 5 minutes (667 of them).
	if n := len(s.series.cells); n != 667*3 || s.series.size != 300 {
		t.Errorf("%d cells of %d s for 55.6 hours x 3 targets, want 667 x 3 of 300 s", n, s.series.size)
	}
	if n := len(s.series.routes[s.routes.ids["default"]].answers); n != 2 {
		t.Errorf("%d hop cells, want 2 (b at hop 1, c at hop 2)", n)
	}
}

func TestSeries_EmptyAndUntimed(t *testing.T) {
	s := NewSummary()
	if got := s.Series(0); len(got) != 0 {
		t.Errorf("empty summary: %d buckets", len(got))
	}
	if r := s.ReportBy(0); len(r.Series) != 0 || len(r.Routes) != 0 || r.BucketSeconds != 3600 {
		t.Errorf("empty ReportBy: %+v", r)
	}
	s.Add(&ledger.Record{Route: "x", Provider: "p", Model: "m", Status: "ok"}) // no time
	if got := s.Series(time.Hour); len(got) != 0 {
		t.Errorf("a record without time made a bucket: %+v", got)
	}
	if got := s.Routes(); len(got) != 1 || got[0].Answers != 1 {
		t.Errorf("a record without time is still its route's answer: %+v", got)
	}
}

// The issue: the HTML report bucketed by the hour whatever the range, so
// a four-minute run was one bar per provider. Buckets follow the span:
// minutes for a run of minutes, hours for a day, days for a month; cells
// fold as the span grows, and every record is still counted once.
func TestReportBy_BucketsFollowTheSpan(t *testing.T) {
	start := utc("2025-06-01T10:00:00Z")
	for _, tc := range []struct {
		name          string
		span, every   time.Duration
		bucket        int
		buckets, cell int
	}{
		{"four minutes", 4 * time.Minute, 10 * time.Second, 60, 4, 60},
		{"an hour", time.Hour, 30 * time.Second, 60, 60, 60},
		{"six hours", 6 * time.Hour, time.Minute, 300, 72, 60},
		{"a day", 24 * time.Hour, 5 * time.Minute, 3600, 24, 60},
		{"a month", 30 * 24 * time.Hour, 20 * time.Minute, 86400, 31, 3600}, // 10:00 to 09:40: 31 UTC days
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSummary()
			n := 0
			// Newest first: cells fold whatever order records come in.
			for d := tc.span - tc.every; d >= 0; d -= tc.every {
				s.Add(&ledger.Record{Time: start.Add(d), Route: "default", Provider: "p", Model: "m", Status: "ok"})
				n++
			}
			r := s.ReportBy(0)
			calls := 0
			for _, b := range r.Series {
				calls += b.Calls
			}
			if r.BucketSeconds != tc.bucket || len(r.Series) != tc.buckets || calls != n || s.series.size != int64(tc.cell) {
				t.Errorf("%d buckets of %d s (cells of %d s) counting %d calls; want %d of %d s (cells of %d s) counting %d",
					len(r.Series), r.BucketSeconds, s.series.size, calls, tc.buckets, tc.bucket, tc.cell, n)
			}
		})
	}
}
