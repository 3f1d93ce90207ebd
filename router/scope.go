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
	// quota is what the send took of the target's declared quotas; nil
	// when it has none.
	quota *taken
}

// allow asks the breaker for all three keys of t, endpoint and account
// first. A refusal of any is returned as its *health.ParkedError, and the
// permits already granted (a probe among them) are handed back.
func (w *walk) allow(t *Target, now time.Time) (permits, *health.ParkedError, error) {
	hb := w.r.health()
	id, acct, end := w.chain.keys(t)
	var p permits
	var err error
	if p.endpoint, err = hb.Allow(end, now); err == nil {
		if p.account, err = hb.Allow(acct, now); err == nil {
			if p.target, err = hb.Allow(id, now); err == nil {
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
	hb := w.r.health()
	id, acct, end := w.chain.keys(t)
	if p.endpoint.Key != "" {
		hb.Done(end, p.endpoint, released, now)
	}
	if p.account.Key != "" {
		hb.Done(acct, p.account, released, now)
	}
	if p.target.Key != "" {
		hb.Done(id, p.target, released, now)
	}
}

// done reports one attempt's outcome under the key its scope names, and
// hands the other permits back; a success (zero Outcome) closes all three.
func (w *walk) done(t *Target, p permits, scope classify.Scope, o health.Outcome, now time.Time) {
	hb := w.r.health()
	id, acct, end := w.chain.keys(t)
	if o.Kind == "" {
		hb.Done(end, p.endpoint, o, now)
		hb.Done(acct, p.account, o, now)
		hb.Done(id, p.target, o, now)
		return
	}
	e, a, tg := released, released, o
	switch scope {
	case classify.ScopeEndpoint:
		e, tg = o, released
	case classify.ScopeAccount:
		a, tg = o, released
	}
	hb.Done(end, p.endpoint, e, now)
	hb.Done(acct, p.account, a, now)
	hb.Done(id, p.target, tg, now)
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
