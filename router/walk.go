package router

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/fit"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// cand is one candidate's state in a walk.
type cand struct {
	// id, acct and end are its health keys (Target.ID, AccountKey,
	// EndpointKey), made at first use.
	id, acct, end string
	// tried is set once it had its turn; sends counts its sends.
	tried bool
	sends int
	// last is its last word, when has.
	last Candidate
	has  bool
	// parked is the park that skipped it, if one did.
	parked *health.ParkedError
	// dropped are the needs of the request it goes without (contract),
	// and what adapting the request to its window did.
	dropped []string
	// fitted is the request shortened for its window (Route.Adapt); nil
	// when it goes as it came.
	fitted *llm.Request
}

// walk is the state of one request going down its chain.
type walk struct {
	r       *Router
	route   *Route
	cands   []*Target
	opts    Options
	clk     clock.Clock
	id      string
	started time.Time
	budget  policy.Budget

	attempts    []Attempt
	sends       int
	hop         int
	unknownHops int
	spentExtra  float64
	// cs holds each candidate's state, by its index in cands.
	cs []cand
	// down maps the account and endpoint keys a failure reached in this
	// request to its reason; nil until one did.
	down    map[string]string
	lastErr error
	// stopWhy says why the walk ended before reaching every candidate.
	stopWhy string
	// retryAt is the earliest reset or wait a failure named.
	retryAt time.Time
	// contractSkips counts the candidates that could not honour the
	// request.
	contractSkips int
	// chainDone is set when policy queued after a failure: no candidate
	// is left to try before the earliest reset.
	chainDone bool
	req       *llm.Request // the caller's request, for cost estimates
	// stream is set when the caller asked for a stream; it receives the
	// stream that reached its first output.
	stream *streamWalk
	// embed is set for an embeddings request (Embed); it receives the
	// vectors.
	embed    *embedWalk
	earliest time.Time // earliest reset of a parked candidate
	// spendLimits are the daily ceilings (ceilings), made at first use.
	spendLimits []SpendLimit
	// span is the request's span when the router traces (Router.Trace),
	// else nil.
	span RequestSpan
}

// state returns t's state: t is one of w.cands.
func (w *walk) state(t *Target) *cand {
	for i, c := range w.cands {
		if c == t {
			return &w.cs[i]
		}
	}
	panic("router: target not in the walk")
}

// keys returns t's health keys: its own, its account's, its endpoint's.
func (w *walk) keys(t *Target) (id, acct, end string) {
	c := w.state(t)
	if c.id == "" {
		c.id, c.acct, c.end = t.ID(), t.AccountKey(), t.EndpointKey()
	}
	return c.id, c.acct, c.end
}

// hadTurn reports whether t, or the same target listed earlier, had its
// turn in this request.
func (w *walk) hadTurn(t *Target) bool {
	for i, c := range w.cands {
		if w.cs[i].tried && c.Provider == t.Provider && c.Model == t.Model {
			return true
		}
	}
	return false
}

// downReason is the reason a failure of this request reached key, or "".
func (w *walk) downReason(key string) string {
	if w.down == nil {
		return ""
	}
	return w.down[key]
}

func (w *walk) run(ctx context.Context, req *llm.Request) (*Result, error) {
	w.req = req
	for i := 0; i < len(w.cands); i++ {
		t := w.cands[i]
		if ctx.Err() != nil {
			return nil, w.fail(classify.Canceled, ErrCanceled, ctx.Err())
		}
		if permit, skip := w.admit(t, false); !skip {
			res, stop, err := w.try(ctx, t, i, permit, req)
			if res != nil || stop {
				return res, err
			}
		}
		w.hop++
		// At the end of the chain (every candidate failed or was skipped,
		// or policy found none left), a budget that queues waits for the
		// earliest parked reset and walks the chain again, once: the
		// walk's budget queues no more after that, so policy fails
		// instead of deciding a queue that would not happen.
		if i == len(w.cands)-1 || w.chainDone {
			w.chainDone = false
			again, err := w.queue(ctx)
			if err != nil {
				return nil, err
			}
			if again {
				i = -1
			}
		}
	}
	return nil, w.failAll()
}

// queue waits, when the budget queues, for the earliest parked reset, and
// reports whether the chain is to be walked again (once: the walk's
// budget queues no more after that); an error when the caller left
// during the wait. Apart from run so that its frame, under every send's
// wait, stays small (gateway serveStream).
//
//go:noinline
func (w *walk) queue(ctx context.Context) (bool, error) {
	d, ok := policy.QueueWait(w.budget, w.clk.Now(), w.started, w.earliest)
	if !ok {
		return false, nil
	}
	w.budget.Queue = false
	if !w.sleep(ctx, d) {
		return false, w.fail(classify.Canceled, ErrCanceled, ctx.Err())
	}
	w.earliest = time.Time{}
	for i := range w.cs {
		w.cs[i].tried = false
	}
	clear(w.down)
	return true, nil
}

// failAll returns the error of a walk no candidate answered.
//
//go:noinline
func (w *walk) failAll() error {
	if w.sends == 0 && w.contractSkips > 0 {
		// No candidate could honour the request: it fails closed, as an
		// invalid one does, naming what none can carry.
		return w.fail(classify.Invalid, ErrFailClosed, ErrUnsupported)
	}
	return w.fail(w.lastKind(), ErrAllFailed, w.lastErr)
}

// admit decides whether t may be sent to now, recording a skip when not.
// retry is true for a second send to the same target.
func (w *walk) admit(t *Target, retry bool) (permits, bool) {
	_, acct, end := w.keys(t)
	switch {
	case t.Disabled != "":
		w.skip(t, ledger.StatusSkippedDisabled, "turned off by "+t.Disabled)
		return permits{}, true
	case t.Paced != "":
		w.skip(t, ledger.StatusSkippedPaced, t.Paced)
		return permits{}, true
	case t.Client == nil:
		reason := "no key"
		if t.KeyEnv != "" {
			reason = "no key: " + t.KeyEnv + " is not set"
		}
		w.skip(t, ledger.StatusSkippedNoKey, reason)
		return permits{}, true
	case !retry && w.route.Approve != nil && t != w.cands[0] && w.unapproved(t):
		return permits{}, true
	case !retry && w.hadTurn(t):
		w.skip(t, ledger.StatusSkippedTried, "already had its turn in this request")
		return permits{}, true
	case !retry && w.downReason(acct) != "":
		w.skip(t, ledger.StatusSkippedAccount, classify.OneLine("account "+strings.TrimPrefix(acct, "account:")+
			" failed in this request: "+w.downReason(acct)))
		return permits{}, true
	case !retry && w.downReason(end) != "":
		w.skip(t, ledger.StatusSkippedEndpoint, classify.OneLine("endpoint "+endpointName(t)+
			" failed in this request: "+w.downReason(end)))
		return permits{}, true
	case !retry && w.refused(t):
		return permits{}, true
	case w.overDaily(t):
		return permits{}, true
	case w.budget.MaxExtraCost > 0 && t != w.cands[0]:
		if why, room := w.overExtraCost(t); why != "" && !w.lowerMaxTokens(t, room, "the extra-cost ceiling") {
			w.skip(t, ledger.StatusSkippedCost, why)
			return permits{}, true
		}
	}
	p, parked, err := w.allow(t, w.clk.Now())
	if parked != nil {
		if w.earliest.IsZero() || parked.Until.Before(w.earliest) {
			w.earliest = parked.Until
		}
		w.skipParked(t, parked)
		return permits{}, true
	}
	if err != nil {
		// A health store that cannot answer must not stop traffic.
		return permits{}, false
	}
	return p, false
}

// unapproved reports, and records as a skip, a target the route's eval
// gate does not approve.
func (w *walk) unapproved(t *Target) bool {
	ok, why := w.route.Approve(t)
	if ok {
		return false
	}
	w.skip(t, ledger.StatusSkippedUnapproved, classify.OneLine("not approved by routes."+w.route.Name+".eval_gate: "+why))
	return true
}

// refused reports, and records as a skip, a target that cannot honour
// what the request needs (contract); one that can only by dropping some
// of it keeps that list for its answer.
func (w *walk) refused(t *Target) bool {
	if w.embed != nil {
		return w.embedRefused(t)
	}
	missing, dropped := contract(t, w.req, w.route)
	st := w.state(t)
	st.dropped, st.fitted = dropped, nil
	if len(missing) == 0 {
		out, did, ok := fitted(w.req, t, w.route)
		switch {
		case !ok:
			in, _ := fit.Estimate(w.req, t.ModelFamily())
			missing = append(missing, fmt.Sprintf("about %d input tokens even adapted by routes.%s.adapt (its context is %d)",
				in, w.route.Name, t.Context))
		case out != w.req:
			// The adapted request goes by its fields: the client's raw
			// body still holds the whole history.
			out.Raw = nil
			st.fitted, st.dropped = out, append(st.dropped, did...)
		}
	}
	if len(missing) == 0 {
		return false
	}
	w.contractSkips++
	w.skip(t, ledger.StatusSkippedContract, classify.OneLine(contractReason(t, missing)))
	return true
}

// skipParked records the skip of t refused by its own, its account's or
// its endpoint's park.
func (w *walk) skipParked(t *Target, parked *health.ParkedError) {
	what := ""
	_, acct, end := w.keys(t)
	switch parked.Key {
	case acct:
		what = "account " + strings.TrimPrefix(parked.Key, "account:") + " "
	case end:
		what = "endpoint " + endpointName(t) + " "
	}
	reason := what + "parked until " + untilText(parked.Until, w.clk.Now())
	if parked.State == health.HalfOpen {
		reason = what + "probe in flight"
	}
	if parked.Reason != "" {
		reason += " (" + parked.Reason + ")"
	}
	w.skip(t, ledger.StatusSkippedParked, classify.OneLine(reason))
	w.state(t).parked = parked
	if parked.Until.After(w.clk.Now()) && (w.retryAt.IsZero() || parked.Until.Before(w.retryAt)) {
		w.retryAt = parked.Until
	}
}

// endpointName is t's endpoint for messages: its host, or its provider.
func endpointName(t *Target) string {
	if t.Endpoint != "" {
		return t.Endpoint
	}
	return "of provider " + t.Provider
}

// try sends to t until it answers or policy moves on. stop ends the walk.
func (w *walk) try(ctx context.Context, t *Target, idx int, p permits, req *llm.Request) (*Result, bool, error) {
	w.state(t).tried = true
	if f := w.state(t).fitted; f != nil {
		req = f
	}
	treq := req.Clone()
	treq.Model = t.Model
	for n := 1; ; n++ {
		if n > 1 {
			// A permit covers one send: the target may have opened since.
			np, skip := w.admit(t, true)
			if skip {
				return nil, false, nil
			}
			p = np
		}
		w.sends++
		w.state(t).sends++
		start := w.clk.Now()
		w.begin(t, n, idx, start)
		st, resp, headers, err := w.send(ctx, t, idx, treq, start)
		now := w.clk.Now()
		if err == nil {
			return w.succeeded(t, p, n, idx, st, resp, start, now), true, nil
		}
		retry, done, err := w.failed(ctx, t, idx, n, p, treq, start, err, headers, now)
		if !retry {
			return nil, done, err
		}
	}
}

// send makes one send of treq to t, the walk's idx-th candidate, begun
// at start: a stream opened to its first output, an embedding, or a whole
// answer. headers reports that the response's status came.
//
//go:noinline
func (w *walk) send(ctx context.Context, t *Target, idx int, treq *llm.Request, start time.Time) (st *routedStream, resp *llm.Response, headers bool, err error) {
	switch {
	case w.stream != nil:
		st, headers, err = w.openStream(ctx, t, treq, w.limits(idx, start, true))
	case w.embed != nil:
		resp, headers, err = w.embedOnce(ctx, t, w.limits(idx, start, false))
	default:
		resp, headers, err = w.complete(ctx, t, treq, w.limits(idx, start, false))
	}
	return st, resp, headers, err
}

// begin tells a ledger that journals (ledger.Journal) that t's n-th send
// starts now, so that it is in the ledger even if the process dies before
// the send ends.
func (w *walk) begin(t *Target, n, idx int, start time.Time) {
	if j, ok := w.r.Ledger.(ledger.Journal); ok {
		_ = j.Begin(ledger.Record{Time: start, RequestID: w.id, Route: w.route.Name, // like record's Write
			Provider: t.Provider, Model: t.Model, Hop: w.hop, Attempt: n, Failover: idx > 0})
	}
}

// attempt returns the record of t's n-th send, begun at start and ended
// (or answered) at now.
func (w *walk) attempt(t *Target, n, idx int, start, now time.Time) Attempt {
	return Attempt{Target: t, Hop: w.hop, N: n, Failover: idx > 0, Start: start, Duration: now.Sub(start)}
}

// succeeded returns the result of t's n-th send, which answered: a stream
// (whose record is written when it ends) or a whole answer, recorded now.
// Apart from try for try's frame to stay small (see failed).
//
//go:noinline
func (w *walk) succeeded(t *Target, p permits, n, idx int, st *routedStream, resp *llm.Response, start, now time.Time) *Result {
	a := w.attempt(t, n, idx, start, now)
	first := w.route.Chain[0].ModelFamily()
	dropped := w.state(t).dropped
	res := &Result{RequestID: w.id, Target: t, Degraded: t.ModelFamily() != first || len(dropped) > 0,
		Dropped: dropped, Phase: policy.PhaseCommitted}
	a.Dropped, a.Degraded = dropped, res.Degraded
	if st != nil {
		// The stream's record is written when it ends.
		st.attempt, st.permits, st.start = a, p, start
		res.Phase = policy.PhaseSent // until output reaches the caller
		w.stream.Result, w.stream.Stream = res, st
		res.Attempts = w.attempts
		return res
	}
	w.done(t, p, "", health.Outcome{}, now)
	a.Status, a.Action, a.Phase, a.Usage = ledger.StatusOK, policy.Return, policy.PhaseCommitted, resp.Usage
	a.RateLimit = resp.RateLimit
	a.Cost = t.Cost(resp.Usage)
	if resp.Model == "" {
		resp.Model = t.Model
	}
	a.Model = resp.Model
	w.record(a)
	res.Response, res.Attempts = resp, w.attempts
	return res
}

// failed settles a failed send to t (its n-th, of treq, begun at start):
// it classifies err, lets the policy decide, records the attempt and
// the target's health, and reports whether to send to t again (after the
// wait, already slept) or, if not, whether the walk is done and with what
// error. try's failure path, in a frame of its own: try is under every
// send's wait, and a stream's handler waits under it (see gateway
// serveStream).
//
//go:noinline
func (w *walk) failed(ctx context.Context, t *Target, idx, n int, p permits, treq *llm.Request, start time.Time, err error, headers bool, now time.Time) (retry, done bool, _ error) {
	a := w.attempt(t, n, idx, start, now)
	f := classify.Classify(err, now)
	if ctx.Err() != nil {
		f.Kind, f.Status, f.Scope, f.Reason = classify.Canceled, classify.StatusCanceled, classify.ScopeAttempt, "caller cancelled"
	}
	w.lastErr = err
	a.Phase = failedPhase(err, f, w.stream != nil, headers)
	if f.Scope == classify.ScopeAccount || f.Scope == classify.ScopeEndpoint {
		if w.down == nil {
			w.down = make(map[string]string)
		}
		w.down[w.scopeKey(t, f.Scope)] = f.Reason
	}
	in := policy.Input{
		Failure: f, Phase: a.Phase, NonIdempotent: w.opts.NonIdempotent, Budget: w.budget,
		Now: now, Started: w.started,
		Attempts: w.sends, TargetAttempts: n, UnknownHops: w.unknownHops,
		FailClosedOn: w.route.FailClosedOn, NoFallback: w.route.NoFallback,
		SpentExtra: w.spentExtra, Next: w.next(idx, t, treq), EarliestReset: w.earliest,
		Jitter: w.r.jitter(),
	}
	if !f.Until.IsZero() && (in.EarliestReset.IsZero() || f.Until.Before(in.EarliestReset)) {
		in.EarliestReset = f.Until
	}
	d := policy.Decide(in)
	out := outcome(f)
	if (d.Park || f.Kind == classify.Wall) && !f.OwnLimit() {
		out.Until = d.ParkUntil
		if out.Until.IsZero() {
			out.Until = f.Until
		}
	}
	w.done(t, p, f.Scope, out, now)
	if d.Action == policy.Retry && w.blocked(t, now) {
		// No wait without a send: this failure parked the target (a
		// failed probe, a breaker that tripped), so move on now.
		in.Blocked = true
		d = policy.Decide(in)
	}
	if e := w.r.health().Get(w.scopeKey(t, f.Scope), now); e.State == health.Open && e.Until.After(now) {
		// The park this failure caused: when the target may be
		// tried again.
		if w.earliest.IsZero() || e.Until.Before(w.earliest) {
			w.earliest = e.Until
		}
		if w.retryAt.IsZero() || e.Until.Before(w.retryAt) {
			w.retryAt = e.Until
		}
	}
	if u := f.Until; u.After(now) && (w.retryAt.IsZero() || u.Before(w.retryAt)) {
		w.retryAt = u
	}
	a.Status, a.Kind, a.Action, a.Reason, a.Failure = f.Status, f.Kind, d.Action, f.Reason, &f
	a.Wait = d.Wait
	w.setLast(t, Candidate{Status: f.Status, Kind: f.Kind, Scope: f.Scope, Reason: fullReason(f)})
	w.spentExtra += a.Cost
	w.record(a)
	switch d.Action {
	case policy.Retry:
		if !w.sleep(ctx, d.Wait) {
			return false, true, w.fail(classify.Canceled, ErrCanceled, ctx.Err())
		}
		return true, false, nil
	case policy.Failover, policy.Fallback:
		if f.Kind == classify.Unknown {
			w.unknownHops++
		}
		if w.r.OnFailover != nil {
			w.r.OnFailover(Hop{RequestID: w.id, From: t.ID(), To: w.nextID(idx), Action: d.Action, Reason: f.Reason})
		}
		return false, false, nil
	case policy.Queue:
		// The walk waits at the end of the chain (run), where a
		// chain of parked candidates queues too.
		w.earliest, w.chainDone = in.EarliestReset, true
		return false, false, nil
	default:
		w.stopWhy = d.Why
		sentinel := ErrAllFailed
		switch {
		case f.Kind == classify.Canceled:
			sentinel = ErrCanceled
		case f.Kind == classify.ContextOverflow || policy.FailsClosed(w.route.FailClosedOn, f.Kind):
			sentinel = ErrFailClosed
		}
		return false, true, w.fail(f.Kind, sentinel, err)
	}
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

// limits are the time limits of an attempt to cands[idx] sent at now:
// the route's, and what the deadline leaves it, less the reserve while
// another candidate could follow.
func (w *walk) limits(idx int, now time.Time, stream bool) limits {
	header, firstToken, idle := w.route.Timeouts()
	room := w.started.Add(w.budget.Deadline).Sub(now)
	if w.followed(idx) && room-w.budget.Reserve > 0 {
		room -= w.budget.Reserve
	}
	l := limits{header: header, room: max(room, time.Nanosecond), idle: idle, maxDuration: max(w.route.MaxDuration, 0)}
	if stream {
		l.firstToken = firstToken
	}
	return l
}

// followed reports whether a candidate with a key comes after idx.
func (w *walk) followed(idx int) bool {
	for _, t := range w.cands[idx+1:] {
		if t.Client != nil {
			return true
		}
	}
	return false
}

// complete sends one non-streamed attempt under its limits; headers
// reports that the response's status came.
func (w *walk) complete(ctx context.Context, t *Target, req *llm.Request, lim limits) (*llm.Response, bool, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wt := newWatch(cancel, lim, false)
	resp, err := t.Client.Complete(llm.WithProgress(actx, wt), req)
	wt.stop()
	return resp, wt.heard(), wt.explain(err)
}

// overExtraCost says why a send to t would pass the extra-cost ceiling,
// or "" when it would not; room is what t's send may cost (USD).
func (w *walk) overExtraCost(t *Target) (why string, room float64) {
	u := w.estimate(w.req, t)
	first := w.cands[0].Cost(u)
	room = w.budget.MaxExtraCost - w.spentExtra + first
	if extra := t.Cost(u) - first; w.spentExtra+extra > w.budget.MaxExtraCost {
		why = fmt.Sprintf("would add about $%.4f, over the $%g extra-cost ceiling", extra, w.budget.MaxExtraCost)
	}
	return why, room
}

// estimate is the usage req would bill at t, for the extra-cost ceiling
// and the context check: about four characters of text a token in
// (content, tool arguments, text parts; not images or documents), and the
// output cap out (the request's, else the target's, else 1024).
func estimate(req *llm.Request, t *Target) llm.Usage {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content)
		for _, tc := range m.ToolCalls {
			chars += len(tc.Arguments)
		}
		for _, p := range m.Parts {
			// Text counts as text; an image, a document or audio is priced
			// by each provider its own way: not estimated.
			chars += len(p.Text)
		}
	}
	out := req.MaxTokens
	if out <= 0 {
		out = t.MaxOutput
	}
	if out <= 0 {
		out = 1024
	}
	return llm.Usage{InputTokens: chars/4 + 1, OutputTokens: out}
}

// next describes the first candidate after idx that could be sent to now:
// it has a key, had no turn yet, and neither it, its account nor its
// endpoint is parked or reached by a failure of this request. Another
// model of the failed target's provider stays eligible.
func (w *walk) next(idx int, failed *Target, req *llm.Request) policy.Next {
	now := w.clk.Now()
	for _, t := range w.cands[idx+1:] {
		if t.Client == nil || t.Disabled != "" || t.Paced != "" || w.hadTurn(t) {
			continue
		}
		if len(w.missing(t)) > 0 {
			continue // admit skips it
		}
		if _, acct, end := w.keys(t); w.downReason(acct) != "" || w.downReason(end) != "" || w.blocked(t, now) {
			continue
		}
		n := policy.Next{Exists: true, SameFamily: t.ModelFamily() == failed.ModelFamily()}
		n.LargerContext = t.Context > 0 && failed.Context > 0 && t.Context > failed.Context
		if w.budget.MaxExtraCost > 0 {
			u := w.estimate(req, t)
			n.ExtraCost = max(t.Cost(u)-w.cands[0].Cost(u), 0)
			if w.spentExtra+n.ExtraCost > w.budget.MaxExtraCost {
				room := w.budget.MaxExtraCost - w.spentExtra + w.cands[0].Cost(u)
				if _, ok := w.lowered(t, req, room); !ok {
					continue // admit skips it; look for an affordable one
				}
				n.ExtraCost = max(room-w.cands[0].Cost(u), 0) // what it costs lowered, at most
			}
		}
		return n
	}
	return policy.Next{}
}

func (w *walk) nextID(idx int) string {
	if idx+1 < len(w.cands) {
		return w.cands[idx+1].ID()
	}
	return ""
}

func (w *walk) sleep(ctx context.Context, d time.Duration) bool {
	return w.clk.Sleep(ctx, d)
}

// setLast records c as t's last word.
func (w *walk) setLast(t *Target, c Candidate) {
	st := w.state(t)
	st.last, st.has = c, true
}

func (w *walk) skip(t *Target, status, reason string) {
	w.setLast(t, Candidate{Status: status, Reason: reason})
	w.record(Attempt{Target: t, Hop: w.hop, Failover: t != w.cands[0], Status: status, Action: policy.Skip,
		Phase: policy.PhaseNone, Reason: reason})
}

// record writes the attempt to the ledger before anything else happens.
func (w *walk) record(a Attempt) {
	now := w.clk.Now()
	if a.Start.IsZero() {
		a.Start = now // a skip or a last resort: no time passes
	}
	a.RequestID = w.id
	w.attempts = append(w.attempts, a)
	w.spend(a.Cost)
	rec := ledger.Record{
		Time: a.Start, RequestID: w.id, Route: w.route.Name,
		Provider: a.Target.Provider, Model: a.Target.Model,
		Hop: a.Hop, Attempt: a.N, Failover: a.Failover,
		Status: a.Status, Kind: string(a.Kind), Action: string(a.Action), Phase: string(a.Phase),
		TokensIn: a.Usage.InputTokens, TokensOut: a.Usage.OutputTokens,
		TokensCacheRead: a.Usage.CacheReadTokens, TokensCacheWrite: a.Usage.CacheWriteTokens,
		Seconds: a.Duration.Seconds(), WaitSeconds: a.Wait.Seconds(),
		Cost: a.Cost, Reason: a.Reason, Dropped: a.Dropped,
		Degraded: a.Degraded && (a.Status == ledger.StatusOK || a.Status == ledger.StatusLastResort),
	}
	if a.Failure != nil {
		rec.Scope = string(a.Failure.Scope)
		if a.Failure.RetryAfter > 0 {
			rec.RetryAfterS = a.Failure.RetryAfter.Seconds()
		}
	}
	if w.r.Ledger != nil {
		// A ledger that cannot be written must not turn an answer into a
		// failure; the sink reports its own errors.
		_ = w.r.Ledger.Write(rec)
	}
	if w.r.OnAttempt != nil {
		w.r.OnAttempt(a)
	}
	if w.span != nil {
		w.span.Attempt(a)
	}
}

func (w *walk) lastKind() classify.Kind {
	for i := len(w.attempts) - 1; i >= 0; i-- {
		if k := w.attempts[i].Kind; k != "" {
			return k
		}
	}
	return ""
}

// fail builds the final error, listing every candidate in chain order:
// its last failure, its skip, or why it was never reached.
func (w *walk) fail(kind classify.Kind, sentinel, cause error) error {
	e := &Error{Route: w.route.Name, RequestID: w.id, Kind: kind, Attempts: w.sends, Cause: cause, sentinel: sentinel,
		Candidates: make([]Candidate, 0, len(w.cands))}
	for i := len(w.attempts) - 1; i >= 0 && e.Phase == ""; i-- {
		if w.attempts[i].Action != policy.Skip {
			e.Phase = w.attempts[i].Phase
		}
	}
	for i, t := range w.cands {
		st := &w.cs[i]
		c := st.last
		if !st.has {
			c = Candidate{Reason: classify.OneLine("not tried: " + w.unreached(t))}
		}
		c.Target, c.Sends = t.ID(), st.sends
		e.Candidates = append(e.Candidates, c)
	}
	if sentinel == ErrAllFailed {
		e.Exhaustion = w.exhaustion(e.Candidates)
		if !w.retryAt.IsZero() && w.retryAt.After(w.clk.Now()) {
			e.RetryAt = w.retryAt
		}
	}
	return e
}

// unreached says why the walk ended before t: a failure earlier in the
// request reached its account or endpoint, it is parked, or the walk
// stopped for the reason policy gave.
func (w *walk) unreached(t *Target) string {
	switch {
	case w.downReason(t.AccountKey()) != "":
		return "account " + strings.TrimPrefix(t.AccountKey(), "account:") + " failed in this request: " + w.downReason(t.AccountKey())
	case w.downReason(t.EndpointKey()) != "":
		return "endpoint " + endpointName(t) + " failed in this request: " + w.downReason(t.EndpointKey())
	case t.Client == nil:
		return "no key"
	case t.Disabled != "":
		return "turned off by " + t.Disabled
	case t.Paced != "":
		return t.Paced
	case w.blocked(t, w.clk.Now()):
		return "parked"
	}
	// Why policy saw no next candidate in it: what admit would have said.
	if missing := w.missing(t); len(missing) > 0 {
		return w.missingReason(t, missing)
	}
	if w.budget.MaxExtraCost > 0 && t != w.cands[0] {
		if why, _ := w.overExtraCost(t); why != "" {
			return why
		}
	}
	if w.stopWhy != "" {
		return w.stopWhy
	}
	return "the request ended first"
}

// exhaustion says what kind of failure every candidate met: rate limits
// and walls (parks for them included) other than a rejected key,
// timeouts, or anything else. Skips that say nothing of the provider (no
// key, the cost ceiling, not reached) do not count.
func (w *walk) exhaustion(cands []Candidate) Exhaustion {
	rated, timed, n := 0, 0, 0
	for i, c := range cands {
		status, kind := c.Status, c.Kind
		if p := w.cs[i].parked; p != nil && status == ledger.StatusSkippedParked {
			status, kind = p.Status, p.Kind
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

// untilText writes the end of a park for a reason: its time and zone, and
// its date too when it is a day away or more.
func untilText(until, now time.Time) string {
	layout := "15:04:05 MST"
	if d := until.Sub(now); d >= 24*time.Hour || d <= -24*time.Hour {
		layout = "2006-01-02 15:04:05 MST"
	}
	return until.UTC().Format(layout)
}
