package report

import (
	"math"
	"sort"
	"time"
)

// Count is one status and how many lines had it.
type Count struct {
	// Status is the ledger status ("http_429", "skipped_parked", ...).
	Status string `json:"status"`
	// N is how many lines had it.
	N int `json:"n"`
}

// Target is the summary of one target (provider/model).
type Target struct {
	// Target is "provider/model".
	Target   string `json:"target"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Calls counts attempts that sent something: every line but skips
	// (skipped_*) and last resorts.
	Calls int `json:"calls"`
	// Answers counts attempts with status "ok".
	Answers int `json:"answers"`
	// Failures counts calls that were not answered; FailuresByStatus
	// splits them, most frequent first.
	Failures         int     `json:"failures"`
	FailuresByStatus []Count `json:"failures_by_status"`
	// FailuresByScope splits the failures by how far each reached
	// (attempt, target, account, endpoint); failures written without a
	// scope are left out.
	FailuresByScope []ScopeCount `json:"failures_by_scope"`
	// FailoversIn counts requests that came to this target after another
	// failed (or was skipped) and sent to it; FailoversOut counts attempts
	// here that failed and sent the request on (failover or fallback).
	FailoversIn  int `json:"failovers_in"`
	FailoversOut int `json:"failovers_out"`
	// Degraded counts answers the caller got degraded (the ledger's
	// degraded: another model family than the route's first, or without
	// something the request carried).
	Degraded int `json:"degraded"`
	// Probes counts `detour probe` checks (probe_ok, probe_failed): off
	// the billing path, never calls, never in reachability.
	Probes       int `json:"probes"`
	ProbesFailed int `json:"probes_failed"`
	// Skips counts targets passed over without a send; SkipsByStatus
	// splits them.
	Skips         int     `json:"skips"`
	SkipsByStatus []Count `json:"skips_by_status"`
	// LastResort counts answers the route gave itself (cache or static).
	LastResort int `json:"last_resort"`
	// ReachabilityPct is 100*Answers/(Calls - client_stalled calls); null
	// when nothing was sent.
	ReachabilityPct *float64 `json:"reachability_pct"`
	// P50Seconds and P95Seconds are latency quantiles over answered
	// attempts, within about 2%, rounded to the millisecond; null when none
	// were answered.
	P50Seconds *float64 `json:"p50_seconds"`
	P95Seconds *float64 `json:"p95_seconds"`
	// TokensIn and TokensOut are the tokens reported, failures included.
	TokensIn  int64 `json:"tokens_in"`
	TokensOut int64 `json:"tokens_out"`
	// CostUSD is the summed cost in USD.
	CostUSD float64 `json:"cost_usd"`
	// First and Last are the times of the target's first and last lines.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// Wall is an interval in which a target was behind a wall: from its first
// failure of kind "wall" to its next answer.
type Wall struct {
	// Target is "provider/model".
	Target string `json:"target"`
	// Start is the time of the first wall failure.
	Start time.Time `json:"start"`
	// End is the time of the next answer; null while Open.
	End *time.Time `json:"end"`
	// Open is true when no answer followed within the lines read.
	Open bool `json:"open"`
	// Seconds is End-Start; 0 while Open.
	Seconds float64 `json:"seconds"`
	// Status and Reason are the first wall failure's.
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// Report is a Summary's result, ready to print or encode as JSON.
type Report struct {
	// Targets, by calls (then skips) descending, then name.
	Targets []Target `json:"targets"`
	// Walls, by start time.
	Walls []Wall `json:"walls"`
	// UnreadableLines counts lines skipped because they could not be read;
	// UnreadableAt names the first few (file:line).
	UnreadableLines int      `json:"unreadable_lines"`
	UnreadableAt    []string `json:"unreadable_at"`
	// Lines counts non-blank lines read; Matched those the filter kept.
	Lines   int `json:"lines"`
	Matched int `json:"matched"`
	// Flags are the routes whose head stays degraded (stale.go).
	Flags []RouteFlag `json:"flags"`
	// Routes says which hop, and which target, answered each route's
	// requests: the chain each route actually used. Most answers first.
	Routes []RouteUse `json:"routes"`
	// BucketSeconds is the size of Series' buckets (3600 for an hour,
	// 86400 for a day); 0, and omitted, when the Report has no Series.
	BucketSeconds int `json:"bucket_seconds,omitempty"`
	// Series is the records counted per time bucket, oldest first; buckets
	// with no records are left out. Only Summary.ReportBy fills it.
	Series []Bucket `json:"series,omitempty"`
}

// Report returns what s has counted so far. s can keep accumulating after.
func (s *Summary) Report() Report {
	r := Report{Targets: []Target{}, Walls: append([]Wall{}, s.walls...),
		UnreadableLines: s.unreadable, UnreadableAt: append([]string{}, s.where...),
		Lines: s.lines, Matched: s.matched, Routes: s.series.routeUse()}
	for _, t := range s.targets {
		o := Target{Target: t.key.provider + "/" + t.key.model, Provider: t.key.provider, Model: t.key.model,
			Calls: t.calls, Answers: t.answers, Failures: t.calls - t.answers, LastResort: t.lastResort,
			FailuresByStatus: sorted(t.failures), SkipsByStatus: sorted(t.skips), FailuresByScope: scopeCounts(t.scopes),
			FailoversIn: t.failoversIn, FailoversOut: t.failoversOut, Degraded: t.degraded, Probes: t.probes, ProbesFailed: t.probesFailed,
			TokensIn: t.tokensIn, TokensOut: t.tokensOut, CostUSD: math.Round(t.cost*1e6) / 1e6,
			First: t.first, Last: t.latest}
		for _, c := range o.SkipsByStatus {
			o.Skips += c.N
		}
		if att := t.calls - t.stalled; att > 0 {
			p := math.Round(1000*float64(t.answers)/float64(att)) / 10
			o.ReachabilityPct = &p
		}
		if v, ok := t.latency.Quantile(0.50); ok {
			v = math.Round(v*1000) / 1000
			o.P50Seconds = &v
		}
		if v, ok := t.latency.Quantile(0.95); ok {
			v = math.Round(v*1000) / 1000
			o.P95Seconds = &v
		}
		r.Targets = append(r.Targets, o)
	}
	sort.Slice(r.Targets, func(i, j int) bool {
		a, b := r.Targets[i], r.Targets[j]
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		if a.Skips != b.Skips {
			return a.Skips > b.Skips
		}
		return a.Target < b.Target
	})
	sort.SliceStable(r.Walls, func(i, j int) bool { return r.Walls[i].Start.Before(r.Walls[j].Start) })
	r.Flags = s.flags(&r)
	return r
}

// ScopeCount is one failure scope and how many failures had it.
type ScopeCount struct {
	Scope string `json:"scope"`
	N     int    `json:"n"`
}

func scopeCounts(m map[string]int) []ScopeCount {
	out := []ScopeCount{}
	for _, c := range sorted(m) {
		out = append(out, ScopeCount{c.Status, c.N})
	}
	return out
}

func sorted(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Status < out[j].Status
	})
	return out
}

// ParseTime reads a --since or --until value at now: an RFC 3339 time, or a
// duration back from now ("90m", "24h", "7d").
func ParseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if n := len(s); n > 1 && s[n-1] == 'd' {
		if days, err := strconvAtoi(s[:n-1]); err == nil && days >= 0 {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, errBadTime(s)
	}
	return now.Add(-d), nil
}
