package report

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/detourhq/detour/ledger"
)

// The statuses of probe records: a half-open target's trial request, sent by
// detour itself and not by a client. They are not calls: a Series counts them
// apart (Probes, ProbesFailed), so they never move reachability.
const (
	statusProbeOK     = "probe_ok"
	statusProbeFailed = "probe_failed"
)

// Unclassified is the failure kind a Series counts a failure under when its
// record names no kind.
const Unclassified = "unclassified"

// AutoBucketMaxSpan is the longest span ReportBy(0) still counts by the
// hour; a longer one is counted by the day.
const AutoBucketMaxSpan = 72 * time.Hour

// Tally is what a bucket of a Series counted, for one provider, one target,
// or all of them.
type Tally struct {
	// Calls counts attempts that sent something: every record but skips
	// (skipped_*), last resorts and probes, as Target.Calls.
	Calls int `json:"calls"`
	// Answers counts calls with status "ok".
	Answers int `json:"answers"`
	// Failures counts calls that were not answered; FailuresByKind splits
	// them by the record's kind ("wall", "transient", ...; "unclassified"
	// when the record names none).
	Failures       int            `json:"failures"`
	FailuresByKind map[string]int `json:"failures_by_kind"`
	// ClientStalled counts calls ended because the client stopped reading
	// (status client_stalled, kind canceled): never the target's fault,
	// so left out of reachability.
	ClientStalled int `json:"client_stalled"`
	// Skips counts targets passed over without a send.
	Skips int `json:"skips"`
	// LastResort counts answers the route gave itself (cache or static).
	LastResort int `json:"last_resort"`
	// Probes counts probe records (status probe_ok or probe_failed): trial
	// sends to a half-open target, not calls; ProbesFailed those that
	// failed.
	Probes       int `json:"probes"`
	ProbesFailed int `json:"probes_failed"`
	// ReachabilityPct is 100*Answers/(Calls - client_stalled calls),
	// rounded to 0.1; null when nothing was sent.
	ReachabilityPct *float64 `json:"reachability_pct"`
	// TokensIn and TokensOut are the tokens reported, failures and probes
	// included.
	TokensIn  int64 `json:"tokens_in"`
	TokensOut int64 `json:"tokens_out"`
	// CostUSD is the summed cost in USD, probes included.
	CostUSD float64 `json:"cost_usd"`
}

// SeriesRow is one provider's or one target's Tally within a Bucket.
type SeriesRow struct {
	// Name is the provider ("groq") or the target ("groq/llama-3.3-70b").
	Name string `json:"name"`
	Tally
}

// Bucket is one time bucket of a Report's Series: the records from Start
// (inclusive) to Start + Report.BucketSeconds (exclusive).
type Bucket struct {
	// Start is the bucket's start, in UTC.
	Start time.Time `json:"start"`
	// Tally is the bucket's total over every target.
	Tally
	// Providers and Targets split the total, by name.
	Providers []SeriesRow `json:"providers"`
	Targets   []SeriesRow `json:"targets"`
}

// RouteUse is the chain a route actually used: how many of its answers came
// at each hop, and from which target.
type RouteUse struct {
	// Route is the route's name (or the target a request named directly).
	Route string `json:"route"`
	// Answers counts the route's answered attempts (status "ok").
	Answers int `json:"answers"`
	// LastResort counts answers the route gave itself (cache or static)
	// when every candidate failed.
	LastResort int `json:"last_resort"`
	// Hops splits Answers by hop, lowest first; hops that never answered
	// are left out.
	Hops []HopUse `json:"hops"`
}

// HopUse is the answers a route got at one hop.
type HopUse struct {
	// Hop is the record's hop: the 0-based position of the answering
	// target in the request's walk (0 is the first target tried; each
	// target passed over, skipped or failed, adds 1).
	Hop int `json:"hop"`
	// Answers counts the answers at this hop.
	Answers int `json:"answers"`
	// Targets splits Answers by target, most answers first.
	Targets []TargetAnswers `json:"targets"`
}

// TargetAnswers is how many answers one target gave.
type TargetAnswers struct {
	// Target is "provider/model".
	Target string `json:"target"`
	// Answers counts its answers.
	Answers int `json:"answers"`
}

// cell is what a Series keeps for one target in one hour.
type cell struct {
	calls, answers, stalled int
	skips, lastResort       int
	probes, probesFailed    int
	failures                map[string]int // by kind; nil until the first failure
	tokensIn, tokensOut     int64
	cost                    float64
}

func (c *cell) add(rec *ledger.Record) {
	c.tokensIn += int64(rec.TokensIn)
	c.tokensOut += int64(rec.TokensOut)
	c.cost += rec.Cost
	switch st := rec.Status; {
	case strings.HasPrefix(st, "skipped_"):
		c.skips++
	case st == ledger.StatusLastResort:
		c.lastResort++
	case st == statusProbeOK:
		c.probes++
	case st == statusProbeFailed:
		c.probes++
		c.probesFailed++
	case st == ledger.StatusOK:
		c.calls++
		c.answers++
	default:
		c.calls++
		if st == ledger.StatusClientStalled {
			c.stalled++
		}
		kind := rec.Kind
		if kind == "" {
			kind = Unclassified
		}
		if c.failures == nil {
			c.failures = make(map[string]int, 2)
		}
		c.failures[kind]++
	}
}

func (c *cell) merge(o *cell) {
	c.calls += o.calls
	c.answers += o.answers
	c.stalled += o.stalled
	c.skips += o.skips
	c.lastResort += o.lastResort
	c.probes += o.probes
	c.probesFailed += o.probesFailed
	c.tokensIn += o.tokensIn
	c.tokensOut += o.tokensOut
	c.cost += o.cost
	for k, v := range o.failures {
		if c.failures == nil {
			c.failures = make(map[string]int, len(o.failures))
		}
		c.failures[k] += v
	}
}

func (c *cell) tally() Tally {
	t := Tally{Calls: c.calls, Answers: c.answers, Failures: c.calls - c.answers,
		FailuresByKind: map[string]int{}, ClientStalled: c.stalled, Skips: c.skips, LastResort: c.lastResort,
		Probes: c.probes, ProbesFailed: c.probesFailed, TokensIn: c.tokensIn, TokensOut: c.tokensOut,
		CostUSD: math.Round(c.cost*1e6) / 1e6}
	for k, v := range c.failures {
		t.FailuresByKind[k] = v
	}
	if att := c.calls - c.stalled; att > 0 {
		p := math.Round(1000*float64(c.answers)/float64(att)) / 10
		t.ReachabilityPct = &p
	}
	return t
}

// cellKey names one target in one hour.
type cellKey struct {
	hour   int64 // hours since the Unix epoch, floored
	target targetKey
}

// hopKey names one target at one hop of a route.
type hopKey struct {
	hop    int
	target targetKey
}

// routeAcc is what a Series keeps for one route.
type routeAcc struct {
	answers    map[hopKey]int
	lastResort int
}

// seriesAcc is a Summary's time series (hour by target) and route use (hop
// by target). Its zero value is ready to use. Memory is bounded by hours x
// targets and routes x hops x targets, not by lines: a year of hours is
// 8,760 cells per target.
type seriesAcc struct {
	cells       map[cellKey]*cell
	routes      map[string]*routeAcc
	first, last time.Time // of the timed records added
}

// add counts rec. A record without a time is left out of the series (it
// belongs to no hour) but still counts for its route.
func (a *seriesAcc) add(rec *ledger.Record) {
	tk := targetKey{rec.Provider, rec.Model}
	switch rec.Status {
	case ledger.StatusOK, ledger.StatusLastResort:
		if a.routes == nil {
			a.routes = make(map[string]*routeAcc)
		}
		r := a.routes[rec.Route]
		if r == nil {
			r = &routeAcc{answers: make(map[hopKey]int)}
			a.routes[rec.Route] = r
		}
		if rec.Status == ledger.StatusOK {
			r.answers[hopKey{rec.Hop, tk}]++
		} else {
			r.lastResort++
		}
	}
	if rec.Time.IsZero() {
		return
	}
	if a.first.IsZero() || rec.Time.Before(a.first) {
		a.first = rec.Time
	}
	if rec.Time.After(a.last) {
		a.last = rec.Time
	}
	if a.cells == nil {
		a.cells = make(map[cellKey]*cell)
	}
	k := cellKey{floorDiv(rec.Time.Unix(), 3600), tk}
	c := a.cells[k]
	if c == nil {
		c = &cell{}
		a.cells[k] = c
	}
	c.add(rec)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// bucketSize returns by as ReportBy uses it: 0 picks by span; anything else
// is rounded up to whole hours.
func bucketSize(by time.Duration, first, last time.Time) time.Duration {
	if by <= 0 {
		if last.Sub(first) <= AutoBucketMaxSpan {
			return time.Hour
		}
		return 24 * time.Hour
	}
	return ((by + time.Hour - 1) / time.Hour) * time.Hour
}

// buckets folds the hours into buckets of by (whole hours), leaving out
// those with no records.
func (a *seriesAcc) buckets(by time.Duration) []Bucket {
	type group struct {
		total     cell
		providers map[string]*cell
		targets   map[targetKey]*cell
	}
	groups := map[int64]*group{}
	for k, c := range a.cells {
		start := time.Unix(k.hour*3600, 0).UTC().Truncate(by).Unix()
		g := groups[start]
		if g == nil {
			g = &group{providers: map[string]*cell{}, targets: map[targetKey]*cell{}}
			groups[start] = g
		}
		g.total.merge(c)
		p := g.providers[k.target.provider]
		if p == nil {
			p = &cell{}
			g.providers[k.target.provider] = p
		}
		p.merge(c)
		t := g.targets[k.target]
		if t == nil {
			t = &cell{}
			g.targets[k.target] = t
		}
		t.merge(c)
	}
	out := make([]Bucket, 0, len(groups))
	for start, g := range groups {
		b := Bucket{Start: time.Unix(start, 0).UTC(), Tally: g.total.tally(),
			Providers: make([]SeriesRow, 0, len(g.providers)), Targets: make([]SeriesRow, 0, len(g.targets))}
		for name, c := range g.providers {
			b.Providers = append(b.Providers, SeriesRow{name, c.tally()})
		}
		for k, c := range g.targets {
			b.Targets = append(b.Targets, SeriesRow{k.provider + "/" + k.model, c.tally()})
		}
		sort.Slice(b.Providers, func(i, j int) bool { return b.Providers[i].Name < b.Providers[j].Name })
		sort.Slice(b.Targets, func(i, j int) bool { return b.Targets[i].Name < b.Targets[j].Name })
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// routeUse returns every route's use, most answers (and last resorts)
// first, then by name.
func (a *seriesAcc) routeUse() []RouteUse {
	out := make([]RouteUse, 0, len(a.routes))
	for name, r := range a.routes {
		u := RouteUse{Route: name, LastResort: r.lastResort, Hops: []HopUse{}}
		byHop := map[int]*HopUse{}
		for k, n := range r.answers {
			h := byHop[k.hop]
			if h == nil {
				h = &HopUse{Hop: k.hop}
				byHop[k.hop] = h
			}
			h.Answers += n
			h.Targets = append(h.Targets, TargetAnswers{k.target.provider + "/" + k.target.model, n})
			u.Answers += n
		}
		for _, h := range byHop {
			sort.Slice(h.Targets, func(i, j int) bool {
				if h.Targets[i].Answers != h.Targets[j].Answers {
					return h.Targets[i].Answers > h.Targets[j].Answers
				}
				return h.Targets[i].Target < h.Targets[j].Target
			})
			u.Hops = append(u.Hops, *h)
		}
		sort.Slice(u.Hops, func(i, j int) bool { return u.Hops[i].Hop < u.Hops[j].Hop })
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Answers+a.LastResort != b.Answers+b.LastResort {
			return a.Answers+a.LastResort > b.Answers+b.LastResort
		}
		return a.Route < b.Route
	})
	return out
}

// Routes returns which hop, and which target, answered each route's
// requests: RouteUse per route, most answers first.
func (s *Summary) Routes() []RouteUse { return s.series.routeUse() }

// Series returns the records counted so far per time bucket of by, oldest
// first, leaving out buckets with no records. by is rounded up to whole
// hours; buckets start at UTC midnight and every by after it (for a by that
// divides a day: an hour, a day). by 0 picks an hour when the records span
// at most AutoBucketMaxSpan, else a day. Records without a time are left
// out.
func (s *Summary) Series(by time.Duration) []Bucket {
	return s.series.buckets(bucketSize(by, s.series.first, s.series.last))
}

// ReportBy returns Report with its Series in buckets of by (see Series; 0
// picks an hour or a day) and BucketSeconds set.
func (s *Summary) ReportBy(by time.Duration) Report {
	r := s.Report()
	by = bucketSize(by, s.series.first, s.series.last)
	r.BucketSeconds = int(by / time.Second)
	r.Series = s.series.buckets(by)
	return r
}

// Span returns the time of the first and the last record r counted (zero
// times when it counted none), from its targets.
func (r Report) Span() (first, last time.Time) {
	for _, t := range r.Targets {
		if !t.First.IsZero() && (first.IsZero() || t.First.Before(first)) {
			first = t.First
		}
		if t.Last.After(last) {
			last = t.Last
		}
	}
	return first, last
}
