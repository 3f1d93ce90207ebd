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
// hour (or finer); a longer one is counted by the day.
const AutoBucketMaxSpan = 72 * time.Hour

// MaxAutoBuckets is the most bucket lengths ReportBy(0) spreads a span
// over: it picks the smallest of AutoBucketSizes that needs no more (a day
// past them all). A run of minutes is counted by the minute, a day by the hour,
// a month by the day.
const MaxAutoBuckets = 72

// AutoBucketSizes are the buckets ReportBy(0) picks from, smallest first.
var AutoBucketSizes = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour}

// cellSizes are the sizes a Series keeps its cells in, finest first: the
// finest whose cells over the span number at most maxCellSlots, an hour
// past them all. Each divides the next and a day, so cells fold into any
// bucket of AutoBucketSizes, or of whole hours.
var cellSizes = []int64{60, 5 * 60, 15 * 60, 3600}

// maxCellSlots bounds the cells a target has over the span (a day of
// minutes) until they are hours.
const maxCellSlots = 24 * 60

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

// cell is what a Series keeps for one target in one cell of time (a
// minute, ..., an hour: seriesAcc.size).
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
// or otherID) in one cell of time. A target kept apart has one provider;
// the targets folded are split by provider, so that each provider's rows
// stay whole.
type cellKey struct {
	slot int64 // cells since the Unix epoch, floored
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

// seriesAcc is a Summary's time series (cell by target) and route use
// (hop by target). Its zero value is ready to use. Its cells are a minute
// long while the records span a day or less, then 5 minutes, 15 minutes,
// and an hour once they span more than 15 days, folded as the span grows.
// Memory is bounded by targets x the larger of 1,440 cells and the span's
// hours, and routes x hops x targets, not by lines: a year of hours is
// 8,760 cells per target.
type seriesAcc struct {
	cells       map[cellKey]*cell
	size        int64       // seconds a cell spans (cellSizes); 0 until the first
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
		a.size = cellSizes[0]
	}
	a.fold()
	k := cellKey{floorDiv(rec.Time.Unix(), a.size), ti, pi}
	c := a.cells[k]
	if c == nil {
		c = &cell{}
		a.cells[k] = c
	}
	c.add(rec)
}

// fold makes the cells larger while the span holds more than maxCellSlots
// of them, merging those that fall into one.
func (a *seriesAcc) fold() {
	span := a.last.Unix() - a.first.Unix()
	size := a.size
	for i := 0; i < len(cellSizes)-1 && (size < cellSizes[i] || span/cellSizes[i] > maxCellSlots); i++ {
		size = cellSizes[i+1]
	}
	if size == a.size {
		return
	}
	cells := make(map[cellKey]*cell, len(a.cells))
	for k, c := range a.cells {
		nk := cellKey{floorDiv(k.slot*a.size, size), k.t, k.p}
		if to := cells[nk]; to != nil {
			to.merge(c)
		} else {
			cells[nk] = c
		}
	}
	a.cells, a.size = cells, size
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

// bucketSize returns by as ReportBy uses it: 0 picks by span (the
// smallest of AutoBucketSizes giving at most MaxAutoBuckets buckets, and
// no smaller than the cells kept); anything else is rounded up to whole
// hours.
func (a *seriesAcc) bucketSize(by time.Duration) time.Duration {
	if by > 0 {
		return ((by + time.Hour - 1) / time.Hour) * time.Hour
	}
	if a.size == 0 {
		return time.Hour // nothing timed: any size will do
	}
	span := a.last.Sub(a.first)
	for _, size := range AutoBucketSizes {
		if size >= time.Duration(a.size)*time.Second && span <= size*MaxAutoBuckets {
			return size
		}
	}
	return AutoBucketSizes[len(AutoBucketSizes)-1]
}

// buckets folds the cells into buckets of by (a whole number of cells),
// leaving out those with no records; nm names the targets and providers.
func (a *seriesAcc) buckets(by time.Duration, nm namer) []Bucket {
	type group struct {
		total     cell
		providers map[int32]*cell
		targets   map[int32]*cell
	}
	groups := map[int64]*group{}
	for k, c := range a.cells {
		start := time.Unix(k.slot*a.size, 0).UTC().Truncate(by).Unix()
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
// divides a day: an hour, a day). by 0 picks from the span: the smallest of
// AutoBucketSizes (a minute, 5 minutes, 15 minutes, an hour, a day) giving
// at most MaxAutoBuckets buckets, so minutes for a run of minutes, hours
// for a day, days for a month. Records without a time are left out.
func (s *Summary) Series(by time.Duration) []Bucket {
	return s.series.buckets(s.series.bucketSize(by), s.namer())
}

// ReportBy returns Report with its Series in buckets of by (see Series; 0
// picks from the span) and BucketSeconds set.
func (s *Summary) ReportBy(by time.Duration) Report {
	r := s.Report()
	by = s.series.bucketSize(by)
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
