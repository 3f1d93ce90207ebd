package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/ledger"
)

// MaxUnreadableShown is how many unreadable lines a Summary remembers by
// place (file:line); the rest are only counted.
const MaxUnreadableShown = 3

// Filter selects the records a Summary counts. Its zero value selects all.
type Filter struct {
	// Since and Until bound the record's time: Since inclusive, Until
	// exclusive; a zero time does not bound.
	Since, Until time.Time
	// Route keeps only records of this route; "" keeps all.
	Route string
	// Provider keeps only records of this provider; "" keeps all.
	Provider string
}

// Match reports whether f selects rec.
func (f Filter) Match(rec *ledger.Record) bool {
	if !f.Since.IsZero() && rec.Time.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !rec.Time.Before(f.Until) {
		return false
	}
	if f.Route != "" && rec.Route != f.Route {
		return false
	}
	if f.Provider != "" && rec.Provider != f.Provider {
		return false
	}
	return true
}

// targetKey names a target without building its "provider/model" string.
type targetKey struct{ provider, model string }

// name is the target's "provider/model".
func (k targetKey) name() string { return k.provider + "/" + k.model }

// compareTargets orders targets by provider, then model.
func compareTargets(a, b targetKey) int {
	return cmp.Or(cmp.Compare(a.provider, b.provider), cmp.Compare(a.model, b.model))
}

// maxStatuses is the most distinct statuses (or scopes, or kinds) one
// count keeps; past it, new ones are counted under OtherName. detour
// writes a few dozen words; more is a ledger written by something else,
// and its counts stay bounded all the same.
const maxStatuses = 64

// addCount counts n more k in *m, made at the first; past maxStatuses
// keys, a new k is counted as OtherName.
func addCount(m *map[string]int, k string, n int) {
	if *m == nil {
		*m = make(map[string]int, 2)
	}
	if _, ok := (*m)[k]; !ok && len(*m) >= maxStatuses {
		k = OtherName
	}
	(*m)[k] += n
}

// targetAcc is what a Summary keeps for one target, or for the targets
// folded into "other".
type targetAcc struct {
	calls         int
	answers       int
	stalled       int
	lastResort    int
	failures      map[string]int
	scopes        map[string]int
	skips         map[string]int
	probes        int
	probesFailed  int
	failoversIn   int
	failoversOut  int
	degraded      int
	tokensIn      int64
	tokensOut     int64
	cacheRead     int64 // input tokens the provider's prompt cache served
	cacheWrite    int64 // input tokens written to it
	cost          float64
	latency       Histogram
	walls         *wallTrack           // nil until its first wall; never for "other"
	ids           map[string]FailureID // by kind: the latest failure with the provider's request id
	quotaSkips    []QuotaSkip          // the declared limits its skipped_quota lines name
	picks         map[string]int       // as a group member: how it came first, by pick ("least_busy", "affinity")
	first, latest time.Time
}

// Summary accumulates ledger records. Feed it with Add, AddLine, Summarize or
// SummarizeFile (any number of readers), then call Report. A Summary from
// NewSummary keeps every target, provider and route apart: its memory grows
// with them (and with hours, statuses and walls), not with lines. Read
// keeps at most Options.Top of each apart, in memory bounded by that.
// Walls are placed by time, not by the order lines come in, as long as
// each target's lines come about in the order they were written (Read
// merges many files so); lines of one file given after another's are
// placed as well as they can be, never with a negative duration.
type Summary struct {
	quotas     []*quotaTrack            // the declared quotas watched (WatchQuotas)
	quotaOf    map[string][]*quotaTrack // by target: the quotas its sends count toward
	lines      int
	matched    int
	unreadable int
	where      []string
	// statusAlone counts the failures whose reason says they were read
	// from the HTTP status alone (classify.StatusAloneNote).
	statusAlone int
	latest      time.Time // the latest record's time

	targets   keyTable[targetKey]
	providers keyTable[string]
	routes    keyTable[string]
	accs      []*targetAcc            // by target id
	other     *targetAcc              // the targets folded; nil until one is
	clock     wallClock               // for the walls of the targets kept apart (walls.go)
	series    seriesAcc               // per hour and per route (series.go)
	heads     map[int32]map[int32]int // per route id, hop-0 records by target id

	// top is Options.Top; plan, what the passes before the last learnt
	// of each kind of key (read.go).
	top  int
	plan [kinds]foldPlan
	// sketching: the first of Read's passes, which, when a kind has more
	// keys than top, stops accumulating and only finds the keys with the
	// most records, in sk.
	sketching  bool
	sketchKeys int // the size of each of sk's sketches
	sk         *keySketches
	// countOnly: the second pass, which only counts the records of the
	// keys its tables were fixed to.
	countOnly bool
}

// NewSummary returns an empty Summary that keeps every target, provider
// and route apart.
func NewSummary() *Summary {
	return &Summary{targets: keyTable[targetKey]{hash: hashTarget}, providers: keyTable[string]{hash: hashKey},
		routes: keyTable[string]{hash: hashKey}}
}

// ParseLine parses one ledger line into a record, every field filled as
// json.Unmarshal would fill it. It fails on a line that is not a JSON
// object, is not valid JSON for a ledger.Record, or has no provider or
// status. The record never refers to b, which the caller may reuse. Safe
// for concurrent use.
func ParseLine(b []byte) (ledger.Record, error) {
	var rec ledger.Record
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return rec, errors.New("not a JSON object")
	}
	if !scanRecord(b, &rec) {
		// The scanner leaves what it does not read exactly as
		// encoding/json does (invalid JSON, odd keys, ...) to it.
		var slow ledger.Record // apart from rec, which stays on the stack
		if err := json.Unmarshal(b, &slow); err != nil {
			return ledger.Record{}, err
		}
		rec = slow
	}
	if rec.Provider == "" || rec.Status == "" {
		return rec, errors.New("not a ledger record: no provider or status")
	}
	return rec, nil
}

// AddLine parses one line and adds its record when f selects it. A blank line
// is ignored; an unreadable one is counted, with where ("file:line") kept for
// the first few, and its error returned for information only.
func (s *Summary) AddLine(b []byte, f Filter, where string) error {
	err := s.addLine(b, f)
	if err != nil {
		s.noteUnreadable(where)
	}
	return err
}

func (s *Summary) addLine(b []byte, f Filter) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	s.lines++
	rec, err := ParseLine(b)
	if err != nil {
		s.unreadable++
		return err
	}
	if f.Match(&rec) {
		s.Add(&rec)
	}
	return nil
}

func (s *Summary) noteUnreadable(where string) {
	if len(s.where) < MaxUnreadableShown {
		s.where = append(s.where, where)
	}
}

// Add counts one record, unfiltered.
func (s *Summary) Add(rec *ledger.Record) {
	s.matched++
	if rec.Time.After(s.latest) {
		s.latest = rec.Time
	}
	k := targetKey{rec.Provider, rec.Model}
	if s.sk != nil {
		s.sk.add(k, rec.Provider, rec.Route)
		return
	}
	ti, pi, ri := s.targets.id(k), s.providers.id(rec.Provider), s.routes.id(rec.Route)
	if s.sketching && (ti == otherID || pi == otherID || ri == otherID) {
		s.startSketch(k, rec, ti, pi, ri)
		return
	}
	if s.countOnly {
		return
	}
	s.clock.see(rec)
	if s.quotaOf != nil {
		s.addQuotaUse(rec)
	}
	s.series.add(rec, ti, pi, ri)
	if rec.Hop == 0 && rec.Route != "" && ri != otherID && !strings.HasPrefix(rec.Status, "probe_") {
		if s.heads == nil {
			s.heads = map[int32]map[int32]int{}
		}
		m := s.heads[ri]
		if m == nil {
			m = map[int32]int{}
			s.heads[ri] = m
		}
		m[ti]++
	}
	t := s.acc(ti)
	if t.first.IsZero() || rec.Time.Before(t.first) {
		t.first = rec.Time
	}
	if rec.Time.After(t.latest) {
		t.latest = rec.Time
	}
	t.tokensIn += int64(rec.TokensIn)
	t.tokensOut += int64(rec.TokensOut)
	t.cacheRead += int64(rec.TokensCacheRead)
	t.cacheWrite += int64(rec.TokensCacheWrite)
	t.cost += rec.Cost
	if rec.Failover && rec.Attempt <= 1 && rec.Status != ledger.StatusLastResort && !strings.HasPrefix(rec.Status, "skipped_") &&
		!strings.HasPrefix(rec.Status, "probe_") {
		t.failoversIn++ // the walk came here from another target and sent
	}
	if rec.Action == "failover" || rec.Action == "fallback" {
		t.failoversOut++ // and left it for another
	}
	switch st := rec.Status; {
	case st == ledger.StatusProbeOK || st == ledger.StatusProbeFailed:
		// Off the billing path: neither a call nor an answer.
		t.probes++
		if st == ledger.StatusProbeFailed {
			t.probesFailed++
		}
		return
	case strings.HasPrefix(st, "skipped_"):
		addCount(&t.skips, st, 1)
		if st == ledger.StatusSkippedQuota {
			t.noteQuotaSkip(rec.Reason)
		}
		if st == ledger.StatusSkippedQuota && ti != otherID {
			// A wall seen coming: no failure, a quota spent.
			t.track().addMark(rec, true, s.clock.settled())
		}
		return
	case st == ledger.StatusLastResort:
		t.lastResort++
		return
	case st == ledger.StatusOK:
		if rec.Pick != "" {
			how, _, _ := strings.Cut(rec.Pick, ":")
			addCount(&t.picks, how, 1)
		}
		t.calls++
		t.answers++
		if rec.Degraded {
			t.degraded++
		}
		t.latency.Add(rec.Seconds)
		if t.walls != nil {
			t.walls.addAnswer(rec.Time, s.clock.settled())
		}
	default:
		t.calls++
		if st == ledger.StatusClientStalled {
			t.stalled++
		}
		addCount(&t.failures, st, 1)
		if strings.Contains(rec.Reason, classify.StatusAloneNote) {
			s.statusAlone++
		}
		if rec.Scope != "" {
			addCount(&t.scopes, rec.Scope, 1)
		}
		// The walls of the targets folded into "other" are not kept: they
		// would need a place per target.
		if ti == otherID {
			return
		}
		if rec.ProviderRequestID != "" {
			t.noteID(rec)
		}
		if rec.Kind == "wall" {
			t.track().addMark(rec, false, s.clock.settled())
		}
	}
}

// acc returns the accumulator of target id, made at the first record.
func (s *Summary) acc(id int32) *targetAcc {
	if id == otherID {
		if s.other == nil {
			s.other = &targetAcc{}
		}
		return s.other
	}
	for int(id) >= len(s.accs) {
		s.accs = append(s.accs, nil)
	}
	t := s.accs[id]
	if t == nil {
		t = &targetAcc{}
		s.accs[id] = t
	}
	return t
}

// track returns t's walls, made at the first mark.
func (t *targetAcc) track() *wallTrack {
	if t.walls == nil {
		t.walls = &wallTrack{}
	}
	return t.walls
}

// noteID keeps rec, a failure with the provider's request id, when it is
// the latest of its kind.
func (t *targetAcc) noteID(rec *ledger.Record) {
	kind := cmp.Or(rec.Kind, Unclassified)
	if t.ids == nil {
		t.ids = make(map[string]FailureID, 2)
	}
	cur, ok := t.ids[kind]
	if !ok && len(t.ids) >= maxStatuses {
		return
	}
	if !ok || rec.Time.After(cur.Time) {
		t.ids[kind] = FailureID{Kind: kind, Status: rec.Status, Time: rec.Time, UpstreamRequestID: rec.ProviderRequestID}
	}
}
