package router

import (
	"context"
	"errors"
	"strings"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// failed settles a failed send, tn's, in three steps: classify it (what
// the failure is, how far the send got), let policy decide (an Input
// built from the walk's counters), and settle it (the target's health,
// the ledger line); then it acts on the decision. It reports whether to
// send to the target again (after the wait, already slept) or, if not,
// whether the walk is done and with what error. try's failure path, in a
// frame of its own: try is under every send's wait, and a stream's
// handler waits under it (see gateway serveStream).
//
//go:noinline
func (w *walk) failed(ctx context.Context, tn *turn, err error, headers bool) (retry, done bool, _ error) {
	f, phase := w.classified(ctx, tn, err, headers)
	w.end.err = err
	tn.rid = llm.ProviderRequestIDOfError(err)
	if f.Kind == classify.ContextOverflow {
		// Before policy hears of the next candidate: one whose window is
		// no larger is no candidate now.
		w.chain.overflowed(tn.t)
	}
	if f.Scope == classify.ScopeAccount || f.Scope == classify.ScopeEndpoint {
		// No other target of that account or endpoint is offered next.
		w.chain.reach(w.scopeKey(tn.t, f.Scope), f.Reason)
	}
	in := w.input(tn, f, phase)
	d := w.settle(tn, &in, policy.Decide(in))
	if pe, ok := errors.AsType[*llm.ProviderError](err); ok && d.Action != policy.Retry {
		// What the failure's headers said of the limits is for the next
		// requests; a retry of this one waits as policy decided.
		w.heed(tn.t, pe.RateLimit, tn.end)
	}
	return w.act(ctx, tn, &in, d, err)
}

// classified reads the failure of tn's send: its kind, scope and reason
// (canceled when the caller left, whatever the send said), and how far
// the send got.
func (w *walk) classified(ctx context.Context, tn *turn, err error, headers bool) (classify.Failure, policy.Phase) {
	f := classify.Classify(err, tn.end)
	if ctx.Err() != nil {
		f.Kind, f.Status, f.Scope, f.Reason = classify.Canceled, classify.StatusCanceled, classify.ScopeAttempt, "caller cancelled"
	}
	return f, w.sender.phase(err, f, headers)
}

// input is what policy.Decide reads of failure f (phase) of tn's send:
// the walk's counters, its budget and route, and the candidate it would
// move to.
func (w *walk) input(tn *turn, f classify.Failure, phase policy.Phase) policy.Input {
	in := w.count.input(f, phase)
	in.Budget, in.NonIdempotent, in.Now, in.Started = w.ask.budget, w.ask.opts.NonIdempotent, tn.end, w.ask.started
	in.TargetAttempts, in.FailClosedOn, in.NoFallback = tn.n, w.route.FailClosedOn, w.route.NoFallback
	in.Next, in.EarliestReset = w.next(tn.idx, tn.t), earliest(w.chain.resets.pass, f.Until)
	in.Jitter = w.r.jitter()
	return in
}

// input is the policy.Input of failure f (phase) with what the walk
// spent so far.
func (c counters) input(f classify.Failure, phase policy.Phase) policy.Input {
	return policy.Input{Failure: f, Phase: phase, Attempts: c.sends, UnknownHops: c.unknownHops, SpentExtra: c.spentExtra}
}

// settle accounts for the failure of tn's send under decision d: the
// target's health hears it (a park when policy or the failure named one;
// nothing when one of detour's own limits ended it), a retry of a target
// this failure just parked becomes a move (no wait without a send), the
// parks and waits it named are noted (the queue, the final error's
// RetryAt), and its ledger line is written. It returns the decision the
// walk acts on.
func (w *walk) settle(tn *turn, in *policy.Input, d policy.Decision) policy.Decision {
	t, f, now := tn.t, in.Failure, tn.end
	out := outcome(f)
	if (d.Park || f.Kind == classify.Wall) && !f.OwnLimit() {
		out.Until = d.ParkUntil
		if out.Until.IsZero() {
			out.Until = f.Until
		}
	}
	w.done(t, tn.p, f.Scope, out, now)
	w.used(tn.p, llm.Usage{})
	if d.Action == policy.Retry && w.parkOf(t, now) != nil {
		// No wait without a send: this failure parked the target (a
		// failed probe, a breaker that tripped), so move on now.
		in.Blocked = true
		d = policy.Decide(*in)
	}
	if e := w.r.health().Get(w.scopeKey(t, f.Scope), now); e.State == health.Open && e.Until.After(now) {
		w.chain.resets.parked(e.Until, now) // the park this failure caused
	}
	w.chain.resets.named(f.Until, now)
	a := w.attempt(tn)
	a.Phase, a.Status, a.Kind, a.Action, a.Reason, a.Failure = in.Phase, f.Status, f.Kind, d.Action, f.Reason, &f
	a.Wait = d.Wait
	w.chain.setLast(t, Candidate{Status: f.Status, Kind: f.Kind, Scope: f.Scope, Reason: fullReason(f)})
	w.count.spentExtra += a.Cost
	w.record(a)
	return d
}

// act carries out decision d after the failure of tn's send (err): a
// retry once its wait is slept, a hop (counted, and told OnFailover), a
// queue at the end of the chain, or the end of the walk with its error.
func (w *walk) act(ctx context.Context, tn *turn, in *policy.Input, d policy.Decision, err error) (retry, done bool, _ error) {
	kind := in.Failure.Kind
	switch d.Action {
	case policy.Retry:
		if !w.sleep(ctx, d.Wait) {
			return false, true, w.fail(classify.Canceled, ErrCanceled, ctx.Err())
		}
		return true, false, nil
	case policy.Failover, policy.Fallback:
		if kind == classify.Unknown {
			w.count.unknownHops++
		}
		if w.r.OnFailover != nil {
			w.r.OnFailover(Hop{RequestID: w.ask.id, From: tn.t.ID(), To: w.nextID(tn.idx), Action: d.Action,
				Reason: in.Failure.Reason})
		}
		return false, false, nil
	case policy.Queue:
		// The walk waits at the end of the chain (run), where a chain of
		// parked candidates queues too.
		w.chain.resets.pass, w.chain.exhausted = in.EarliestReset, true
		return false, false, nil
	}
	w.end.why = d.Why
	sentinel := ErrAllFailed
	switch {
	case kind == classify.Canceled:
		sentinel = ErrCanceled
	case kind == classify.ContextOverflow || policy.FailsClosed(w.route.FailClosedOn, kind):
		sentinel = ErrFailClosed
	}
	return false, true, w.fail(kind, sentinel, err)
}

// failedPhase is how far a failed attempt got: sent when a response said
// what became of it (a provider's error, or a stream whose status came
// but none of whose output reached the caller), none when no connection
// was made (refused, a host that does not resolve, TLS), else unknown:
// the request went out and may have been acted on (a timeout, a reset or
// an EOF before the status; a non-streamed body cut after it). headers
// reports that the response's status came.
func failedPhase(err error, f classify.Failure, stream, headers bool) policy.Phase {
	if _, ok := errors.AsType[*llm.ProviderError](err); ok || (stream && headers) {
		return policy.PhaseSent
	}
	if !headers && f.Scope == classify.ScopeEndpoint {
		return policy.PhaseNone
	}
	return policy.PhaseUnknown
}

// fullReason is the reason with the provider's whole message where the
// reason had to cut it or leave it out, each said once, for the final
// error summary: "503 The engine is overloaded", never "503 The engine is
// overloaded — The engine is overloaded".
func fullReason(f classify.Failure) string {
	d := strings.TrimSpace(f.Detail)
	if d == "" || d == f.Reason {
		return f.Reason
	}
	core := strings.TrimRight(d, ". ")
	if strings.Contains(strings.ToLower(f.Reason), strings.ToLower(core)) {
		return f.Reason
	}
	if head, tail, cut := strings.Cut(f.Reason, "…"); cut {
		// The reason holds the start of the message, cut: put the whole
		// message in its place.
		probe := d[:min(len(d), 24)]
		if i := strings.Index(head, probe); i >= 0 {
			return head[:i] + d + tail
		}
	}
	return f.Reason + " — " + d
}
