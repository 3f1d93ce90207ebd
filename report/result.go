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

// Target is the summary of one target (provider/model), or of the targets
// folded into the "other" row.
type Target struct {
	// Target is "provider/model", or the "other" row's label
	// ("(other: 199,998 targets)"), whose Provider and Model are "".
	Target   string `json:"target"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Other marks the row of the targets folded together (see
	// Report.Folded); it comes last.
	Other bool `json:"other,omitempty"`
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
	// TokensCacheRead and TokensCacheWrite are the input tokens the
	// provider's prompt cache served, and those written to it (counted in
	// TokensIn too); CacheHitPct is 100*TokensCacheRead/TokensIn, null
	// when no input was reported.
	TokensCacheRead  int64    `json:"tokens_cache_read"`
	TokensCacheWrite int64    `json:"tokens_cache_write"`
	CacheHitPct      *float64 `json:"cache_hit_pct"`
	// CostUSD is the summed cost in USD.
	CostUSD float64 `json:"cost_usd"`
	// LatestFailures holds, per failure kind, the latest failure the
	// provider named with its own request id (the ledger's
	// upstream_request_id), the one its support desk asks for first;
	// latest first. Empty for the "other" row.
	LatestFailures []FailureID `json:"latest_failures"`
	// Picks counts, for a member of a group of equals, its answers by how
	// the group put it where it was (the ledger's pick: "least_busy",
	// "most_room", "weighted", "affinity"); empty outside a group.
	Picks []Count `json:"picks"`
	// QuotaSkips are the declared limits its skipped_quota lines name,
	// with the most the router counted of each; empty when none.
	QuotaSkips []QuotaSkip `json:"quota_skips"`
	// First and Last are the times of the target's first and last lines.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// Wall is an interval in which a target was behind a wall: from its first
// failure of kind "wall" (a wall hit), or its first skipped_quota line (a
// wall seen coming: a declared quota spent, or its provider's headers
// saying nothing or too little is left, before any failure), to its next
// answer: the first answer to an attempt begun after the wall failure came
// back (an attempt already in flight ends nothing). Walls follow time
// across every ledger read, whatever order their lines come in; skips
// while parked keep a wall open.
type Wall struct {
	// Target is "provider/model".
	Target string `json:"target"`
	// Start is the time of the first wall failure (or quota skip).
	Start time.Time `json:"start"`
	// End is the time of the next answer; null while Open.
	End *time.Time `json:"end"`
	// Open is true when no answer followed within the lines read.
	Open bool `json:"open"`
	// Seconds is End-Start, never negative; while Open, the time from
	// Start to the report's end (its latest line): how long the wall has
	// lasted so far.
	Seconds float64 `json:"seconds"`
	// Status and Reason are the first wall failure's, or skip's.
	Status string `json:"status"`
	Reason string `json:"reason"`
	// UpstreamRequestID is the provider's own request id for the first
	// wall failure (the ledger's upstream_request_id); omitted when it
	// gave none, or the wall was seen coming.
	UpstreamRequestID string `json:"upstream_request_id,omitempty"`
	// SeenComing is set when the wall began with a skip, not a failure:
	// detour saw it coming, and it cost no failed call.
	SeenComing bool `json:"seen_coming"`
}

// FailureID is a failure the provider named with its own request id.
type FailureID struct {
	// Kind is the failure kind ("wall", "transient", ...; "unclassified"
	// when the line names none).
	Kind string `json:"kind"`
	// Status is its ledger status ("http_402").
	Status string `json:"status"`
	// Time is when its attempt began.
	Time time.Time `json:"time"`
	// UpstreamRequestID is the provider's request id (x-request-id,
	// request-id, cf-ray, ...).
	UpstreamRequestID string `json:"upstream_request_id"`
}

// Report is a Summary's result, ready to print or encode as JSON.
type Report struct {
	// Targets, by calls (then skips) descending, then name; the "other"
	// row, when there is one, last.
	Targets []Target `json:"targets"`
	// Walls, by start time: those of the targets kept apart (a target
	// folded into "other" has no wall listed).
	Walls []Wall `json:"walls"`
	// QuotaPeaks are the busiest windows of the declared quotas watched
	// (Options.Quotas), each window length of each quota that saw a send.
	QuotaPeaks []QuotaPeak `json:"quota_peaks"`
	// UnreadableLines counts lines skipped because they could not be read;
	// UnreadableAt names the first few (file:line).
	UnreadableLines int      `json:"unreadable_lines"`
	UnreadableAt    []string `json:"unreadable_at"`
	// StatusAlone counts the failures detour read from the HTTP status
	// alone: their body held no code or message it knows, so their kind
	// is the status's usual meaning (their reason ends in "read from the
	// status alone"). A high count is wording classify does not know yet.
	StatusAlone int `json:"status_alone"`
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
	// Top is the most targets, providers and routes kept apart, each in
	// a row of its own (Options.Top); 0 when there was no limit.
	Top int `json:"top"`
	// Folded says what the "other" rows hold, by kind; null when every
	// target, provider and route has a row of its own.
	Folded *Folding `json:"folded"`
}

// OtherName is the label of a count of statuses (or kinds, or scopes)
// past the most a count keeps (64), and the start of each "other" row's
// label.
const OtherName = "(other)"

// Folding says what the "other" rows of a Report hold: per kind, the keys
// past the Top with the most records (lines), folded into one row whose
// every count is exact. A kind with no "other" row is null.
type Folding struct {
	Targets   *FoldCount `json:"targets"`
	Providers *FoldCount `json:"providers"`
	Routes    *FoldCount `json:"routes"`
}

// FoldCount says what one kind's "other" row folds.
type FoldCount struct {
	// N is how many targets (providers, routes) the row folds.
	N int `json:"n"`
	// Approx is true when N is an estimate, within DistinctErrorPct
	// percent: they were too many to tell apart in bounded memory.
	Approx bool `json:"approx"`
	// MaxLines bounds the records (lines) of each one folded: none has
	// more.
	MaxLines int64 `json:"max_lines"`
	// TopExact is true when the rows kept apart are certainly those with
	// the most records: none folded has more than the fewest kept.
	TopExact bool `json:"top_exact"`
}

// Label is the "other" row's name for noun ("target"): "(other: 3
// targets)", or with an estimate "(other: ≈200,000 targets)".
func (c *FoldCount) Label(noun string) string {
	if c.N != 1 {
		noun += "s"
	}
	return OtherName[:len(OtherName)-1] + ": " + c.count() + " " + noun + ")"
}

// count writes N with its digits grouped, an estimate to three
// significant digits after "≈".
func (c *FoldCount) count() string {
	if c.Approx {
		return "≈" + groupDigits(int64(round3(c.N)))
	}
	return groupDigits(int64(c.N))
}

// round3 rounds n to three significant digits, as an estimate deserves.
func round3(n int) int {
	p := 1
	for n/p >= 1000 {
		p *= 10
	}
	return (n + p/2) / p * p
}

// Report returns what s has counted so far. s can keep accumulating after.
func (s *Summary) Report() Report {
	nm := s.namer()
	r := Report{Targets: []Target{}, Walls: []Wall{}, QuotaPeaks: s.quotaPeaks(),
		UnreadableLines: s.unreadable, UnreadableAt: append([]string{}, s.where...), StatusAlone: s.statusAlone,
		Lines: s.lines, Matched: s.matched, Routes: s.series.routeUse(nm), Top: s.top, Folded: nm.folded}
	for id, t := range s.accs {
		if t != nil {
			k := s.targets.keys[id]
			r.Targets = append(r.Targets, t.row(k.name(), k.provider, k.model))
			if t.walls != nil {
				for _, d := range t.walls.done() {
					r.Walls = append(r.Walls, d.wall(k.name(), s.latest))
				}
			}
		}
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
	if s.other != nil {
		o := s.other.row(nm.otherTarget, "", "")
		o.Other = true
		r.Targets = append(r.Targets, o)
	}
	sort.SliceStable(r.Walls, func(i, j int) bool {
		a, b := r.Walls[i], r.Walls[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		return a.Target < b.Target
	})
	r.Flags = s.flags(&r, nm)
	return r
}

// row is t's line of the report.
func (t *targetAcc) row(name, provider, model string) Target {
	o := Target{Target: name, Provider: provider, Model: model,
		Calls: t.calls, Answers: t.answers, Failures: t.calls - t.answers, LastResort: t.lastResort,
		FailuresByStatus: sorted(t.failures), SkipsByStatus: sorted(t.skips), FailuresByScope: scopeCounts(t.scopes),
		FailoversIn: t.failoversIn, FailoversOut: t.failoversOut, Degraded: t.degraded, Probes: t.probes, ProbesFailed: t.probesFailed,
		TokensIn: t.tokensIn, TokensOut: t.tokensOut, TokensCacheRead: t.cacheRead, TokensCacheWrite: t.cacheWrite,
		CostUSD: math.Round(t.cost*1e6) / 1e6,
		First:   t.first, Last: t.latest, LatestFailures: []FailureID{}, QuotaSkips: append([]QuotaSkip{}, t.quotaSkips...), Picks: sorted(t.picks)}
	for _, f := range t.ids {
		o.LatestFailures = append(o.LatestFailures, f)
	}
	sort.Slice(o.LatestFailures, func(i, j int) bool {
		a, b := o.LatestFailures[i], o.LatestFailures[j]
		if !a.Time.Equal(b.Time) {
			return a.Time.After(b.Time)
		}
		return a.Kind < b.Kind
	})
	for _, c := range o.SkipsByStatus {
		o.Skips += c.N
	}
	if t.tokensIn > 0 {
		p := math.Round(1000*float64(t.cacheRead)/float64(t.tokensIn)) / 10
		o.CacheHitPct = &p
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
	return o
}

// namer names the ids of each kind of key in a Report, "other" rows by
// their labels.
type namer struct {
	s                                      *Summary
	folded                                 *Folding
	otherTarget, otherProvider, otherRoute string
}

func (s *Summary) namer() namer {
	n := namer{s: s, otherTarget: OtherName, otherProvider: OtherName, otherRoute: OtherName}
	t, tok := foldCount(&s.targets, s.plan[kindTargets])
	p, pok := foldCount(&s.providers, s.plan[kindProviders])
	r, rok := foldCount(&s.routes, s.plan[kindRoutes])
	if !tok && !pok && !rok {
		return n
	}
	n.folded = &Folding{}
	if tok {
		n.folded.Targets, n.otherTarget = &t, t.Label("target")
	}
	if pok {
		n.folded.Providers, n.otherProvider = &p, p.Label("provider")
	}
	if rok {
		n.folded.Routes, n.otherRoute = &r, r.Label("route")
	}
	return n
}

func (n namer) target(id int32) string {
	if id == otherID {
		return n.otherTarget
	}
	return n.s.targets.keys[id].name()
}

func (n namer) provider(id int32) string {
	if id == otherID {
		return n.otherProvider
	}
	return n.s.providers.keys[id]
}

func (n namer) route(id int32) string {
	if id == otherID {
		return n.otherRoute
	}
	return n.s.routes.keys[id]
}

// foldCount says what t folded, by the plan of the passes before; false
// when it folded nothing.
func foldCount[K comparable](t *keyTable[K], p foldPlan) (FoldCount, bool) {
	if !t.refused {
		return FoldCount{}, false
	}
	c := FoldCount{N: p.candidates - p.kept, MaxLines: p.maxLines, TopExact: p.topExact}
	if !p.exact {
		c.Approx = true
		c.N = max(c.N, t.folded.estimate())
	}
	return c, true
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
