package health

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/detourhq/detour/classify"
)

// Breaker is the per-target circuit breaker. Each key ("provider/model") has
// its own state: closed, open until a time, or half-open with at most one
// probe out.
//
// A Breaker is safe for concurrent use. It holds no mutable state itself:
// settings are read-only after New and every entry lives in the Store, whose
// Update is atomic per key (the MemoryStore's mutex guards its map).
type Breaker struct {
	s     Settings // with defaults applied; read-only
	store Store
	// swept is when (Unix ns of a caller's now) the store was last swept
	// of forgettable entries.
	swept atomic.Int64
}

// sweepEvery is how often, at most, the breaker sweeps its store.
const sweepEvery = time.Minute

// update runs fn on key's entry as Store.Update does, marks a written
// entry touched at now, and now and then sweeps the store of entries
// nothing holds any more (Settings.Forget).
func (b *Breaker) update(key string, now time.Time, fn func(e *Entry) bool) error {
	err := b.store.Update(key, func(e *Entry) bool {
		if !fn(e) {
			return false
		}
		e.Touched = now
		return true
	})
	b.sweep(now)
	return err
}

// sweep drops forgettable entries when sweepEvery has passed since the
// last sweep, if the store can (Sweeper).
func (b *Breaker) sweep(now time.Time) {
	sw, ok := b.store.(Sweeper)
	if !ok {
		return
	}
	last := b.swept.Load()
	if now.UnixNano()-last < int64(sweepEvery) || !b.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	sw.Sweep(func(e Entry) bool { return forgettable(e, now, b.s.Forget) })
}

// New returns a Breaker with settings s (zero fields take defaults) and its
// state in memory.
func New(s Settings) *Breaker { return NewWithStore(s, nil) }

// NewWithStore returns a Breaker keeping its state in st; nil means a new
// MemoryStore.
func NewWithStore(s Settings, st Store) *Breaker {
	if st == nil {
		st = new(MemoryStore)
	}
	return &Breaker{s: s.withDefaults(), store: st}
}

// Settings returns the settings in force, defaults filled in.
func (b *Breaker) Settings() Settings { return b.s }

// Allow asks to send one attempt to key at now.
//
//   - Closed: allowed, a plain permit.
//   - Open before its Until: a *ParkedError (State Open).
//   - Open with its time up, or half-open with no probe out: the target turns
//     half-open and this caller alone gets a permit with Probe set.
//   - Half-open with a probe out: a *ParkedError (State HalfOpen) until that
//     probe reports through Done (or its ProbeTimeout passes).
//
// Every permit must go back to Done exactly once. An error that does not
// match ErrParked comes from the Store; the target's state is then unknown
// and the caller may send anyway (health is advisory).
func (b *Breaker) Allow(key string, now time.Time) (Permit, error) {
	if pk, ok := b.store.(Peeker); ok {
		// A closed key needs no write: its permit is its generation (a
		// key never seen starts at 1, as initEntry makes it). A key parked
		// (or with its probe out) past now is refused from the same read:
		// a shared store's copy may lag another process's change by a
		// moment, which costs at most a refusal or a send that health,
		// being advisory, allows; a shared store is never asked.
		e, found := pk.Peek(key)
		switch {
		case !found:
			return Permit{Key: key, gen: 1}, nil
		case e.State == Closed && e.Generation != 0:
			return Permit{Key: key, gen: e.Generation}, nil
		case e.State == Open && now.Before(e.Until):
			return Permit{}, &ParkedError{Key: key, Until: e.Until, Reason: e.Reason, State: Open, Kind: e.Kind, Status: e.Status}
		case e.State == HalfOpen && !e.ProbeUntil.IsZero() && now.Before(e.ProbeUntil):
			return Permit{}, &ParkedError{Key: key, Until: e.ProbeUntil, Reason: e.Reason, State: HalfOpen, Kind: e.Kind, Status: e.Status}
		}
	}
	var (
		p      Permit
		parked *ParkedError
	)
	err := b.update(key, now, func(e *Entry) bool {
		p, parked = Permit{}, nil
		save := initEntry(e, key)
		switch e.State {
		case Open:
			if now.Before(e.Until) {
				parked = &ParkedError{Key: key, Until: e.Until, Reason: e.Reason, State: Open, Kind: e.Kind, Status: e.Status}
				return save
			}
			if !e.ProbeUntil.IsZero() && now.Before(e.ProbeUntil) {
				// The park is over but BeginProbe's lease is out.
				parked = &ParkedError{Key: key, Until: e.ProbeUntil, Reason: e.Reason, State: HalfOpen, Kind: e.Kind, Status: e.Status}
				return save
			}
		case HalfOpen:
			if !e.ProbeUntil.IsZero() && now.Before(e.ProbeUntil) {
				parked = &ParkedError{Key: key, Until: e.ProbeUntil, Reason: e.Reason, State: HalfOpen, Kind: e.Kind, Status: e.Status}
				return save
			}
		default: // Closed
			p = Permit{Key: key, gen: e.Generation}
			return save
		}
		// The park is over (or the last probe was released or lost): this
		// caller probes.
		e.State = HalfOpen
		e.Generation++
		e.ProbeUntil = now.Add(b.s.ProbeTimeout)
		p = Permit{Key: key, Probe: true, gen: e.Generation}
		return true
	})
	if err != nil {
		return Permit{}, fmt.Errorf("health: %s: %w", key, err)
	}
	if parked != nil {
		return Permit{}, parked
	}
	return p, nil
}

// Done reports the outcome of the attempt p allowed. Call it once per
// permit, as soon as the outcome is known (for a stream, when it ends).
//
//   - Success (Kind ""): the target closes and its failure count resets.
//   - classify.Wall: the target parks until o.Until (capped by MaxPark), or
//     for WallCooldown when o.Until names no reset. A wall parks even when p
//     is stale (a wall is a fact about the key), but never shortens a
//     longer park already in force.
//   - classify.Transient, classify.Unknown (and any kind not listed here)
//     with o.Until after now: the target parks until o.Until (capped). The
//     router does this when the server asks for a wait longer than it will
//     take.
//   - The same without o.Until: the failure counts; FailureThreshold
//     consecutive ones open the target for OpenFor. A failed probe re-opens
//     it for OpenFor at once.
//   - classify.Invalid, classify.Policy, classify.Canceled,
//     classify.ContextOverflow are not the target's fault: they never open
//     and never count. If one ends a probe, the probe slot is released and
//     the next caller may probe.
//
// Outcomes other than a wall are dropped when p is stale: issued before the
// target last changed state (or for another key). Store errors are dropped:
// health is advisory, and a lost outcome costs at most a late park.
func (b *Breaker) Done(key string, p Permit, o Outcome, now time.Time) {
	if b.unchanged(key, p, o) {
		return
	}
	_ = b.update(key, now, func(e *Entry) bool {
		save := initEntry(e, key)
		stale := p.Key != key || p.gen != e.Generation
		switch {
		case o.Kind == classify.Wall:
			if !stale {
				e.Failures++
			}
			if b.park(e, b.parkUntil(o.Until, now), orDefault(o.Reason, "wall"), now) {
				e.Kind, e.Status = o.Kind, o.Status
				return true
			}
			return !stale || save
		case stale:
			return save
		case o.Kind == "":
			if e.State == Closed && e.Failures == 0 {
				return save
			}
			if e.State != Closed {
				e.Generation++
			}
			e.State, e.Failures = Closed, 0
			e.Until, e.Reason, e.ProbeUntil, e.Since = time.Time{}, "", time.Time{}, time.Time{}
			e.Kind, e.Status = "", ""
			return true
		case excluded(o.Kind):
			if p.Probe && e.State == HalfOpen {
				e.ProbeUntil = time.Time{}
				return true
			}
			return save
		}
		e.Failures++
		if e.State != Open || !now.Before(e.Until) {
			e.Kind, e.Status = o.Kind, o.Status
		}
		switch {
		case o.Until.After(now):
			b.open(e, now, b.cap(o.Until, now), orDefault(o.Reason, string(o.Kind)+": asked to wait"))
		case e.State == HalfOpen:
			b.open(e, now, b.cap(now.Add(b.s.OpenFor), now), orDefault(o.Reason, "probe failed"))
		case e.Failures >= b.s.FailureThreshold:
			b.open(e, now, b.cap(now.Add(b.s.OpenFor), now),
				orDefault(o.Reason, fmt.Sprintf("%d consecutive failures", e.Failures)))
		}
		return true
	})
}

// unchanged reports, without a write, an outcome that changes nothing: one
// that is not the key's fault from a permit that is no probe, or a success
// on a key that is closed and clean (or was never seen).
func (b *Breaker) unchanged(key string, p Permit, o Outcome) bool {
	if excluded(o.Kind) && !p.Probe {
		return true
	}
	if o.Kind != "" {
		return false
	}
	pk, ok := b.store.(Peeker)
	if !ok {
		return false
	}
	e, found := pk.Peek(key)
	return !found || e.State == Closed && e.Failures == 0 && e.Generation != 0
}

// Park parks key until until (capped by MaxPark), for reason. An until not
// after now means WallCooldown. A longer park already in force is kept.
// Permits issued before the park are stale from then on.
func (b *Breaker) Park(key string, until time.Time, reason string, now time.Time) {
	_ = b.update(key, now, func(e *Entry) bool {
		save := initEntry(e, key)
		return b.park(e, b.parkUntil(until, now), orDefault(reason, "parked"), now) || save
	})
}

// SeenComing is the Status of an entry Wall parked: no failure parked
// it, a provider said ahead of time that nothing is left.
const SeenComing = "seen_coming"

// Wall parks key until until (capped by MaxPark) as a wall seen coming,
// for reason: a provider's rate-limit headers said nothing is left. It
// parks as Park does and reads as a wall (Kind classify.Wall, Status
// SeenComing), so the park stands for a rate limit (a gateway's 429 when
// nothing else is left); no failure is counted, since none happened.
func (b *Breaker) Wall(key string, until time.Time, reason string, now time.Time) {
	_ = b.update(key, now, func(e *Entry) bool {
		save := initEntry(e, key)
		if b.park(e, b.parkUntil(until, now), orDefault(reason, "wall"), now) {
			e.Kind, e.Status = classify.Wall, SeenComing
			return true
		}
		return save
	})
}

// Release closes key at once, whatever parked it: its failures are
// forgotten and permits issued before are stale. An operator's "it is back"
// (the gateway's admin endpoint); a key never seen is left alone. The
// error is the store's, when it could not write the release: key's park
// then stands.
func (b *Breaker) Release(key string, now time.Time) error {
	return b.update(key, now, func(e *Entry) bool {
		if e.State == "" || e.Generation == 0 {
			return false
		}
		e.State, e.Failures = Closed, 0
		e.Until, e.Reason, e.ProbeUntil, e.Since = time.Time{}, "", time.Time{}, time.Time{}
		e.Kind, e.Status = "", ""
		e.Generation++
		return true
	})
}

// Get returns key's entry as of now, changing nothing: an Open entry whose
// time is up reads HalfOpen, and an expired probe is not reported. A key never
// seen reads Closed.
func (b *Breaker) Get(key string, now time.Time) Entry {
	var out Entry
	var err error
	if pk, ok := b.store.(Peeker); ok {
		out, _ = pk.Peek(key)
	} else {
		err = b.store.Update(key, func(e *Entry) bool {
			out = *e
			return false
		})
	}
	if err != nil || out.State == "" {
		return Entry{Key: key, State: Closed}
	}
	return view(out, now)
}

// State returns key's state as of now and, when it is Open, the end of its
// park. It changes nothing (Get reads the same). A key never seen is Closed.
func (b *Breaker) State(key string, now time.Time) (State, time.Time) {
	e := b.Get(key, now)
	if e.State != Open {
		return e.State, time.Time{}
	}
	return e.State, e.Until
}

// Snapshot returns every known key's entry as of now (as Get reads it),
// sorted by key, for `detour check` and metrics. Keys appear once Allow, Done
// or Park has seen them. A store error yields nil.
func (b *Breaker) Snapshot(now time.Time) []Entry {
	all, err := b.store.Entries()
	if err != nil {
		return nil
	}
	for i := range all {
		all[i] = view(all[i], now)
	}
	slices.SortFunc(all, func(x, y Entry) int { return cmp.Compare(x.Key, y.Key) })
	return all
}

// park opens e until until unless a park at least as long is in force. It
// reports whether e changed.
func (b *Breaker) park(e *Entry, until time.Time, reason string, now time.Time) bool {
	if e.State == Open && now.Before(e.Until) && !until.After(e.Until) {
		return false
	}
	b.open(e, now, until, reason)
	return true
}

// open moves e to Open until until, starting a new generation. A key
// that was closed starts its Since at now.
func (b *Breaker) open(e *Entry, now, until time.Time, reason string) {
	if e.State == Closed || e.Since.IsZero() {
		e.Since = now
	}
	e.State = Open
	e.Until = until
	e.Reason = reason
	e.ProbeUntil = time.Time{}
	e.Generation++
}

// parkUntil returns until capped by MaxPark, or now+WallCooldown when until
// is not after now.
func (b *Breaker) parkUntil(until, now time.Time) time.Time {
	if !until.After(now) {
		until = now.Add(b.s.WallCooldown)
	}
	return b.cap(until, now)
}

// cap returns until, or now+MaxPark when that is sooner.
func (b *Breaker) cap(until, now time.Time) time.Time {
	if limit := now.Add(b.s.MaxPark); until.After(limit) {
		return limit
	}
	return until
}

// initEntry makes a zero entry a closed one for key, reporting whether it did.
// Generations start at 1, so the zero Permit is stale everywhere.
func initEntry(e *Entry, key string) bool {
	if e.State != "" && e.Generation != 0 {
		return false
	}
	*e = Entry{Key: key, State: Closed, Generation: 1}
	return true
}

// view returns e as it reads at now.
func view(e Entry, now time.Time) Entry {
	if e.State == Open && !now.Before(e.Until) {
		e.State = HalfOpen
	}
	if !e.ProbeUntil.IsZero() && !now.Before(e.ProbeUntil) {
		e.ProbeUntil = time.Time{}
	}
	return e
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Park is one key parked or on trial, as `detour check` and the gateway's
// /admin/health show it: a target ("provider/model"), or an account or
// endpoint that parks every target billed to it or served by it.
type Park struct {
	Key      string    `json:"key"`
	State    string    `json:"state"`
	Until    time.Time `json:"until,omitzero"`
	Since    time.Time `json:"since,omitzero"`
	Reason   string    `json:"reason,omitempty"`
	Kind     string    `json:"kind,omitempty"`
	Status   string    `json:"status,omitempty"`
	Failures int       `json:"failures"`
}

// Parks returns every key not closed at now (Snapshot's order), never nil.
func (b *Breaker) Parks(now time.Time) []Park {
	out := []Park{}
	for _, e := range b.Snapshot(now) {
		if e.State == Closed {
			continue
		}
		out = append(out, Park{Key: e.Key, State: string(e.State), Until: e.Until.UTC(), Since: e.Since.UTC(), Reason: e.Reason,
			Kind: string(e.Kind), Status: e.Status, Failures: e.Failures})
	}
	return out
}
