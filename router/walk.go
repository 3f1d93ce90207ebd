package router

import (
	"context"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// walk is the state of one request going down its chain. Its parts live
// where their concern does: the candidates and the one eligibility check
// in chain.go, the kinds of send in sender.go, a failed send's three
// steps in failure.go, the ledger lines in record.go, the cost ceilings
// in spend.go, the health keys in scope.go.
type walk struct {
	r     *Router
	clk   clock.Clock
	route *Route
	// ask is what the caller asked for.
	ask ask
	// chain is the candidates and what the walk learned of each.
	chain chain
	// count is what the walk spent so far.
	count counters
	// sender makes the sends, of the kind the caller asked for.
	sender sender
	// attempts are every attempt and skip recorded, in order.
	attempts []Attempt
	// end is how the walk came to stop short of an answer.
	end ending
	// span is the request's span when the router traces (Router.Trace),
	// else nil.
	span RequestSpan
	// held is what the send in flight holds of the daily ceilings, from
	// its admission until it settles or its stream takes it over.
	held *reservation
}

// ask is what one request asked for, set when its walk starts.
type ask struct {
	id      string
	opts    Options
	started time.Time
	// budget bounds the request; its Queue is cleared once the walk
	// queued (it queues once).
	budget policy.Budget
	// req is the caller's request, for shapes and cost estimates; nil
	// once a stream's output started (nothing is sent again).
	req *llm.Request
	// ceilings are the daily spend ceilings (see ceilings), made at first
	// use.
	ceilings []SpendLimit
}

// counters are what a walk spent so far: the numbers policy.Decide weighs.
type counters struct {
	// sends counts the sends that reached a provider; hops the candidates
	// the walk moved past.
	sends, hops int
	// unknownHops counts the hops taken after unknown failures.
	unknownHops int
	// spentExtra is the USD the request added beyond its first candidate.
	spentExtra float64
}

// ending is how a walk came to stop short of an answer.
type ending struct {
	// err is the last failed send's error.
	err error
	// why is policy's reason to stop before every candidate was reached.
	why string
}

// turn is one send to one candidate: the target, its index in the walk's
// chain, the send's number to it (from 1), its permits, and when it began
// and ended.
type turn struct {
	t          *Target
	idx, n     int
	p          permits
	start, end time.Time
	// rid is the provider's request id of the send's response, once it
	// failed (see Attempt.ProviderRequestID).
	rid string
}

func (w *walk) run(ctx context.Context, req *llm.Request) (*Result, error) {
	w.ask.req = req
	w.pickGroups(req)
	defer w.unhold() // a panic in a send leaves no room of a daily ceiling held
	c := &w.chain
	for i := 0; i < len(c.cands); i++ {
		t := c.cands[i]
		if ctx.Err() != nil {
			return nil, w.fail(classify.Canceled, ErrCanceled, ctx.Err())
		}
		if permit, skip := w.admit(t, false); !skip {
			res, stop, err := w.try(ctx, t, i, permit)
			if res != nil || stop {
				return res, err
			}
		}
		w.count.hops++
		// At the end of the chain (every candidate failed or was skipped,
		// or policy found none left), a budget that queues waits for the
		// earliest parked reset and walks the chain again, once: the
		// walk's budget queues no more after that, so policy fails
		// instead of deciding a queue that would not happen.
		if i == len(c.cands)-1 || c.exhausted {
			c.exhausted = false
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
	d, ok := policy.QueueWait(w.ask.budget, w.clk.Now(), w.ask.started, w.chain.resets.pass)
	if !ok {
		return false, nil
	}
	w.ask.budget.Queue = false
	if !w.sleep(ctx, d) {
		return false, w.fail(classify.Canceled, ErrCanceled, ctx.Err())
	}
	w.chain.again()
	return true, nil
}

// failAll returns the error of a walk no candidate answered.
//
//go:noinline
func (w *walk) failAll() error {
	if w.count.sends == 0 && w.chain.unservable() {
		// No candidate could ever honour the request: it fails closed, as
		// an invalid one does, naming what none can carry. One that could
		// but is parked (or out of quota, or failed) leaves the request
		// exhausted instead, whichever candidate that is: the status does
		// not depend on which one happened to be parked.
		return w.fail(classify.Invalid, ErrFailClosed, ErrUnsupported)
	}
	return w.fail(w.lastKind(), ErrAllFailed, w.end.err)
}

// admit decides whether t may be sent to now, as eligible says, with the
// health store's permits taken, the send's worst case held against the
// daily ceilings (reserve) and the send counted in t's quotas for its
// last checks, and records the skip when not. retry is true for a second send to the same target.
func (w *walk) admit(t *Target, retry bool) (permits, bool) {
	now := w.clk.Now()
	v := w.screen(t, now, retry)
	if v.status == "" {
		p, parked, err := w.allow(t, now)
		if parked == nil {
			rs, q := w.reserve(t, &v, now)
			var tk *taken
			if q.status == "" {
				if q, tk = w.admitQuota(t, w.sendReq(v), now); q.status != "" {
					w.settleSpend(rs, llm.Usage{})
				}
			}
			if q.status == "" {
				st := w.chain.state(t)
				st.fitted, st.dropped = v.req, v.dropped
				p.quota, p.spend, p.busy = tk, rs, w.busy(t)
				if err != nil {
					// A health store that cannot answer must not stop traffic.
					return permits{quota: tk, spend: rs, busy: p.busy}, false
				}
				return p, false
			}
			w.release(t, p, now)
			v = q
		} else {
			v = w.parkedVerdict(t, parked, now)
		}
	}
	w.skip(t, v, now, w.count.hops)
	return permits{}, true
}

// try sends to t, the walk's idx-th candidate, until it answers or policy
// moves on. stop ends the walk.
func (w *walk) try(ctx context.Context, t *Target, idx int, p permits) (*Result, bool, error) {
	st := w.chain.state(t)
	st.tried = true
	req := w.ask.req
	if st.fitted != nil {
		req = st.fitted
	}
	treq := req.Clone()
	treq.Model = t.Model
	tn := turn{t: t, idx: idx, p: p}
	for tn.n = 1; ; tn.n++ {
		if tn.n > 1 && !w.readmit(&tn) {
			return nil, false, nil
		}
		w.count.sends++
		st.sends++
		tn.start = w.clk.Now()
		w.begin(&tn)
		resp, headers, err := w.sender.send(ctx, w, t, treq, w.limits(idx, tn.start))
		tn.end = w.clk.Now()
		if err == nil {
			return w.succeeded(&tn, resp), true, nil
		}
		retry, done, err := w.failed(ctx, &tn, err, headers)
		if !retry {
			return nil, done, err
		}
	}
}

// succeeded returns the result of tn's send, which answered (resp, when
// whole): the sender records it, now or when its stream ends. Apart from
// try for try's frame to stay small (see failed).
//
//go:noinline
func (w *walk) succeeded(tn *turn, resp *llm.Response) *Result {
	t := tn.t
	a := w.attempt(tn)
	dropped := w.chain.state(t).dropped
	res := &Result{RequestID: w.ask.id, Target: t, Dropped: dropped, Phase: policy.PhaseCommitted,
		Degraded: t.ModelFamily() != w.route.Chain[0].ModelFamily() || len(dropped) > 0}
	a.Dropped, a.Degraded = dropped, res.Degraded
	if t.Group != nil {
		w.served(t, w.ask.req)
	}
	return w.sender.answered(w, a, tn.p, resp, res)
}

// nextID is the chain's candidate after idx, "provider/model", for a hop
// event; "" after the last.
func (w *walk) nextID(idx int) string {
	if idx+1 < len(w.chain.cands) {
		return w.chain.cands[idx+1].ID()
	}
	return ""
}

func (w *walk) sleep(ctx context.Context, d time.Duration) bool {
	return w.clk.Sleep(ctx, d)
}

// readmit admits tn's target again for its next send (a permit covers one
// send: the target may have opened since) and reports whether it may be
// sent to. Apart from try so that try's frame, under every send's wait,
// stays small (TestStream_HandlerStackStaysSmall).
//
//go:noinline
func (w *walk) readmit(tn *turn) bool {
	p, skip := w.admit(tn.t, true)
	if skip {
		return false
	}
	tn.p = p
	return true
}
