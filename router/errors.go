package router

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/policy"
)

// ErrAllFailed means every candidate of the route failed or was skipped.
var ErrAllFailed = errors.New("every candidate failed")

// ErrFailClosed means a failure of a fail-closed kind (invalid, policy, ...)
// ended the request: the same request would fail everywhere, or must not be
// routed around.
var ErrFailClosed = errors.New("request failed closed")

// ErrUnsupported is the cause of a request that no candidate can honour:
// each was skipped for a need it cannot carry (skipped_contract). The
// error's candidates name the needs.
var ErrUnsupported = errors.New("no candidate can honour what the request carries")

// ErrCanceled means the caller cancelled the request.
var ErrCanceled = errors.New("request cancelled")

// Candidate is what happened to one candidate of a request that got no
// answer: its last failure, its skip, or why it was never reached.
type Candidate struct {
	// Target is the target's "provider/model".
	Target string
	// Status is the ledger status of its last attempt or skip; empty when
	// it was never reached.
	Status string
	// Kind is the failure kind; empty for a skip and for a candidate never
	// reached.
	Kind classify.Kind
	// Scope is the failure's scope; empty for a skip.
	Scope classify.Scope
	// Sends counts the sends it got in this request.
	Sends int
	// Reason is one line: the failure's reason (with the provider's
	// message where it says more), the skip's, or why it was not reached.
	Reason string
}

// Skipped reports whether the candidate got no send.
func (c Candidate) Skipped() bool { return c.Sends == 0 }

// Exhaustion says what left a request with no answer when every candidate
// failed or was skipped; a gateway answers with its status.
type Exhaustion string

// The ways a route runs out of candidates.
const (
	// RateLimited: every candidate was rate limited, walled (no credits,
	// a quota) or parked for one of these (a gateway answers 429 with
	// Retry-After). A rejected key (401, 403) is not a wall a client can
	// wait out: it counts as Unavailable.
	RateLimited Exhaustion = "rate_limited"
	// TimedOut: every candidate stayed silent until one of detour's limits
	// (a gateway answers 504).
	TimedOut Exhaustion = "timed_out"
	// Unavailable: outages, or a mix (a gateway answers 503).
	Unavailable Exhaustion = "unavailable"
)

// Error is the final error of a request that got no answer. It lists every
// candidate in chain order with what happened to it. errors.Is matches
// ErrAllFailed, ErrFailClosed or ErrCanceled, and errors.As reaches the
// last failure's provider error through Cause.
type Error struct {
	Route     string
	RequestID string
	// Kind is the kind of the failure that ended the request.
	Kind classify.Kind
	// Phase is how far the last attempt sent got (policy.PhaseUnknown
	// when a request with side effects stopped on an unknown outcome);
	// empty when none was sent.
	Phase policy.Phase
	// Candidates are every candidate of the request, in chain order.
	Candidates []Candidate
	// Attempts counts sends that reached a provider.
	Attempts int
	// Exhaustion says what kind of failure left no candidate (for
	// ErrAllFailed only).
	Exhaustion Exhaustion
	// RetryAt is the earliest time a candidate may be tried again, from
	// the resets and waits the providers gave and the parks they caused;
	// zero when none is known.
	RetryAt time.Time
	// Cause is the last attempt's error, for errors.As.
	Cause error
	// sentinel is one of ErrAllFailed, ErrFailClosed, ErrCanceled.
	sentinel error
}

// Error returns a summary naming every candidate's reason, one per line.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Headline())
	for i, c := range e.Candidates {
		fmt.Fprintf(&b, "\n  %d. %s: %s", i+1, c.Target, c.Reason)
	}
	return b.String()
}

// Headline is the first line of Error: what ended the request, without
// the candidates.
func (e *Error) Headline() string {
	switch e.sentinel {
	case ErrFailClosed:
		return fmt.Sprintf("route %q failed closed (%s) after %d attempt(s)", e.Route, e.Kind, e.Attempts)
	case ErrCanceled:
		return fmt.Sprintf("route %q cancelled after %d attempt(s)", e.Route, e.Attempts)
	}
	what := "no candidate answered"
	switch e.Exhaustion {
	case RateLimited:
		what = "every candidate is rate limited or out of quota"
	case TimedOut:
		what = "every candidate timed out"
	}
	return fmt.Sprintf("route %q: %s (%d candidate(s), %d attempt(s))", e.Route, what, len(e.Candidates), e.Attempts)
}

// Is reports whether target is the error's sentinel.
func (e *Error) Is(target error) bool { return target == e.sentinel }

// Unwrap returns the last attempt's error.
func (e *Error) Unwrap() error { return e.Cause }

// fail builds the final error, listing every candidate in chain order:
// its last failure, its skip, or why it was never reached. A candidate
// the walk ended before that eligible skips now is recorded as skipped
// (see unreached): the error names no skip the ledger lacks.
func (w *walk) fail(kind classify.Kind, sentinel, cause error) error {
	c := &w.chain
	e := &Error{Route: w.route.Name, RequestID: w.ask.id, Kind: kind, Attempts: w.count.sends, Cause: cause,
		sentinel: sentinel, Candidates: make([]Candidate, 0, len(c.cands))}
	for i := len(w.attempts) - 1; i >= 0 && e.Phase == ""; i-- {
		if w.attempts[i].Action != policy.Skip {
			e.Phase = w.attempts[i].Phase
		}
	}
	now, hop := w.clk.Now(), w.passHop()
	for i, t := range c.cands {
		st := &c.cs[i]
		cd := st.last
		if !st.has {
			cd = w.unreached(t, hop+i, now)
		}
		cd.Target, cd.Sends = t.ID(), st.sends
		e.Candidates = append(e.Candidates, cd)
	}
	if sentinel == ErrAllFailed {
		e.Exhaustion = w.exhaustion(e.Candidates)
		if at := c.resets.request; !at.IsZero() && at.After(w.clk.Now()) {
			e.RetryAt = at
		}
	}
	return e
}

// exhaustion says what kind of failure every candidate met: rate limits
// and walls (parks for them and spent quotas included) other than a
// rejected key,
// timeouts, or anything else. Skips that say nothing of the provider (no
// key, the cost ceiling, not reached) do not count.
func (w *walk) exhaustion(cands []Candidate) Exhaustion {
	rated, timed, n := 0, 0, 0
	for i, c := range cands {
		status, kind := c.Status, c.Kind
		if p := w.chain.cs[i].parked; p != nil && status == ledger.StatusSkippedParked {
			status, kind = p.Status, p.Kind
		} else if status == ledger.StatusSkippedQuota {
			kind = classify.Wall // a wall seen coming
		} else if c.Sends == 0 {
			continue
		}
		n++
		switch {
		case rejectedKey(status):
			// A rejected key is the operator's to fix: no client can wait
			// it out.
		case kind == classify.Wall || status == classify.HTTPStatus(http.StatusTooManyRequests):
			rated++
		case timeoutStatus(status):
			timed++
		}
	}
	switch {
	case n > 0 && rated == n:
		return RateLimited
	case n > 0 && timed == n:
		return TimedOut
	}
	return Unavailable
}

// rejectedKey reports a ledger status of a provider refusing detour's key.
func rejectedKey(s string) bool {
	switch s {
	case classify.HTTPStatus(http.StatusUnauthorized), classify.HTTPStatus(http.StatusForbidden),
		classify.HTTPStatus(http.StatusProxyAuthRequired):
		return true
	}
	return false
}

// timeoutStatus reports a ledger status of a target that stayed silent.
func timeoutStatus(s string) bool {
	switch s {
	case classify.StatusHeaderTimeout, classify.StatusFirstToken, classify.StatusIdle, classify.StatusDeadline,
		classify.StatusTimeout:
		return true
	}
	return false
}
