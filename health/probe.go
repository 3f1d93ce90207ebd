package health

import (
	"time"

	"github.com/detourhq/detour/classify"
)

// BeginProbe takes key's probe lease for a check made off the billing path
// (`detour probe`): it succeeds only when key is parked (open, before or
// after its park ends) and no probe is out, its own or live traffic's. While
// the lease is out (until EndProbe, or ProbeTimeout), Allow refuses key as
// it refuses a half-open key with its probe out, so a probe never races live
// traffic's half-open probe. It returns the permit to hand back to EndProbe
// and key's entry as it read before the lease; ok is false (and nothing
// changed) when key is closed, never seen, or has a probe out. A store error
// reads as not ok.
func (b *Breaker) BeginProbe(key string, now time.Time) (p Permit, before Entry, ok bool) {
	_ = b.update(key, now, func(e *Entry) bool {
		if e.State == "" || e.Generation == 0 || e.State == Closed {
			return false
		}
		if !e.ProbeUntil.IsZero() && now.Before(e.ProbeUntil) {
			return false
		}
		before = view(*e, now)
		e.Generation++
		e.ProbeUntil = now.Add(b.s.ProbeTimeout)
		p, ok = Permit{Key: key, Probe: true, gen: e.Generation}, true
		return true
	})
	return p, before, ok
}

// EndProbe reports the check BeginProbe allowed. ok closes key at once: its
// park ends, its failures are forgotten and the next request may send to
// it. Otherwise the lease is given back and o decides: a wall parks key
// (never shortening a longer park); another failure of the target's own
// keeps the park in force, or, when it had ended, opens key for OpenFor;
// a failure that is not the target's fault changes nothing. An outcome
// for a lease that is no longer key's (ProbeTimeout passed, or an operator
// parked or released key meanwhile) is dropped.
func (b *Breaker) EndProbe(key string, p Permit, ok bool, o Outcome, now time.Time) {
	_ = b.update(key, now, func(e *Entry) bool {
		if !p.Probe || p.Key != key || p.gen != e.Generation || e.ProbeUntil.IsZero() {
			return false
		}
		e.ProbeUntil = time.Time{}
		switch {
		case ok:
			e.State, e.Failures = Closed, 0
			e.Until, e.Reason, e.Since = time.Time{}, "", time.Time{}
			e.Kind, e.Status = "", ""
			e.Generation++
		case o.Kind == classify.Wall:
			if b.park(e, b.parkUntil(o.Until, now), orDefault(o.Reason, "wall"), now) {
				e.Kind, e.Status = o.Kind, o.Status
			}
		case excluded(o.Kind):
		case !now.Before(e.Until):
			b.open(e, now, b.cap(now.Add(b.s.OpenFor), now), orDefault(o.Reason, "probe failed"))
			e.Kind, e.Status = o.Kind, o.Status
		}
		return true
	})
}
