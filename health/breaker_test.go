package health

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const key = "groq/llama-3.3-70b-versatile"

// allow calls b.Allow and fails the test on a refusal.
func allow(t *testing.T, b *Breaker, key string, now time.Time) Permit {
	t.Helper()
	p, err := b.Allow(key, now)
	if err != nil {
		t.Fatalf("Allow(%q, %s) = %v, want a permit", key, now.Format(time.TimeOnly), err)
	}
	return p
}

// refused calls b.Allow and returns its *ParkedError, failing on a permit.
func refused(t *testing.T, b *Breaker, key string, now time.Time) *ParkedError {
	t.Helper()
	p, err := b.Allow(key, now)
	if err == nil {
		t.Fatalf("Allow(%q, %s) = permit %+v, want refusal", key, now.Format(time.TimeOnly), p)
	}
	if !errors.Is(err, ErrParked) {
		t.Fatalf("Allow error %v does not match ErrParked", err)
	}
	var pe *ParkedError
	if !errors.As(err, &pe) {
		t.Fatalf("Allow error %T is not *ParkedError", err)
	}
	return pe
}

// fail reports one failure of kind k on a fresh permit.
func fail(t *testing.T, b *Breaker, key string, k classify.Kind, now time.Time) {
	t.Helper()
	b.Done(key, allow(t, b, key, now), Outcome{Kind: k, Reason: "boom"}, now)
}

func wantState(t *testing.T, b *Breaker, key string, now time.Time, want State, wantFailures int) {
	t.Helper()
	e := b.Get(key, now)
	if e.State != want || e.Failures != wantFailures {
		t.Fatalf("Get(%q) = state %s, failures %d; want %s, %d", key, e.State, e.Failures, want, wantFailures)
	}
}

func TestSettings_ZeroMeansDefaults(t *testing.T) {
	got := New(Settings{}).Settings()
	want := Settings{FailureThreshold: 3, OpenFor: 10 * time.Second, WallCooldown: 5 * time.Minute,
		MaxPark: 24 * time.Hour, ProbeTimeout: 2 * time.Minute, Forget: 10 * time.Minute}
	if got != want {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}
	if got := New(Settings{FailureThreshold: -1, OpenFor: time.Second}).Settings(); got.FailureThreshold != 3 || got.OpenFor != time.Second {
		t.Fatalf("negative/explicit settings = %+v", got)
	}
}

func TestBreaker_WallParksUntilResetThenOneProbe(t *testing.T) {
	b := New(Settings{})
	reset := t0.Add(3 * time.Hour)
	b.Done(key, allow(t, b, key, t0), Outcome{Kind: classify.Wall, Until: reset, Reason: "HTTP 429 tokens per day"}, t0)

	for _, at := range []time.Duration{0, time.Minute, 3*time.Hour - time.Millisecond} {
		pe := refused(t, b, key, t0.Add(at))
		want := ParkedError{Key: key, Until: reset, Reason: "HTTP 429 tokens per day", State: Open, Kind: classify.Wall}
		if *pe != want {
			t.Fatalf("at +%s: refusal %+v, want %+v", at, *pe, want)
		}
	}
	now := reset
	probe := allow(t, b, key, now)
	if !probe.Probe {
		t.Fatalf("first permit after the reset is not a probe: %+v", probe)
	}
	if pe := refused(t, b, key, now); pe.State != HalfOpen || !pe.Until.Equal(now.Add(DefaultProbeTimeout)) {
		t.Fatalf("second caller during the probe: %+v, want half_open until the probe timeout", *pe)
	}
	b.Done(key, probe, Outcome{}, now.Add(time.Second))
	wantState(t, b, key, now.Add(time.Second), Closed, 0)
	if p := allow(t, b, key, now.Add(time.Second)); p.Probe {
		t.Fatalf("permit after a closed probe is a probe: %+v", p)
	}
	if e := b.Get(key, now); !e.Until.IsZero() || e.Reason != "" {
		t.Fatalf("closed entry keeps park details: %+v", e)
	}
}

func TestBreaker_WallWithoutResetUsesWallCooldown(t *testing.T) {
	tests := []struct {
		name  string
		s     Settings
		until time.Time // the wall's Until
		want  time.Time
	}{
		{"default cooldown", Settings{}, time.Time{}, t0.Add(5 * time.Minute)},
		{"custom cooldown", Settings{WallCooldown: time.Minute}, time.Time{}, t0.Add(time.Minute)},
		{"reset in the past names none", Settings{}, t0.Add(-time.Hour), t0.Add(5 * time.Minute)},
		{"reset given", Settings{}, t0.Add(time.Hour), t0.Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.s)
			b.Done(key, allow(t, b, key, t0), Outcome{Kind: classify.Wall, Until: tt.until}, t0)
			pe := refused(t, b, key, t0)
			if !pe.Until.Equal(tt.want) || pe.Reason != "wall" {
				t.Fatalf("parked until %s (%q), want %s (%q)", pe.Until, pe.Reason, tt.want, "wall")
			}
			refused(t, b, key, tt.want.Add(-time.Nanosecond))
			if p := allow(t, b, key, tt.want); !p.Probe {
				t.Fatalf("permit at the end of the park is not a probe")
			}
		})
	}
}

func TestBreaker_ThreeTransientFailuresOpenForOpenForThenOneProbe(t *testing.T) {
	for _, kind := range []classify.Kind{classify.Transient, classify.Unknown} {
		t.Run(string(kind), func(t *testing.T) {
			b := New(Settings{})
			fail(t, b, key, kind, t0)
			fail(t, b, key, kind, t0)
			wantState(t, b, key, t0, Closed, 2)
			fail(t, b, key, kind, t0)
			wantState(t, b, key, t0, Open, 3)
			if pe := refused(t, b, key, t0.Add(9*time.Second)); !pe.Until.Equal(t0.Add(10 * time.Second)) {
				t.Fatalf("opened until %s, want +10s", pe.Until)
			}

			// The probe fails: open for OpenFor again, at once.
			now := t0.Add(10 * time.Second)
			probe := allow(t, b, key, now)
			if !probe.Probe {
				t.Fatal("no probe after OpenFor")
			}
			refused(t, b, key, now)
			b.Done(key, probe, Outcome{Kind: kind}, now.Add(time.Second))
			if pe := refused(t, b, key, now.Add(time.Second)); pe.State != Open || !pe.Until.Equal(now.Add(11*time.Second)) {
				t.Fatalf("after a failed probe: %+v, want open until +11s", *pe)
			}

			// The next probe succeeds.
			now = now.Add(11 * time.Second)
			probe = allow(t, b, key, now)
			b.Done(key, probe, Outcome{}, now)
			wantState(t, b, key, now, Closed, 0)
		})
	}
}

func TestBreaker_SuccessResetsTheRun(t *testing.T) {
	b := New(Settings{})
	fail(t, b, key, classify.Transient, t0)
	fail(t, b, key, classify.Transient, t0)
	b.Done(key, allow(t, b, key, t0), Outcome{}, t0)
	fail(t, b, key, classify.Transient, t0)
	fail(t, b, key, classify.Transient, t0)
	wantState(t, b, key, t0, Closed, 2)
}

func TestBreaker_TransientWithUntilParksAtOnce(t *testing.T) {
	b := New(Settings{})
	until := t0.Add(90 * time.Second)
	b.Done(key, allow(t, b, key, t0), Outcome{Kind: classify.Transient, Until: until, Reason: "Retry-After 90s"}, t0)
	pe := refused(t, b, key, t0)
	if !pe.Until.Equal(until) || pe.Reason != "Retry-After 90s" {
		t.Fatalf("parked %+v, want until +90s", *pe)
	}
}

func TestBreaker_NotTheTargetsFaultNeverOpensNorCounts(t *testing.T) {
	for _, kind := range []classify.Kind{classify.Invalid, classify.Policy, classify.Canceled, classify.ContextOverflow} {
		t.Run(string(kind), func(t *testing.T) {
			b := New(Settings{FailureThreshold: 2})
			for range 10 {
				fail(t, b, key, kind, t0)
			}
			wantState(t, b, key, t0, Closed, 0)

			// Nor does it break a run of transient failures.
			fail(t, b, key, classify.Transient, t0)
			fail(t, b, key, kind, t0)
			wantState(t, b, key, t0, Closed, 1)
			fail(t, b, key, classify.Transient, t0)
			wantState(t, b, key, t0, Open, 2)

			// Ending a probe, it releases the slot: still half-open, the
			// next caller probes.
			now := t0.Add(DefaultOpenFor)
			probe := allow(t, b, key, now)
			b.Done(key, probe, Outcome{Kind: kind}, now)
			wantState(t, b, key, now, HalfOpen, 2)
			next := allow(t, b, key, now)
			if !next.Probe {
				t.Fatalf("permit after a released probe is not a probe: %+v", next)
			}
			refused(t, b, key, now)
		})
	}
}

func TestBreaker_KeysAreIndependent(t *testing.T) {
	// Two models on one provider host are two targets.
	b := New(Settings{Forget: 2 * time.Hour})
	big, small := "groq/llama-3.3-70b-versatile", "groq/llama-3.1-8b-instant"
	b.Done(big, allow(t, b, big, t0), Outcome{Kind: classify.Wall, Until: t0.Add(time.Hour)}, t0)
	for range 2 {
		fail(t, b, small, classify.Transient, t0)
	}
	refused(t, b, big, t0)
	if p := allow(t, b, small, t0); p.Probe {
		t.Fatal("the other model got a probe permit")
	}
	wantState(t, b, small, t0, Closed, 2)
	wantState(t, b, "openrouter/meta-llama/llama-3.3-70b-instruct", t0, Closed, 0)

	// A permit for one key reported under another is stale.
	b.Done(small, allow(t, b, big, t0.Add(time.Hour)), Outcome{}, t0.Add(time.Hour))
	wantState(t, b, small, t0, Closed, 2)
}

func TestBreaker_ConcurrentAllowInHalfOpenGivesOneProbe(t *testing.T) {
	b := New(Settings{})
	keys := []string{"a/m", "b/m", "c/m"}
	for _, k := range keys {
		b.Park(k, t0.Add(time.Minute), "test", t0)
	}
	now := t0.Add(time.Minute)
	const n = 64
	var (
		wg     sync.WaitGroup
		start  = make(chan struct{})
		mu     sync.Mutex // guards probes and refusals
		probes = map[string][]Permit{}
		refuse = map[string]int{}
		asked  = map[string]int{} // callers per key
	)
	for i := range n {
		k := keys[i%len(keys)]
		asked[k]++
		wg.Go(func() {
			<-start
			p, err := b.Allow(k, now)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && p.Probe:
				probes[k] = append(probes[k], p)
			case errors.Is(err, ErrParked):
				refuse[k]++
			default:
				t.Errorf("Allow(%q) = %+v, %v", k, p, err)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, k := range keys {
		if len(probes[k]) != 1 {
			t.Fatalf("%s: %d probes, want exactly 1", k, len(probes[k]))
		}
		if want := asked[k] - 1; refuse[k] != want {
			t.Fatalf("%s: %d refusals, want %d", k, refuse[k], want)
		}
	}

	// Probes reporting concurrently with more callers: each key closes once.
	for _, k := range keys {
		wg.Go(func() { b.Done(k, probes[k][0], Outcome{}, now) })
		wg.Go(func() { _, _ = b.Allow(k, now) })
	}
	wg.Wait()
	for _, k := range keys {
		wantState(t, b, k, now, Closed, 0)
	}
}

func TestBreaker_StaleOutcomesAreDropped(t *testing.T) {
	b := New(Settings{})
	early := allow(t, b, key, t0) // issued while closed, reports late
	for range 3 {
		fail(t, b, key, classify.Transient, t0)
	}
	now := t0.Add(DefaultOpenFor)
	probe := allow(t, b, key, now)

	tests := []struct {
		name string
		p    Permit
		o    Outcome
	}{
		{"success from before the open", early, Outcome{}},
		{"transient from before the open", early, Outcome{Kind: classify.Transient}},
		{"transient with until from before the open", early, Outcome{Kind: classify.Transient, Until: now.Add(time.Hour)}},
		{"unknown from before the open", early, Outcome{Kind: classify.Unknown}},
		{"canceled from before the open", early, Outcome{Kind: classify.Canceled}},
		{"zero permit", Permit{}, Outcome{}},
		{"permit for another key", Permit{Key: "x/y", Probe: true, gen: probe.gen}, Outcome{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := b.Get(key, now)
			b.Done(key, tt.p, tt.o, now)
			if after := b.Get(key, now); after != before {
				t.Fatalf("stale outcome changed the entry:\n got %+v\nwant %+v", after, before)
			}
		})
	}
	// The probe itself is still the one that counts.
	b.Done(key, probe, Outcome{}, now)
	wantState(t, b, key, now, Closed, 0)
	// A transient failure of an old permit does not count against the
	// closed target.
	b.Done(key, early, Outcome{Kind: classify.Transient}, now)
	wantState(t, b, key, now, Closed, 0)
}

func TestBreaker_StaleWallStillParks(t *testing.T) {
	b := New(Settings{})
	early := allow(t, b, key, t0)
	b.Park(key, t0.Add(time.Minute), "ops", t0)
	now := t0.Add(time.Minute)
	b.Done(key, allow(t, b, key, now), Outcome{}, now) // probe succeeds: closed
	wantState(t, b, key, now, Closed, 0)

	b.Done(key, early, Outcome{Kind: classify.Wall, Until: now.Add(time.Hour), Reason: "HTTP 402"}, now)
	if pe := refused(t, b, key, now); !pe.Until.Equal(now.Add(time.Hour)) || pe.Reason != "HTTP 402" {
		t.Fatalf("stale wall: %+v, want parked +1h", *pe)
	}
	// A stale wall never shortens a longer park.
	b.Done(key, early, Outcome{Kind: classify.Wall, Until: now.Add(time.Minute), Reason: "short"}, now)
	if pe := refused(t, b, key, now); !pe.Until.Equal(now.Add(time.Hour)) || pe.Reason != "HTTP 402" {
		t.Fatalf("shorter stale wall changed the park: %+v", *pe)
	}
}

func TestBreaker_ProbeTimeoutFreesALostProbe(t *testing.T) {
	b := New(Settings{ProbeTimeout: time.Minute})
	b.Park(key, t0, "", t0) // until not after now: WallCooldown
	now := t0.Add(DefaultWallCooldown)
	lost := allow(t, b, key, now)
	refused(t, b, key, now.Add(time.Minute-time.Nanosecond))
	second := allow(t, b, key, now.Add(time.Minute))
	if !second.Probe {
		t.Fatal("no new probe after the probe timeout")
	}
	b.Done(key, lost, Outcome{}, now.Add(time.Minute)) // too late: dropped
	wantState(t, b, key, now.Add(time.Minute), HalfOpen, 0)
	b.Done(key, second, Outcome{Kind: classify.Transient}, now.Add(time.Minute))
	wantState(t, b, key, now.Add(time.Minute), Open, 1)
}

func TestBreaker_MaxParkCapsEveryPark(t *testing.T) {
	far := t0.Add(72 * time.Hour)
	tests := []struct {
		name string
		s    Settings
		do   func(b *Breaker)
		want time.Time
	}{
		{"wall", Settings{}, func(b *Breaker) {
			b.Done(key, allow(t, b, key, t0), Outcome{Kind: classify.Wall, Until: far}, t0)
		}, t0.Add(24 * time.Hour)},
		{"transient with until", Settings{}, func(b *Breaker) {
			b.Done(key, allow(t, b, key, t0), Outcome{Kind: classify.Transient, Until: far}, t0)
		}, t0.Add(24 * time.Hour)},
		{"park", Settings{}, func(b *Breaker) { b.Park(key, far, "ops", t0) }, t0.Add(24 * time.Hour)},
		{"custom cap", Settings{MaxPark: time.Hour}, func(b *Breaker) { b.Park(key, far, "ops", t0) }, t0.Add(time.Hour)},
		{"cooldown above the cap", Settings{MaxPark: time.Minute}, func(b *Breaker) { b.Park(key, time.Time{}, "ops", t0) }, t0.Add(time.Minute)},
		{"open for above the cap", Settings{MaxPark: time.Second, FailureThreshold: 1}, func(b *Breaker) {
			fail(t, b, key, classify.Transient, t0)
		}, t0.Add(time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.s)
			tt.do(b)
			if pe := refused(t, b, key, t0); !pe.Until.Equal(tt.want) {
				t.Fatalf("parked until %s, want %s", pe.Until, tt.want)
			}
		})
	}
}

func TestBreaker_ParkKeepsTheLongerPark(t *testing.T) {
	b := New(Settings{})
	b.Park(key, t0.Add(time.Hour), "long", t0)
	b.Park(key, t0.Add(time.Minute), "short", t0)
	if pe := refused(t, b, key, t0); !pe.Until.Equal(t0.Add(time.Hour)) || pe.Reason != "long" {
		t.Fatalf("shorter park replaced a longer one: %+v", *pe)
	}
	b.Park(key, t0.Add(2*time.Hour), "", t0)
	if pe := refused(t, b, key, t0); !pe.Until.Equal(t0.Add(2*time.Hour)) || pe.Reason != "parked" {
		t.Fatalf("longer park not applied: %+v", *pe)
	}
	// Parking a half-open key makes its probe stale.
	now := t0.Add(2 * time.Hour)
	probe := allow(t, b, key, now)
	b.Park(key, now.Add(time.Minute), "again", now)
	b.Done(key, probe, Outcome{}, now)
	if pe := refused(t, b, key, now); pe.Reason != "again" {
		t.Fatalf("probe from before a park closed the key: %+v", *pe)
	}
}

func TestBreaker_Snapshot(t *testing.T) {
	b := New(Settings{})
	b.Park("z/m", t0.Add(time.Minute), "wall", t0)
	b.Park("a/m", t0.Add(time.Hour), "quota", t0)
	fail(t, b, "m/m", classify.Transient, t0)

	now := t0.Add(time.Minute) // z/m's park is over: it reads half-open
	got := b.Snapshot(now)
	want := []Entry{
		{Key: "a/m", State: Open, Until: t0.Add(time.Hour), Since: t0, Reason: "quota", Generation: 2, Touched: t0},
		{Key: "m/m", State: Closed, Failures: 1, Generation: 1, Kind: classify.Transient, Touched: t0},
		{Key: "z/m", State: HalfOpen, Until: t0.Add(time.Minute), Since: t0, Reason: "wall", Generation: 2, Touched: t0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Snapshot =\n%+v\nwant\n%+v", got, want)
	}
	// Reading changes nothing: the first Allow still gets the probe.
	if p := allow(t, b, "z/m", now); !p.Probe {
		t.Fatal("Snapshot consumed the probe")
	}
	if got := b.Get("z/m", now); got.State != HalfOpen || !got.ProbeUntil.Equal(now.Add(DefaultProbeTimeout)) {
		t.Fatalf("Get during the probe = %+v", got)
	}
	if st, until := b.State("a/m", now); st != Open || !until.Equal(t0.Add(time.Hour)) {
		t.Fatalf("State(a/m) = %s, %s; want open until +1h", st, until)
	}
	if st, until := b.State("z/m", now); st != HalfOpen || !until.IsZero() {
		t.Fatalf("State(z/m) = %s, %s; want half_open", st, until)
	}
	if got := b.Get("never/seen", now); got != (Entry{Key: "never/seen", State: Closed}) {
		t.Fatalf("Get of an unknown key = %+v", got)
	}
}

func TestState_String(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half_open"} {
		if got := s.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", s, got, want)
		}
	}
}

func TestParkedError(t *testing.T) {
	tests := []struct {
		err  ParkedError
		want string
	}{
		{ParkedError{Key: "groq/x", Until: t0, Reason: "HTTP 402", State: Open}, "health: groq/x parked until 2025-06-01T12:00:00Z: HTTP 402"},
		{ParkedError{Key: "groq/x", Until: t0, State: HalfOpen}, "health: groq/x half-open, probe in flight"},
	}
	for _, tt := range tests {
		var err error = fmt.Errorf("wrapped: %w", &tt.err)
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(err, ErrParked) {
			t.Errorf("%v does not match ErrParked", err)
		}
	}
}

// failingStore is a Store whose every call fails.
type failingStore struct{}

func (failingStore) Update(string, func(*Entry) bool) error { return errors.New("disk gone") }
func (failingStore) Entries() ([]Entry, error)              { return nil, errors.New("disk gone") }

func TestBreaker_StoreErrorIsNotParked(t *testing.T) {
	b := NewWithStore(Settings{}, failingStore{})
	_, err := b.Allow(key, t0)
	if err == nil || errors.Is(err, ErrParked) {
		t.Fatalf("Allow with a broken store = %v, want a non-parked error", err)
	}
	b.Done(key, Permit{}, Outcome{Kind: classify.Wall}, t0) // must not panic
	if got := b.Snapshot(t0); got != nil {
		t.Fatalf("Snapshot with a broken store = %v", got)
	}
}

// An entry nothing holds any more (its park over, no probe out) is dropped
// once Forget has passed since its last change, so a stream of targets
// seen once leaves no state behind; a park still in force is kept.
func TestBreaker_ForgetsWhatNothingHolds(t *testing.T) {
	st := &MemoryStore{}
	b := NewWithStore(Settings{Forget: 10 * time.Minute, WallCooldown: time.Minute}, st)
	for i := range 1000 {
		key := fmt.Sprintf("p/model-%d", i)
		b.Done(key, allow(t, b, key, t0), Outcome{Kind: classify.Wall}, t0) // parked for a minute
	}
	b.Park("p/long", t0.Add(time.Hour), "quota", t0)
	fail(t, b, "p/flaky", classify.Transient, t0.Add(5*time.Minute))
	if n := st.Len(); n != 1002 {
		t.Fatalf("%d entries after the failures, want 1002", n)
	}
	now := t0.Add(11 * time.Minute) // the minute-long parks are over and 10 min untouched
	b.Park("p/other", now.Add(time.Minute), "wall", now)
	if n := st.Len(); n != 3 {
		t.Fatalf("%d entries after the sweep, want 3 (p/long parked, p/flaky touched 6 min ago, p/other): %+v", n, b.Snapshot(now))
	}
	refused(t, b, "p/long", now)
	wantState(t, b, "p/flaky", now, Closed, 1)
	wantState(t, b, "p/model-7", now, Closed, 0) // forgotten: as if never seen
	// No sweep before sweepEvery has passed again.
	fail(t, b, "p/x", classify.Transient, now)
	b.Park("p/y", now.Add(time.Hour), "wall", now.Add(30*time.Second))
	if n := st.Len(); n != 5 {
		t.Fatalf("%d entries, want 5: swept again within a minute", n)
	}
}

// Rule 10 holds across forgetting: a park longer than Forget still ends
// in one probe, not in an entry forgotten the moment its park is over.
func TestBreaker_LongParkEndsInOneProbeNotForgotten(t *testing.T) {
	b := New(Settings{Forget: 10 * time.Minute})
	b.Park("p/m", t0.Add(time.Hour), "quota", t0)
	end := t0.Add(time.Hour + time.Minute)
	b.Park("p/other", end.Add(time.Minute), "wall", end) // a write: the store is swept
	if p := allow(t, b, "p/m", end); !p.Probe {
		t.Fatalf("after the hour's park: permit %+v, want the one probe", p)
	}
	refused(t, b, "p/m", end)
}

// countingStore is a MemoryStore that counts Update calls: a shared
// store's Update is a round trip (Redis) or a write transaction (SQLite).
type countingStore struct {
	MemoryStore
	mu      sync.Mutex
	updates int
}

func (c *countingStore) Update(key string, fn func(*Entry) bool) error {
	c.mu.Lock()
	c.updates++
	c.mu.Unlock()
	return c.MemoryStore.Update(key, fn)
}

func (c *countingStore) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updates
}

// A parked key, and one whose probe is out, is refused from a Peek: no
// Update, so a shared store is not asked on every request while a target
// is parked. When the park ends, the probe is one Update.
func TestBreaker_ParkedRefusedWithoutAnUpdate(t *testing.T) {
	st := &countingStore{}
	b := NewWithStore(Settings{}, st)
	b.Park(key, t0.Add(time.Minute), "wall", t0)
	before := st.count()
	for range 100 {
		if _, err := b.Allow(key, t0.Add(time.Second)); !errors.Is(err, ErrParked) {
			t.Fatalf("Allow on a parked key = %v", err)
		}
	}
	if n := st.count() - before; n != 0 {
		t.Fatalf("100 refusals of a parked key made %d Updates, want 0", n)
	}
	if p := allow(t, b, key, t0.Add(2*time.Minute)); !p.Probe {
		t.Fatal("the first Allow after the park is no probe")
	}
	before = st.count()
	for range 10 {
		_, err := b.Allow(key, t0.Add(2*time.Minute+time.Second))
		var pe *ParkedError
		if !errors.As(err, &pe) || pe.State != HalfOpen {
			t.Fatalf("Allow with the probe out = %v, want a half-open refusal", err)
		}
	}
	if n := st.count() - before; n != 0 {
		t.Fatalf("refusals while the probe is out made %d Updates, want 0", n)
	}
}

// Release closes a parked key at once; permits from before it are stale.
func TestBreaker_Release(t *testing.T) {
	b := New(Settings{})
	old := allow(t, b, key, t0)
	b.Park(key, t0.Add(time.Hour), "wall", t0)
	b.Release(key, t0.Add(time.Minute))
	if st, _ := b.State(key, t0.Add(time.Minute)); st != Closed {
		t.Fatalf("state after Release = %s", st)
	}
	allow(t, b, key, t0.Add(time.Minute))
	b.Done(key, old, Outcome{Kind: classify.Transient}, t0.Add(time.Minute))
	if e := b.Get(key, t0.Add(time.Minute)); e.Failures != 0 {
		t.Fatalf("a permit from before the release counted: %+v", e)
	}
	b.Release("never/seen", t0)
	if len(b.Snapshot(t0)) != 1 {
		t.Fatal("Release made an entry for a key never seen")
	}
}

// A wall seen coming (a provider's headers said nothing is left) parks
// the key as a wall, counts no failure, and never shortens a longer park.
func TestBreaker_WallSeenComingParksAsAWall(t *testing.T) {
	b := New(Settings{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.Wall("p/m", now.Add(30*time.Second), "x-ratelimit-remaining-requests: 0", now)
	e := b.Get("p/m", now)
	if e.State != Open || !e.Until.Equal(now.Add(30*time.Second)) || e.Kind != classify.Wall || e.Status != SeenComing || e.Failures != 0 ||
		e.Reason != "x-ratelimit-remaining-requests: 0" {
		t.Fatalf("entry = %+v, want open as a wall for 30s, no failure", e)
	}
	b.Wall("p/m", now.Add(10*time.Second), "shorter", now)
	if e := b.Get("p/m", now); !e.Until.Equal(now.Add(30 * time.Second)) {
		t.Fatalf("a shorter wall moved the park to %s", e.Until)
	}
	if _, err := b.Allow("p/m", now.Add(31*time.Second)); err != nil {
		t.Fatalf("after the reset: %v, want a probe", err)
	}
}
