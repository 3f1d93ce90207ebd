package redisstore

import (
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/health"
)

// A replica cut off from Redis (which keeps its data, and its other
// clients) learns parks; when the link heals, its changes are merged
// with what the others wrote meanwhile: the longer park wins either way.
func TestPartitionMerge(t *testing.T) {
	addr, _, _ := startRedis(t)
	px := startProxy(t, addr)
	o := Options{Namespace: "merge", OpTimeout: time.Second}
	a := open(t, px.addr, o, true)
	bStore := open(t, addr, o, true)
	ba, bb := health.NewWithStore(health.Settings{}, a), health.NewWithStore(health.Settings{}, bStore)
	const mine, theirs, fresh = "mine/m", "theirs/m", "fresh/m"
	now := t0
	for _, k := range []string{mine, theirs} {
		ba.Done(k, mustAllow(t, ba, k, now), health.Outcome{Kind: classify.Transient}, now)
	}

	px.cut()
	ba.Park(mine, now.Add(time.Hour), "wall", now) // longer than what the others learn
	ba.Park(theirs, now.Add(time.Minute), "wall", now)
	ba.Done(fresh, mustAllow(t, ba, fresh, now), health.Outcome{Kind: classify.Transient}, now)
	if a.Status().Up {
		t.Fatal("the cut-off store says it is up")
	}
	later := now.Add(time.Second)
	bb.Done(mine, mustAllow(t, bb, mine, later), health.Outcome{Kind: classify.Transient}, later)
	bb.Park(theirs, now.Add(2*time.Hour), "wall", later)
	before, _ := rawEntry(t, rawClient(t, addr), bStore, mine)

	px.heal()
	eventually(t, "the store to be up again", func() bool { return a.Status().Up })
	c := rawClient(t, addr)
	if e, _ := rawEntry(t, c, a, mine); e.State != health.Open || !e.Until.Equal(now.Add(time.Hour)) || e.Generation <= before.Generation {
		t.Errorf("Redis holds %+v for %s, want the local park until +1h, generation past %d", e, mine, before.Generation)
	}
	if e, _ := rawEntry(t, c, a, theirs); e.State != health.Open || !e.Until.Equal(now.Add(2*time.Hour)) {
		t.Errorf("Redis holds %+v for %s, want the other replica's park until +2h", e, theirs)
	}
	if e, _ := rawEntry(t, c, a, fresh); e.Failures != 1 {
		t.Errorf("Redis holds %+v for %s, want the local failure", e, fresh)
	}
	for _, want := range []struct {
		b     *health.Breaker
		key   string
		until time.Time
	}{{ba, theirs, now.Add(2 * time.Hour)}, {bb, mine, now.Add(time.Hour)}} {
		eventually(t, "both replicas to agree", func() bool {
			st, u := want.b.State(want.key, later)
			return st == health.Open && u.Equal(want.until)
		})
	}
}

func TestMerge(t *testing.T) {
	open := func(until time.Time, gen uint64, touched time.Time) health.Entry {
		return health.Entry{State: health.Open, Until: until, Generation: gen, Touched: touched}
	}
	closed := func(gen uint64, touched time.Time) health.Entry {
		return health.Entry{State: health.Closed, Generation: gen, Touched: touched}
	}
	h := time.Hour
	for i, tc := range []struct {
		cur, loc    health.Entry
		wantLocal   bool
		wantGen     uint64
		description string
	}{
		{closed(5, t0.Add(h)), open(t0.Add(2*h), 2, t0), true, 6, "a park beats a later close"},
		{open(t0.Add(3*h), 7, t0), open(t0.Add(2*h), 9, t0.Add(h)), false, 7, "the longer park wins"},
		{open(t0.Add(-h), 7, t0), closed(7, t0.Add(h)), true, 8, "an ended park is no park"},
		{closed(3, t0), closed(2, t0.Add(h)), true, 4, "then the later write"},
		{closed(3, t0.Add(h)), closed(9, t0), false, 3, "and not the earlier"},
	} {
		m, changed := merge(tc.cur, tc.loc)
		if changed != tc.wantLocal || m.Generation != tc.wantGen {
			t.Errorf("%d (%s): merge = %+v, %v", i, tc.description, m, changed)
		}
	}
}

func TestNewer(t *testing.T) {
	f := 10 * time.Minute
	cur := health.Entry{Generation: 5, Touched: t0}
	for _, tc := range []struct {
		in   health.Entry
		want bool
	}{
		{health.Entry{Generation: 6, Touched: t0.Add(-time.Hour)}, true},
		{health.Entry{Generation: 5, Touched: t0}, true},
		{health.Entry{Generation: 5, Touched: t0.Add(-time.Second)}, false},
		{health.Entry{Generation: 1, Touched: t0.Add(time.Minute)}, false},
		{health.Entry{Generation: 1, Touched: t0.Add(f)}, true}, // begun afresh after cur was forgotten
	} {
		if got := newer(tc.in, cur, f); got != tc.want {
			t.Errorf("newer(%+v, %+v) = %v", tc.in, cur, got)
		}
	}
}
