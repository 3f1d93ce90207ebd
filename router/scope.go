package router

import (
	"errors"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/health"
)

// A target's health lives under three keys: its own ("provider/model"),
// its account's (every target billed to the same key) and its endpoint's
// (every target on the same host). A failure counts under the key its
// scope names; a success closes all three.

// permits are the leave to send one attempt to a target: one per key.
type permits struct {
	target, account, endpoint health.Permit
	// leased marks the permits that are probe leases of parked keys
	// (Options.Probe), which go back through EndProbe: endpoint,
	// account, target.
	leased [3]bool
	// quota is what the send took of the target's declared quotas; nil
	// when it has none.
	quota *taken
	// spend is what the send holds of the daily ceilings; nil when none
	// applies.
	spend *reservation
	// busy is the records key that counts the send in flight, for a
	// group that picks the least busy member; "" otherwise.
	busy string
}

// allow asks the breaker for all three keys of t, endpoint and account
// first. A refusal of any is returned as its *health.ParkedError, and the
// permits already granted (a probe among them) are handed back.
func (w *walk) allow(t *Target, now time.Time) (permits, *health.ParkedError, error) {
	id, acct, end := w.chain.keys(t)
	var p permits
	var err error
	if p.endpoint, p.leased[0], err = w.allowKey(t, end, now); err == nil {
		if p.account, p.leased[1], err = w.allowKey(t, acct, now); err == nil {
			if p.target, p.leased[2], err = w.allowKey(t, id, now); err == nil {
				return p, nil, nil
			}
		}
	}
	w.release(t, p, now)
	var parked *health.ParkedError
	if errors.As(err, &parked) {
		return permits{}, parked, nil
	}
	return permits{}, nil, err
}

// allowKey asks the breaker for key's permit, for a send to t. When the
// send is a probe (Options.Probe) and a park refuses key, key lends its
// probe lease instead, if no probe of it is out: leased is then true.
func (w *walk) allowKey(t *Target, key string, now time.Time) (p health.Permit, leased bool, err error) {
	hb := w.r.health()
	p, err = hb.Allow(key, now)
	if err == nil || !w.probing(t) || !errors.Is(err, health.ErrParked) {
		return p, false, err
	}
	if lp, _, ok := hb.BeginProbe(key, now); ok {
		return lp, true, nil
	}
	return p, false, err
}

// probing reports whether a send to t is to probe its parks: the caller
// asked for it (Options.Probe, with NoFallback) and t is the walk's
// start.
func (w *walk) probing(t *Target) bool {
	return w.ask.opts.Probe && w.ask.opts.NoFallback && t == w.chain.cands[0]
}

// probe reports whether permits p make their send a probe of a park: one
// is a probe lease, or the store made one a half-open probe, for a send
// the caller asked to probe (Options.Probe).
func (w *walk) probe(t *Target, p permits) bool {
	return w.probing(t) && (p.leased != [3]bool{} || p.endpoint.Probe || p.account.Probe || p.target.Probe)
}

// report hands permit pm of key back with outcome o: through EndProbe
// when it is a probe lease (leased), else through Done.
func (w *walk) report(key string, pm health.Permit, leased bool, o health.Outcome, now time.Time) {
	hb := w.r.health()
	if leased {
		hb.EndProbe(key, pm, o.Kind == "", o, now)
		return
	}
	hb.Done(key, pm, o, now)
}

// released is the outcome that hands a permit back without a verdict: it
// frees a probe slot and counts nothing.
var released = health.Outcome{Kind: classify.Canceled}

// outcome is what failure f tells the breaker: nothing (a permit handed
// back) when one of detour's own limits ended the attempt, else its kind,
// reason and status.
func outcome(f classify.Failure) health.Outcome {
	if f.OwnLimit() {
		return released
	}
	return health.Outcome{Kind: f.Kind, Reason: f.Reason, Status: f.Status}
}

// release hands back the permits of an attempt that was not sent.
func (w *walk) release(t *Target, p permits, now time.Time) {
	id, acct, end := w.chain.keys(t)
	if p.endpoint.Key != "" {
		w.report(end, p.endpoint, p.leased[0], released, now)
	}
	if p.account.Key != "" {
		w.report(acct, p.account, p.leased[1], released, now)
	}
	if p.target.Key != "" {
		w.report(id, p.target, p.leased[2], released, now)
	}
}

// done reports one attempt's outcome under the key its scope names, and
// hands the other permits back; a success (zero Outcome) closes all three.
func (w *walk) done(t *Target, p permits, scope classify.Scope, o health.Outcome, now time.Time) {
	id, acct, end := w.chain.keys(t)
	if o.Kind == "" {
		w.report(end, p.endpoint, p.leased[0], o, now)
		w.report(acct, p.account, p.leased[1], o, now)
		w.report(id, p.target, p.leased[2], o, now)
		return
	}
	e, a, tg := released, released, o
	switch scope {
	case classify.ScopeEndpoint:
		e, tg = o, released
	case classify.ScopeAccount:
		a, tg = o, released
	}
	w.report(end, p.endpoint, p.leased[0], e, now)
	w.report(acct, p.account, p.leased[1], a, now)
	w.report(id, p.target, p.leased[2], tg, now)
}

// scopeKey is the health key a failure of scope s counts under for t.
func (w *walk) scopeKey(t *Target, s classify.Scope) string {
	id, acct, end := w.chain.keys(t)
	switch s {
	case classify.ScopeEndpoint:
		return end
	case classify.ScopeAccount:
		return acct
	}
	return id
}

// parkOf returns the park that would refuse a send to t at now, read
// without taking a permit: what Allow would answer (its endpoint's, its
// account's, then its own key, open or half-open with another caller's
// probe out); nil when none would.
func (w *walk) parkOf(t *Target, now time.Time) *health.ParkedError {
	hb := w.r.health()
	id, acct, end := w.chain.keys(t)
	for _, k := range [...]string{end, acct, id} {
		e := hb.Get(k, now)
		switch {
		case e.State == health.Open:
			return &health.ParkedError{Key: k, Until: e.Until, Reason: e.Reason, State: health.Open, Kind: e.Kind, Status: e.Status}
		case e.State == health.HalfOpen && !e.ProbeUntil.IsZero():
			return &health.ParkedError{Key: k, Until: e.ProbeUntil, Reason: e.Reason, State: health.HalfOpen, Kind: e.Kind,
				Status: e.Status}
		}
	}
	return nil
}
