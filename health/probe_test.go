package health

import (
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
)

// parkedByWall returns a breaker with key parked by a wall until t0+1h.
func parkedByWall(t *testing.T) *Breaker {
	t.Helper()
	b := New(Settings{})
	p := allow(t, b, key, t0)
	b.Done(key, p, Outcome{Kind: classify.Wall, Status: "http_401", Until: t0.Add(time.Hour), Reason: "bad key"}, t0)
	return b
}

func TestBeginProbe_OnlyWhenParkedAndNoProbeOut(t *testing.T) {
	b := New(Settings{})
	if _, _, ok := b.BeginProbe(key, t0); ok {
		t.Fatal("BeginProbe on a key never seen: ok, want refused")
	}
	b.Done(key, allow(t, b, key, t0), Outcome{}, t0)
	if _, _, ok := b.BeginProbe(key, t0); ok {
		t.Fatal("BeginProbe on a closed key: ok, want refused")
	}
	b = parkedByWall(t)
	now := t0.Add(59 * time.Minute) // the lease (ProbeTimeout, 2 min) outlasts the park
	p, before, ok := b.BeginProbe(key, now)
	if !ok || !p.Probe || before.State != Open || before.Status != "http_401" {
		t.Fatalf("BeginProbe on a parked key = %+v, %+v, %v; want a probe permit and the open entry", p, before, ok)
	}
	if _, _, ok := b.BeginProbe(key, now); ok {
		t.Fatal("a second BeginProbe while the lease is out: ok, want refused")
	}
	// The park ends while the lease is out: live traffic must not probe too.
	if pe := refused(t, b, key, t0.Add(time.Hour+time.Second)); pe.State != HalfOpen {
		t.Fatalf("Allow during the lease after the park: state %s, want half_open", pe.State)
	}
}

func TestBeginProbe_RefusedWhileLiveTrafficProbes(t *testing.T) {
	b := parkedByWall(t)
	after := t0.Add(time.Hour + time.Second)
	live := allow(t, b, key, after)
	if !live.Probe {
		t.Fatal("first Allow after the park: want the probe permit")
	}
	if _, _, ok := b.BeginProbe(key, after); ok {
		t.Fatal("BeginProbe while live traffic's probe is out: ok, want refused")
	}
}

func TestEndProbe_OKClosesAtOnce(t *testing.T) {
	b := parkedByWall(t)
	now := t0.Add(time.Minute)
	p, _, _ := b.BeginProbe(key, now)
	b.EndProbe(key, p, true, Outcome{}, now)
	got := allow(t, b, key, now)
	if got.Probe {
		t.Fatal("after a good probe the key should be closed, not on trial")
	}
	if e := b.Get(key, now); e.State != Closed || e.Failures != 0 || e.Reason != "" {
		t.Fatalf("entry after a good probe = %+v, want closed and clean", e)
	}
}

func TestEndProbe_FailureKeepsTheParkOrParksLonger(t *testing.T) {
	cases := []struct {
		name      string
		at        time.Time
		o         Outcome
		wantState State
		wantUntil time.Time
	}{
		{"transient during the park keeps it", t0.Add(time.Minute),
			Outcome{Kind: classify.Transient, Status: "http_503"}, Open, t0.Add(time.Hour)},
		{"wall with a later reset parks longer", t0.Add(time.Minute),
			Outcome{Kind: classify.Wall, Status: "http_401", Until: t0.Add(3 * time.Hour)}, Open, t0.Add(3 * time.Hour)},
		{"wall with a sooner reset keeps the longer park", t0.Add(time.Minute),
			Outcome{Kind: classify.Wall, Status: "http_401", Until: t0.Add(10 * time.Minute)}, Open, t0.Add(time.Hour)},
		{"transient after the park opens for OpenFor", t0.Add(2 * time.Hour),
			Outcome{Kind: classify.Transient, Status: "net_timeout"}, Open, t0.Add(2*time.Hour + DefaultOpenFor)},
		{"not the target's fault changes nothing", t0.Add(time.Minute),
			Outcome{Kind: classify.Invalid, Status: "http_400"}, Open, t0.Add(time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := parkedByWall(t)
			p, _, ok := b.BeginProbe(key, c.at)
			if !ok {
				t.Fatal("BeginProbe refused")
			}
			b.EndProbe(key, p, false, c.o, c.at)
			e := b.Get(key, c.at)
			if e.State != c.wantState || !e.Until.Equal(c.wantUntil) || !e.ProbeUntil.IsZero() {
				t.Fatalf("entry = %s until %s (probe until %s), want %s until %s and the lease back",
					e.State, e.Until.Format(time.TimeOnly), e.ProbeUntil, c.wantState, c.wantUntil.Format(time.TimeOnly))
			}
			if _, _, ok := b.BeginProbe(key, c.at); !ok {
				t.Fatal("the lease was not given back")
			}
		})
	}
}

func TestEndProbe_StaleLeaseIsDropped(t *testing.T) {
	b := parkedByWall(t)
	now := t0.Add(time.Minute)
	p, _, _ := b.BeginProbe(key, now)
	b.Park(key, t0.Add(5*time.Hour), "operator", now) // an operator acts meanwhile
	b.EndProbe(key, p, true, Outcome{}, now)
	if e := b.Get(key, now); e.State != Open || !e.Until.Equal(t0.Add(5*time.Hour)) {
		t.Fatalf("entry = %+v: a stale probe's success must not undo the operator's park", e)
	}
}

// Since marks the start of a run of parks: a park that follows a failed
// probe keeps it, a success clears it.
func TestEntry_SinceSpansARunOfParks(t *testing.T) {
	b := parkedByWall(t)
	if e := b.Get(key, t0); !e.Since.Equal(t0) {
		t.Fatalf("Since after the first park = %s, want %s", e.Since, t0)
	}
	later := t0.Add(2 * time.Hour) // the park is over: half-open
	p := allow(t, b, key, later)
	b.Done(key, p, Outcome{Kind: classify.Wall, Status: "http_401", Until: later.Add(time.Hour)}, later)
	if e := b.Get(key, later); e.State != Open || !e.Since.Equal(t0) {
		t.Fatalf("after a failed trial: %s since %s, want open since %s", e.State, e.Since, t0)
	}
	end := later.Add(2 * time.Hour)
	b.Done(key, allow(t, b, key, end), Outcome{}, end)
	if e := b.Get(key, end); e.State != Closed || !e.Since.IsZero() {
		t.Fatalf("after a success: %s since %s, want closed with no Since", e.State, e.Since)
	}
}
