package policy

import (
	"fmt"
	"slices"
	"time"

	"github.com/detourhq/detour/classify"
)

// Action is what the router does after a failed attempt. The words appear in
// the ledger.
type Action string

// The actions of DESIGN.md.
const (
	// Retry sends again to the same target after Decision.Wait.
	Retry Action = "retry"
	// Failover moves to the next candidate serving the same model family.
	Failover Action = "failover"
	// Fallback moves to the next candidate serving another model family.
	Fallback Action = "fallback"
	// Queue waits Decision.Wait for the earliest parked target's reset.
	Queue Action = "queue"
	// Degrade answers with a lesser result the route allows.
	Degrade Action = "degrade"
	// Static answers with the route's zero-cost last resort.
	Static Action = "static"
	// Fail ends the request with the failure (closed).
	Fail Action = "fail"
	// Return ends the request with an answer; the ledger's action for
	// ledger.StatusOK.
	Return Action = "return"
	// Skip passes a candidate by without a send (no key, a park, a
	// ceiling, a contract it cannot honour, ...): the ledger's action for
	// every skipped_* status. The router records it; Decide never returns
	// it.
	Skip Action = "skip"
)

// Phase is how far an attempt got: its commit phase. The words appear in
// the ledger.
type Phase string

// The phases of an attempt. Replay is safe only before output or side
// effects: before PhaseOutputStarted, and for PhaseUnknown only when the
// request is idempotent.
const (
	// PhaseNone: nothing was sent (a skip, or a connection that was never
	// made: refused, a host that does not resolve, TLS).
	PhaseNone Phase = "none"
	// PhaseSent: the request went out and a response said what became of
	// it (an error status, an error event, a refusal), or a stream's
	// status came but none of its output reached the caller.
	PhaseSent Phase = "sent"
	// PhaseUnknown: the request went out and may have been accepted and
	// acted on, but the attempt ended without a response saying so: a
	// timeout, a reset or an early EOF before the response status, or a
	// non-streamed body cut after its status. A request with side effects
	// (Input.NonIdempotent) is never sent again from this phase.
	PhaseUnknown Phase = "unknown"
	// PhaseOutputStarted: content of the answer reached the caller.
	PhaseOutputStarted Phase = "output_started"
	// PhaseToolStarted: a tool call's first delta reached the caller.
	PhaseToolStarted Phase = "tool_started"
	// PhaseCommitted: the whole answer was handed over.
	PhaseCommitted Phase = "committed"
)

// Replayable reports whether a request in phase p may be sent again, as
// far as the phase alone says: nothing of the answer reached the caller.
// PhaseUnknown is replayable only for an idempotent request (Decide
// checks Input.NonIdempotent).
func (p Phase) Replayable() bool {
	return p == "" || p == PhaseNone || p == PhaseSent || p == PhaseUnknown
}

// Next describes the candidate the router would move to. The router has
// already dropped every candidate it would not send to now: parked,
// keyless, turned off, tried, reached by the failure's scope (the same
// account, the same endpoint), unable to honour the request, not
// approved by the route's eval gate, or over a cost ceiling.
type Next struct {
	// Exists is false when no candidate remains.
	Exists bool
	// SameFamily is true when it serves the failed target's model family.
	SameFamily bool
	// LargerContext is true when it may fit a request that overflowed the
	// failed target's context window: it declares a larger one, or one of
	// the two declares none (only the provider can tell then).
	LargerContext bool
	// ExtraCost is the USD it would add over the route's first target for
	// this request, by estimate; 0 when not dearer.
	ExtraCost float64
}

// Input is everything Decide reads. It is a plain value: Decide keeps none.
type Input struct {
	Failure classify.Failure
	// Phase is how far the failed attempt got.
	Phase  Phase
	Budget Budget
	// NonIdempotent marks a request with side effects: one whose outcome
	// is unknown (PhaseUnknown) is never sent again, to any target.
	NonIdempotent bool
	// Now is the time of the decision; Started when the request began.
	Now     time.Time
	Started time.Time
	// Attempts counts sends that reached a provider in this request,
	// including the failed one; TargetAttempts counts those to this target.
	Attempts       int
	TargetAttempts int
	// UnknownHops counts hops already taken because of Unknown failures.
	UnknownHops int
	// FailClosedOn lists the kinds that end the request (a route's
	// fail_closed_on); nil means DefaultFailClosed.
	FailClosedOn []classify.Kind
	// NoFallback forbids moving to another model family.
	NoFallback bool
	// SpentExtra is the USD the request already added beyond its primary.
	SpentExtra float64
	// Next is the candidate the router would move to.
	Next Next
	// EarliestReset is when the first parked candidate of the route may be
	// tried again; zero when none is parked. Used only to Queue.
	EarliestReset time.Time
	// Jitter is a uniform random number in [0, 1) for backoff jitter.
	Jitter float64
	// Blocked is set when the failed target may not be sent to now: the
	// failure just recorded opened its breaker or parked it, its account
	// or its endpoint. A retry would wait for nothing, so Decide moves on.
	Blocked bool
}

// Decision is exactly one action, with its wait and whether to park the
// failed target.
type Decision struct {
	Action Action
	// Wait is the time to wait before the next send (Retry and Queue only).
	Wait time.Duration
	// Park asks the router to park the failed target until ParkUntil (zero:
	// the health store's cooldown).
	Park      bool
	ParkUntil time.Time
	// Why says in a few words why this action was chosen.
	Why string
}

// DefaultFailClosed are the kinds that end a request when a route names none.
var DefaultFailClosed = []classify.Kind{classify.Invalid, classify.Policy}

// FailsClosed reports whether kind k ends a request under the route's
// fail-closed list (nil means DefaultFailClosed).
func FailsClosed(failClosed []classify.Kind, k classify.Kind) bool {
	if failClosed == nil {
		failClosed = DefaultFailClosed
	}
	return slices.Contains(failClosed, k)
}

// Decide turns one failure into one action. It is pure: the same Input always
// gives the same Decision.
func Decide(in Input) Decision {
	b := in.Budget.WithDefaults()
	f := in.Failure
	switch {
	case f.Kind == classify.Canceled:
		return Decision{Action: Fail, Why: "caller cancelled"}
	case FailsClosed(in.FailClosedOn, f.Kind):
		return Decision{Action: Fail, Why: fmt.Sprintf("%s fails closed", f.Kind)}
	case !in.Phase.Replayable():
		return Decision{Action: Fail, Why: fmt.Sprintf("not replayable after %s", in.Phase)}
	case in.Phase == PhaseUnknown && in.NonIdempotent:
		return Decision{Action: Fail, Why: "outcome unknown after the send; the request is not idempotent"}
	}

	deadline := in.Started.Add(b.Deadline)
	left := deadline.Sub(in.Now)
	if left <= 0 {
		return Decision{Action: Fail, Why: "deadline reached"}
	}
	if in.Attempts >= b.MaxAttempts {
		return Decision{Action: Fail, Why: fmt.Sprintf("budget of %d attempts spent", b.MaxAttempts)}
	}

	switch f.Kind {
	case classify.ContextOverflow:
		if in.Next.Exists && in.Next.LargerContext {
			return moveOn(in, b, Decision{Why: "a larger context follows"})
		}
		return Decision{Action: Fail, Why: "context overflow; no larger-context target follows"}
	case classify.Wall:
		return moveOn(in, b, Decision{Park: true, ParkUntil: f.Until, Why: "wall"})
	case classify.Unknown:
		if in.UnknownHops >= 1 {
			return Decision{Action: Fail, Why: "unknown failure after one hop"}
		}
		return moveOn(in, b, Decision{Why: "unknown failure: one hop"})
	}

	// Transient (and anything unexpected is treated as transient).
	if in.Blocked {
		return moveOn(in, b, Decision{Why: "target parked by this failure"})
	}
	if f.Silent {
		return moveOn(in, b, Decision{Why: "target stayed silent: not waited on again"})
	}
	if f.ShouldRetry < 0 {
		return moveOn(in, b, Decision{Why: "provider said x-should-retry: false"})
	}
	if f.RetryAfter > b.MaxServerWait {
		return moveOn(in, b, Decision{Park: true, ParkUntil: f.Until,
			Why: fmt.Sprintf("server wait %s over the %s cap", f.RetryAfter.Round(time.Millisecond), b.MaxServerWait)})
	}
	if f.RetryAfter > b.MaxRetryWait && movable(in, b) {
		// A long wait while a candidate remains is not a retry: the
		// target is parked until the reset it named, and the next
		// candidate is asked now.
		return moveOn(in, b, Decision{Park: true, ParkUntil: f.Until,
			Why: fmt.Sprintf("server wait %s over max_retry_wait %s", f.RetryAfter.Round(time.Millisecond), b.MaxRetryWait)})
	}
	if in.TargetAttempts >= b.MaxPerTarget {
		return moveOn(in, b, Decision{Why: fmt.Sprintf("%d attempts on this target", in.TargetAttempts)})
	}
	wait := f.RetryAfter
	if wait <= 0 {
		wait = Backoff(b, in.TargetAttempts, in.Jitter)
		if wait > b.MaxRetryWait && movable(in, b) {
			// detour's own guess names no reset: nothing is parked.
			return moveOn(in, b, Decision{Why: fmt.Sprintf("backoff %s over max_retry_wait %s",
				wait.Round(time.Millisecond), b.MaxRetryWait)})
		}
	}
	room := left
	if in.Next.Exists {
		room -= b.Reserve
	}
	if wait >= room {
		d := Decision{Why: fmt.Sprintf("wait %s does not fit the budget", wait.Round(time.Millisecond))}
		if f.RetryAfter > 0 {
			d.Park, d.ParkUntil = true, f.Until
		}
		return moveOn(in, b, d)
	}
	return Decision{Action: Retry, Wait: wait, Why: "transient"}
}

// movable reports whether the request may move to the next candidate:
// one exists, the route allows its model family, and it fits the
// extra-cost ceiling.
func movable(in Input, b Budget) bool {
	return in.Next.Exists && (in.Next.SameFamily || !in.NoFallback) && !overExtra(in, b)
}

// overExtra reports whether the next candidate would pass the request's
// extra-cost ceiling.
func overExtra(in Input, b Budget) bool {
	return b.MaxExtraCost > 0 && in.SpentExtra+in.Next.ExtraCost > b.MaxExtraCost
}

// moveOn picks the hop to the next candidate, or queue or fail when none fits.
func moveOn(in Input, b Budget, d Decision) Decision {
	if in.Next.Exists {
		if !in.Next.SameFamily && in.NoFallback {
			d.Action = Fail
			d.Why += "; fallback to another model not allowed"
			return d
		}
		if overExtra(in, b) {
			d.Action = Fail
			d.Why += fmt.Sprintf("; next candidate exceeds the $%g extra-cost ceiling", b.MaxExtraCost)
			return d
		}
		d.Action = Fallback
		if in.Next.SameFamily {
			d.Action = Failover
		}
		return d
	}
	if wait, ok := QueueWait(b, in.Now, in.Started, in.EarliestReset); ok {
		d.Action, d.Wait = Queue, wait
		d.Why += "; queue for the earliest reset"
		return d
	}
	d.Action = Fail
	d.Why += "; no candidate left"
	return d
}

// QueueWait is how long a request that has no candidate left waits for
// earliest, the first reset of a parked candidate, before it walks its
// chain again: ok only when the budget allows queueing, a candidate is
// parked, and the reset comes before the request's deadline (a request
// started at started).
func QueueWait(b Budget, now, started, earliest time.Time) (wait time.Duration, ok bool) {
	if !b.Queue || earliest.IsZero() {
		return 0, false
	}
	wait = max(earliest.Sub(now), 0)
	if !now.Add(wait).Before(started.Add(b.Deadline)) {
		return 0, false
	}
	return wait, true
}

// Backoff is the jittered exponential wait before retry n+1 of one target
// (n = sends to it so far, from 1): BaseBackoff·2^(n-1), capped at
// MaxBackoff, minus up to 25% jitter. jitter is uniform in [0, 1).
func Backoff(b Budget, n int, jitter float64) time.Duration {
	b = b.WithDefaults()
	d := b.BaseBackoff
	for i := 1; i < n && d < b.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, b.MaxBackoff)
	return d - time.Duration(float64(d)*0.25*jitter)
}
