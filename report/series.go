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
	// Name is the provider ("groq") or the target ("groq/llama-3.3-70b"),
	// or the label of the "other" row.
	Name string `json:"name"`
	// Other marks the row of the providers or targets folded together
	// (see Report.Folded); it comes last.
	Other bool `json:"other,omitempty"`
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
	// Route is the route's name (or the target a request named directly),
	// or the label of the "other" row.
	Route string `json:"route"`
	// Other marks the row of the routes folded together (see
	// Report.Folded); it comes last.
	Other bool `json:"other,omitempty"`
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
	// Target is "provider/model", or the label of the "other" row.
	Target string `json:"target"`
	// Answers counts its answers.
	Answers int `json:"answers"`
	// Other marks the targets folded together (see Report.Folded); they
	// come last.
	Other bool `json:"other,omitempty"`
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
		addCount(&c.failures, kind, 1)
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
		addCount(&c.failures, k, v)
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

// cellKey names one target (an id, or otherID) of one provider (an id,
// or otherID) in one hour. A target kept apart has one provider; the
// targets folded are split by provider, so that each provider's rows stay
// whole.
type cellKey struct {
	hour int64 // hours since the Unix epoch, floored
	t, p int32
}

// hopKey names one target (an id, or otherID) at one hop of a route.
type hopKey struct {
	hop int
	t   int32
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
	routes      []*routeAcc // by route id
	otherRoute  *routeAcc   // the routes folded
	first, last time.Time   // of the timed records added
}

// add counts rec, of target ti, provider pi and route ri (ids, or
// otherID). A record without a time is left out of the series (it belongs
// to no hour) but still counts for its route.
func (a *seriesAcc) add(rec *ledger.Record, ti, pi, ri int32) {
	switch rec.Status {
	case ledger.StatusOK, ledger.StatusLastResort:
		r := a.route(ri)
		if rec.Status == ledger.StatusOK {
			r.answers[hopKey{rec.Hop, ti}]++
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
	k := cellKey{floorDiv(rec.Time.Unix(), 3600), ti, pi}
	c := a.cells[k]
	if c == nil {
		c = &cell{}
		a.cells[k] = c
	}
	c.add(rec)
}

// route returns route id's accumulator, made at the first answer.
func (a *seriesAcc) route(id int32) *routeAcc {
	p := &a.otherRoute
	if id != otherID {
		for int(id) >= len(a.routes) {
			a.routes = append(a.routes, nil)
		}
		p = &a.routes[id]
	}
	if *p == nil {
		*p = &routeAcc{answers: make(map[hopKey]int)}
	}
	return *p
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
// those with no records; nm names the targets and providers.
func (a *seriesAcc) buckets(by time.Duration, nm namer) []Bucket {
	type group struct {
		total     cell
		providers map[int32]*cell
		targets   map[int32]*cell
	}
	groups := map[int64]*group{}
	for k, c := range a.cells {
		start := time.Unix(k.hour*3600, 0).UTC().Truncate(by).Unix()
		g := groups[start]
		if g == nil {
			g = &group{providers: map[int32]*cell{}, targets: map[int32]*cell{}}
			groups[start] = g
		}
		g.total.merge(c)
		p := g.providers[k.p]
		if p == nil {
			p = &cell{}
			g.providers[k.p] = p
		}
		p.merge(c)
		t := g.targets[k.t]
		if t == nil {
			t = &cell{}
			g.targets[k.t] = t
		}
		t.merge(c)
	}
	out := make([]Bucket, 0, len(groups))
	for start, g := range groups {
		b := Bucket{Start: time.Unix(start, 0).UTC(), Tally: g.total.tally(),
			Providers: make([]SeriesRow, 0, len(g.providers)), Targets: make([]SeriesRow, 0, len(g.targets))}
		for id, c := range g.providers {
			b.Providers = append(b.Providers, SeriesRow{Name: nm.provider(id), Other: id == otherID, Tally: c.tally()})
		}
		for id, c := range g.targets {
			b.Targets = append(b.Targets, SeriesRow{Name: nm.target(id), Other: id == otherID, Tally: c.tally()})
		}
		sortRows(b.Providers)
		sortRows(b.Targets)
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// sortRows sorts rows by name, the "other" row last.
func sortRows(rows []SeriesRow) {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Other != rows[j].Other {
			return rows[j].Other
		}
		return rows[i].Name < rows[j].Name
	})
}

// routeUse returns every route's use, most answers (and last resorts)
// first, then by name, the "other" route last; nm names the routes and
// targets.
func (a *seriesAcc) routeUse(nm namer) []RouteUse {
	out := make([]RouteUse, 0, len(a.routes)+1)
	add := func(id int32, r *routeAcc) {
		u := RouteUse{Route: nm.route(id), Other: id == otherID, LastResort: r.lastResort, Hops: []HopUse{}}
		byHop := map[int]*HopUse{}
		for k, n := range r.answers {
			h := byHop[k.hop]
			if h == nil {
				h = &HopUse{Hop: k.hop}
				byHop[k.hop] = h
			}
			h.Answers += n
			h.Targets = append(h.Targets, TargetAnswers{Target: nm.target(k.t), Other: k.t == otherID, Answers: n})
			u.Answers += n
		}
		for _, h := range byHop {
			sort.Slice(h.Targets, func(i, j int) bool {
				a, b := h.Targets[i], h.Targets[j]
				if a.Other != b.Other {
					return b.Other
				}
				if a.Answers != b.Answers {
					return a.Answers > b.Answers
				}
				return a.Target < b.Target
			})
			u.Hops = append(u.Hops, *h)
		}
		sort.Slice(u.Hops, func(i, j int) bool { return u.Hops[i].Hop < u.Hops[j].Hop })
		out = append(out, u)
	}
	for id, r := range a.routes {
		if r != nil {
			add(int32(id), r)
		}
	}
	if a.otherRoute != nil {
		add(otherID, a.otherRoute)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Other != b.Other {
			return b.Other
		}
		if a.Answers+a.LastResort != b.Answers+b.LastResort {
			return a.Answers+a.LastResort > b.Answers+b.LastResort
		}
		return a.Route < b.Route
	})
	return out
}

// Routes returns which hop, and which target, answered each route's
// requests: RouteUse per route, most answers first.
func (s *Summary) Routes() []RouteUse { return s.series.routeUse(s.namer()) }

// Series returns the records counted so far per time bucket of by, oldest
// first, leaving out buckets with no records. by is rounded up to whole
// hours; buckets start at UTC midnight and every by after it (for a by that
// divides a day: an hour, a day). by 0 picks an hour when the records span
// at most AutoBucketMaxSpan, else a day. Records without a time are left
// out.
func (s *Summary) Series(by time.Duration) []Bucket {
	return s.series.buckets(bucketSize(by, s.series.first, s.series.last), s.namer())
}

// ReportBy returns Report with its Series in buckets of by (see Series; 0
// picks an hour or a day) and BucketSeconds set.
func (s *Summary) ReportBy(by time.Duration) Report {
	r := s.Report()
	by = bucketSize(by, s.series.first, s.series.last)
	r.BucketSeconds = int(by / time.Second)
	r.Series = s.series.buckets(by, s.namer())
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
