package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

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
	tried       map[string]bool      // providers that got a send
	last        map[string]Candidate // each target's last word, by ID
	lastErr     error
	// chainDone is set when policy queued after a failure: no candidate
	// is left to try before the earliest reset.
	chainDone bool
	req       *llm.Request // the caller's request, for cost estimates
	// stream is set when the caller asked for a stream; it receives the
	// stream that reached its first output.
	stream   *streamWalk
	earliest time.Time // earliest reset of a parked candidate
}

func (w *walk) run(ctx context.Context, req *llm.Request) (*Result, error) {
	w.req = req
	w.tried = make(map[string]bool)
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
			if d, ok := policy.QueueWait(w.budget, w.clk.Now(), w.started, w.earliest); ok {
				w.budget.Queue = false
				if !w.sleep(ctx, d) {
					return nil, w.fail(classify.Canceled, ErrCanceled, ctx.Err())
				}
				w.earliest = time.Time{}
				w.tried = make(map[string]bool)
				i = -1
			}
		}
	}
	return nil, w.fail(w.lastKind(), ErrAllFailed, w.lastErr)
}

// admit decides whether t may be sent to now, recording a skip when not.
// retry is true for a second send to the same target.
func (w *walk) admit(t *Target, retry bool) (health.Permit, bool) {
	id := t.ID()
	switch {
	case t.Client == nil:
		reason := "no key"
		if t.KeyEnv != "" {
			reason = "no key: " + t.KeyEnv + " is not set"
		}
		w.skip(t, "skipped_no_key", reason)
		return health.Permit{}, true
	case w.tried[t.Provider] && !retry:
		w.skip(t, "skipped_tried", "provider "+t.Provider+" already tried in this request")
		return health.Permit{}, true
	case w.budget.MaxExtraCost > 0 && t != w.cands[0]:
		u := estimate(w.req, t)
		if extra := t.Cost(u) - w.cands[0].Cost(u); w.spentExtra+extra > w.budget.MaxExtraCost {
			w.skip(t, "skipped_cost", fmt.Sprintf("would add about $%.4f, over the $%g extra-cost ceiling", extra, w.budget.MaxExtraCost))
			return health.Permit{}, true
		}
	}
	permit, err := w.r.health().Allow(id, w.clk.Now())
	var parked *health.ParkedError
	if errors.As(err, &parked) {
		if w.earliest.IsZero() || parked.Until.Before(w.earliest) {
			w.earliest = parked.Until
		}
		reason := fmt.Sprintf("parked until %s", parked.Until.UTC().Format("15:04:05"))
		if parked.Reason != "" {
			reason += " (" + parked.Reason + ")"
		}
		w.skip(t, "skipped_parked", classify.OneLine(reason))
		return health.Permit{}, true
	}
	return permit, false
}

// try sends to t until it answers or policy moves on. stop ends the walk.
func (w *walk) try(ctx context.Context, t *Target, idx int, permit health.Permit, req *llm.Request) (*Result, bool, error) {
	w.tried[t.Provider] = true
	treq := req.Clone()
	treq.Model = t.Model
	for n := 1; ; n++ {
		if n > 1 {
			// A permit covers one send: the target may have opened since.
			p, skip := w.admit(t, true)
			if skip {
				return nil, false, nil
			}
			permit = p
		}
		w.sends++
		start := w.clk.Now()
		actx, cancel := w.attemptContext(ctx, start)
		var resp *llm.Response
		var st *routedStream
		var err error
		if w.stream != nil {
			st, err = w.openStream(actx, cancel, t, treq)
		} else {
			resp, err = t.Client.Complete(actx, treq)
		}
		if st == nil {
			cancel()
		}
		now := w.clk.Now()
		a := Attempt{Target: t, Hop: w.hop, N: n, Failover: idx > 0, Duration: now.Sub(start)}
		if err == nil {
			first := w.route.Chain[0].ModelFamily()
			res := &Result{RequestID: w.id, Target: t, Degraded: t.ModelFamily() != first}
			if st != nil {
				// The stream's record is written when it ends.
				st.attempt, st.permit, st.start = a, permit, start
				w.stream.Result, w.stream.Stream = res, st
				res.Attempts = w.attempts
				return res, true, nil
			}
			w.r.health().Done(t.ID(), permit, health.Outcome{}, now)
			a.Status, a.Action, a.Usage = "ok", policy.Return, resp.Usage
			a.Cost = t.Cost(resp.Usage)
			w.record(a)
			if resp.Model == "" {
				resp.Model = t.Model
			}
			res.Response, res.Attempts = resp, w.attempts
			return res, true, nil
		}
		f := classify.Classify(err, now)
		if ctx.Err() != nil {
			f.Kind, f.Status, f.Reason = classify.Canceled, "canceled", "caller cancelled"
		}
		w.lastErr = err
		next := w.next(idx, t, treq)
		earliest := w.earliest
		if !f.Until.IsZero() && (earliest.IsZero() || f.Until.Before(earliest)) {
			earliest = f.Until
		}
		d := policy.Decide(policy.Input{
			Failure: f, Phase: policy.PhaseSent, Budget: w.budget,
			Now: now, Started: w.started,
			Attempts: w.sends, TargetAttempts: n, UnknownHops: w.unknownHops,
			FailClosed: w.route.FailClosed, NoFallback: w.route.NoFallback,
			SpentExtra: w.spentExtra, Next: next, EarliestReset: earliest,
			Jitter: w.r.jitter(),
		})
		out := health.Outcome{Kind: f.Kind, Reason: f.Reason}
		if d.Park || f.Kind == classify.Wall {
			out.Until = d.ParkUntil
			if out.Until.IsZero() {
				out.Until = f.Until
			}
		}
		w.r.health().Done(t.ID(), permit, out, now)
		if !out.Until.IsZero() && (w.earliest.IsZero() || out.Until.Before(w.earliest)) {
			w.earliest = out.Until
		}
		a.Status, a.Kind, a.Action, a.Reason, a.Failure = f.Status, f.Kind, d.Action, f.Reason, &f
		a.Wait = d.Wait
		w.last[t.ID()] = Candidate{Target: t.ID(), Status: f.Status, Kind: f.Kind, Reason: fullReason(f)}
		w.spentExtra += a.Cost
		w.record(a)
		switch d.Action {
		case policy.Retry:
			if !w.sleep(ctx, d.Wait) {
				return nil, true, w.fail(classify.Canceled, ErrCanceled, ctx.Err())
			}
			continue
		case policy.Failover, policy.Fallback:
			if f.Kind == classify.Unknown {
				w.unknownHops++
			}
			if w.r.OnFailover != nil {
				w.r.OnFailover(Hop{RequestID: w.id, From: t.ID(), To: w.nextID(idx), Action: d.Action, Reason: f.Reason})
			}
			return nil, false, nil
		case policy.Queue:
			// The walk waits at the end of the chain (run), where a
			// chain of parked candidates queues too.
			w.earliest, w.chainDone = earliest, true
			return nil, false, nil
		default:
			sentinel := ErrAllFailed
			switch {
			case f.Kind == classify.Canceled:
				sentinel = ErrCanceled
			case f.Kind == classify.ContextOverflow || policy.FailsClosed(w.route.FailClosed, f.Kind):
				sentinel = ErrFailClosed
			}
			return nil, true, w.fail(f.Kind, sentinel, err)
		}
	}
}

// estimate is the usage req would bill at t, for the extra-cost ceiling:
// about four characters a token in, and the output cap out (the request's,
// else the target's, else 1024).
func estimate(req *llm.Request, t *Target) llm.Usage {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content)
		for _, tc := range m.ToolCalls {
			chars += len(tc.Arguments)
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

// attemptContext bounds one send by what is left of the deadline. The cancel
// func passes to the stream when a stream is handed to the caller.
func (w *walk) attemptContext(ctx context.Context, now time.Time) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, w.started.Add(w.budget.Deadline).Sub(now))
}

// next describes the first candidate after idx that could be sent to now.
func (w *walk) next(idx int, failed *Target, req *llm.Request) policy.Next {
	now := w.clk.Now()
	for _, t := range w.cands[idx+1:] {
		if t.Client == nil || t.Provider == failed.Provider || w.tried[t.Provider] {
			continue
		}
		if st, _ := w.r.health().State(t.ID(), now); st == health.Open {
			continue
		}
		n := policy.Next{Exists: true, SameFamily: t.ModelFamily() == failed.ModelFamily()}
		n.LargerContext = t.Context > 0 && failed.Context > 0 && t.Context > failed.Context
		if w.budget.MaxExtraCost > 0 {
			u := estimate(req, t)
			n.ExtraCost = max(t.Cost(u)-w.cands[0].Cost(u), 0)
			if w.spentExtra+n.ExtraCost > w.budget.MaxExtraCost {
				continue // admit skips it; look for an affordable one
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

func (w *walk) skip(t *Target, status, reason string) {
	w.last[t.ID()] = Candidate{Target: t.ID(), Status: status, Reason: reason}
	w.record(Attempt{Target: t, Hop: w.hop, Failover: t != w.cands[0], Status: status, Action: "skip", Reason: reason})
}

// record writes the attempt to the ledger before anything else happens.
func (w *walk) record(a Attempt) {
	a.RequestID = w.id
	w.attempts = append(w.attempts, a)
	rec := ledger.Record{
		Time: w.clk.Now(), RequestID: w.id, Route: w.route.Name,
		Provider: a.Target.Provider, Model: a.Target.Model,
		Hop: a.Hop, Attempt: a.N, Failover: a.Failover,
		Status: a.Status, Kind: string(a.Kind), Action: string(a.Action),
		TokensIn: a.Usage.InputTokens, TokensOut: a.Usage.OutputTokens,
		Seconds: a.Duration.Seconds(), WaitSeconds: a.Wait.Seconds(),
		Cost: a.Cost, Reason: a.Reason,
	}
	if a.Failure != nil && a.Failure.RetryAfter > 0 {
		rec.RetryAfterS = a.Failure.RetryAfter.Seconds()
	}
	if w.r.Ledger != nil {
		// A ledger that cannot be written must not turn an answer into a
		// failure; the sink reports its own errors.
		_ = w.r.Ledger.Write(rec)
	}
	if w.r.OnAttempt != nil {
		w.r.OnAttempt(a)
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

// fail builds the final error, listing every reached candidate in order.
func (w *walk) fail(kind classify.Kind, sentinel, cause error) error {
	e := &Error{Route: w.route.Name, RequestID: w.id, Kind: kind, Attempts: w.sends, Cause: cause, sentinel: sentinel}
	for _, t := range w.cands {
		if c, ok := w.last[t.ID()]; ok {
			e.Candidates = append(e.Candidates, c)
		}
	}
	return e
}

// fullReason is the reason plus the provider's message where it says more,
// for the final error summary.
func fullReason(f classify.Failure) string {
	if f.Detail != "" && f.Detail != f.Reason {
		return f.Reason + " — " + f.Detail
	}
	return f.Reason
}
