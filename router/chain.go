package router

import (
	"fmt"
	"strings"
	"time"

	"github.com/detourhq/detour/classify"
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
	// and what adapting the request to it did.
	dropped []string
	// fitted is the request shaped for it (shortened for its window,
	// max_tokens lowered for a ceiling); nil when it goes as it came.
	fitted *llm.Request
	// overflowed is set once the request overflowed its context window:
	// it is never sent to again in this request, a queue's new pass
	// included.
	overflowed bool
	// pick says why a group member came where it did in its group
	// (pickGroup); "" outside a group.
	pick string
}

// chain is a walk's candidates, in the order tried, and what the walk
// learned of them: each one's state, the accounts and endpoints a failure
// of this request reached, and when a candidate may be tried again.
type chain struct {
	cands []*Target
	// cs holds each candidate's state, by its index in cands.
	cs []cand
	// down maps the account and endpoint keys a failure reached in this
	// request to its reason; nil until one did.
	down map[string]string
	// resets are when a parked candidate may be tried again.
	resets resets
	// exhausted is set when policy queued after a failure: no candidate
	// is left to try before the earliest reset.
	exhausted bool
	// overflow is the largest context window declared by a target the
	// request overflowed (0: none declared, or none overflowed): a
	// candidate that declares one no larger cannot fit it.
	overflow int
}

// overflowed notes that the request overflowed t's context window.
func (c *chain) overflowed(t *Target) {
	c.state(t).overflowed = true
	c.overflow = max(c.overflow, t.Context)
}

// tooSmall is why t cannot fit a request that overflowed a context
// window earlier in the walk: it overflowed it itself, or it declares a
// window no larger than the largest one overflowed. "" when t may fit: it
// declares a larger one, or none (then only the provider can tell).
func (c *chain) tooSmall(t *Target) string {
	switch {
	case c.state(t).overflowed:
		return "the request overflowed its context window earlier in this request"
	case c.overflow > 0 && t.Context > 0 && t.Context <= c.overflow:
		return fmt.Sprintf("its context window of %d tokens is no larger than the %d-token window the request overflowed",
			t.Context, c.overflow)
	}
	return ""
}

// resets are when the walk's candidates may be tried again, as the walk
// learned it from parks and from the waits providers named: each the
// earliest such time, zero when none is known. They differ in what they
// count and in how long they last.
type resets struct {
	// pass is the earliest end of a park met in this pass down the chain
	// (a parked candidate skipped, a park a failure caused): what a
	// budget that queues waits for (policy.QueueWait,
	// policy.Input.EarliestReset). A new pass clears it.
	pass time.Time
	// request is the earliest time after now that a candidate may be
	// tried again, from every park and every wait a provider named in the
	// whole request (a Retry-After the walk did not wait out among them):
	// the final error's RetryAt. It is never cleared.
	request time.Time
}

// parked notes a park that ends at until, seen at now.
func (r *resets) parked(until, now time.Time) {
	r.pass = earliest(r.pass, until)
	r.named(until, now)
}

// named notes a wait a provider named, until until, seen at now.
func (r *resets) named(until, now time.Time) {
	if until.After(now) {
		r.request = earliest(r.request, until)
	}
}

// earliest returns the earlier of a and b, a zero time standing for none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// state returns t's state: t is one of c.cands.
func (c *chain) state(t *Target) *cand {
	for i, x := range c.cands {
		if x == t {
			return &c.cs[i]
		}
	}
	panic("router: target not in the walk")
}

// keys returns t's health keys: its own, its account's, its endpoint's.
func (c *chain) keys(t *Target) (id, acct, end string) {
	s := c.state(t)
	if s.id == "" {
		s.id, s.acct, s.end = t.ID(), t.AccountKey(), t.EndpointKey()
	}
	return s.id, s.acct, s.end
}

// hadTurn reports whether t, or the same target listed earlier, had its
// turn in this pass.
func (c *chain) hadTurn(t *Target) bool {
	for i, x := range c.cands {
		if c.cs[i].tried && x.Provider == t.Provider && x.Model == t.Model {
			return true
		}
	}
	return false
}

// reach notes that a failure of this request reached key (an account or
// an endpoint) for reason.
func (c *chain) reach(key, reason string) {
	if c.down == nil {
		c.down = make(map[string]string)
	}
	c.down[key] = reason
}

// downReason is the reason a failure of this request reached key, or "".
func (c *chain) downReason(key string) string {
	if c.down == nil {
		return ""
	}
	return c.down[key]
}

// again readies the chain for another pass after a queue: every
// candidate may have its turn again, no failure of the last pass reaches
// an account or endpoint, and no park of it is waited for.
func (c *chain) again() {
	for i := range c.cs {
		c.cs[i].tried = false
	}
	clear(c.down)
	c.resets.pass = time.Time{}
}

// setLast records c as t's last word.
func (c *chain) setLast(t *Target, last Candidate) {
	s := c.state(t)
	s.last, s.has = last, true
}

// verdict is what eligible says of one candidate.
type verdict struct {
	// status is "" when the candidate may be sent to, else the ledger
	// status of its skip (skipped_*), and reason says why on one line.
	status, reason string
	// parked is the park that refuses it (skipped_parked).
	parked *health.ParkedError
	// frees is when a spent quota frees up (skipped_quota); zero when
	// not known.
	frees time.Time
	// req is the request it would be sent: shaped for it (see
	// cand.fitted), or nil when it goes as it came; dropped names what it
	// would go without.
	req     *llm.Request
	dropped []string
}

// skipped returns the verdict of a skip.
func skipped(status, reason string) verdict { return verdict{status: status, reason: reason} }

// eligible says whether t may be sent to at now, and if so in what shape;
// it records nothing, takes no permit and changes no state of the walk.
// It is the one list of checks: admit records what it says (taking the
// health store's permits and counting the send in its quotas for its
// last two checks), next offers policy only what it lets through, and
// unreached records it for a candidate the walk ended before. retry is true for a second send to the same
// target: the checks of a turn (the eval gate, a turn already had, a
// failure of this request, the contract) were made at its first.
func (w *walk) eligible(t *Target, now time.Time, retry bool) verdict {
	v := w.screen(t, now, retry)
	if v.status != "" {
		return v
	}
	if p := w.parkOf(t, now); p != nil {
		return w.parkedVerdict(t, p, now)
	}
	if q := w.quotaVerdict(t, w.sendReq(v), now); q.status != "" {
		return q
	}
	return v
}

// sendReq is the request a send that v lets through carries: v's shape
// of it, or the walk's own.
func (w *walk) sendReq(v verdict) *llm.Request {
	if v.req != nil {
		return v.req
	}
	return w.ask.req
}

// screen makes every check of eligible but the last two, the health
// store's parks and quotas: the target's own standing, then (at a turn's
// first send) the eval gate, a turn already had, a failure of this
// request, a context window too small for a request that overflowed one,
// the contract, and last the cost ceilings, which may lower the
// request's max_tokens.
func (w *walk) screen(t *Target, now time.Time, retry bool) verdict {
	if status, why := standing(t); status != "" {
		return skipped(status, why)
	}
	st := w.chain.state(t)
	v := verdict{req: st.fitted, dropped: st.dropped}
	if !retry {
		if status, why := w.turnBarred(t); status != "" {
			return skipped(status, why)
		}
		if why := w.chain.tooSmall(t); why != "" {
			return skipped(ledger.StatusSkippedContract, classify.OneLine(why))
		}
		req, dropped, why := w.sender.shape(w, t)
		if why != "" {
			return skipped(ledger.StatusSkippedContract, classify.OneLine(why))
		}
		v.req, v.dropped = req, dropped
	}
	if why := w.overDaily(t, &v, now); why != "" {
		return skipped(ledger.StatusSkippedCost, why)
	}
	if w.ask.budget.MaxExtraCost > 0 && t != w.chain.cands[0] {
		if why, room := w.overExtraCost(t); why != "" && !w.lower(t, &v, room, "the extra-cost ceiling") {
			return skipped(ledger.StatusSkippedCost, why)
		}
	}
	return v
}

// standing is why t may never be sent to in this request, whatever
// happened in it: turned off, held back by the caller, no key. "" when
// none holds.
func standing(t *Target) (status, reason string) {
	switch {
	case t.Disabled != "":
		return ledger.StatusSkippedDisabled, "turned off by " + t.Disabled
	case t.Paced != "":
		return ledger.StatusSkippedPaced, t.Paced
	case t.Client == nil:
		if t.KeyEnv != "" {
			return ledger.StatusSkippedNoKey, "no key: " + t.KeyEnv + " is not set"
		}
		return ledger.StatusSkippedNoKey, "no key"
	}
	return "", ""
}

// turnBarred is why t may not have a turn now for what happened in this
// request or what its route says of it: the eval gate does not approve
// it, it (or the same target listed earlier) had its turn, or a failure
// reached its account or endpoint. "" when none holds.
func (w *walk) turnBarred(t *Target) (status, reason string) {
	_, acct, end := w.chain.keys(t)
	if w.route.Approve != nil && !w.atHead(t) {
		if ok, why := w.route.Approve(t); !ok {
			return ledger.StatusSkippedUnapproved, classify.OneLine("not approved by routes." + w.route.Name + ".eval_gate: " + why)
		}
	}
	switch {
	case w.chain.hadTurn(t):
		return ledger.StatusSkippedTried, "already had its turn in this request"
	case w.chain.downReason(acct) != "":
		return ledger.StatusSkippedAccount, classify.OneLine("account " + strings.TrimPrefix(acct, "account:") +
			" failed in this request: " + w.chain.downReason(acct))
	case w.chain.downReason(end) != "":
		return ledger.StatusSkippedEndpoint, classify.OneLine("endpoint " + endpointName(t) +
			" failed in this request: " + w.chain.downReason(end))
	}
	return "", ""
}

// parkedVerdict is the skip of t refused by park p (its own, its
// account's or its endpoint's) at now.
func (w *walk) parkedVerdict(t *Target, p *health.ParkedError, now time.Time) verdict {
	what := ""
	_, acct, end := w.chain.keys(t)
	switch p.Key {
	case acct:
		what = "account " + strings.TrimPrefix(p.Key, "account:") + " "
	case end:
		what = "endpoint " + endpointName(t) + " "
	}
	reason := what + "parked until " + untilText(p.Until, now)
	if p.State == health.HalfOpen {
		reason = what + "probe in flight"
	}
	if p.Reason != "" {
		reason += " (" + p.Reason + ")"
	}
	if p.State == health.Open && p.Status == health.SeenComing {
		// No failure parked it: its provider said nothing is left. A
		// quota spent, seen before any send, as the ledger tells it.
		return verdict{status: ledger.StatusSkippedQuota, reason: classify.OneLine(reason), frees: p.Until}
	}
	return verdict{status: ledger.StatusSkippedParked, reason: classify.OneLine(reason), parked: p}
}

// next describes, for policy, the first candidate after idx that
// eligible lets be sent to now; failed is the target that just failed.
// Another model of failed's provider stays eligible.
func (w *walk) next(idx int, failed *Target) policy.Next {
	now := w.clk.Now()
	for _, t := range w.chain.cands[idx+1:] {
		if w.eligible(t, now, false).status != "" {
			continue
		}
		n := policy.Next{Exists: true, SameFamily: t.ModelFamily() == failed.ModelFamily()}
		// It may fit what overflowed failed when it declares a larger
		// window, or either declares none (eligible let no smaller one
		// through once the request overflowed).
		n.LargerContext = t.Context == 0 || failed.Context == 0 || t.Context > failed.Context
		if w.ask.budget.MaxExtraCost > 0 {
			n.ExtraCost = w.extraCost(t)
		}
		return n
	}
	return policy.Next{}
}

// unreached settles t, a candidate the walk ended before (at hop, now),
// for the final error: when eligible says it would be skipped now (a
// failure earlier in the request reached its account or endpoint, it is
// parked, it cannot honour the request, ...) the skip is recorded as any
// skip is, so that every skip the error names is a ledger line whatever
// ended the request; else it was not tried, for the reason policy gave to
// stop.
func (w *walk) unreached(t *Target, hop int, now time.Time) Candidate {
	if v := w.eligible(t, now, false); v.status != "" {
		w.skip(t, v, now, hop)
		return w.chain.state(t).last
	}
	why := w.end.why
	if why == "" {
		why = "the request ended first"
	}
	return Candidate{Reason: classify.OneLine("not tried: " + why)}
}

// passHop is the hop the chain's first candidate has in the walk's pass
// down it: candidate i's is passHop()+i. It is read from the last
// attempt recorded, 0 before any.
func (w *walk) passHop() int {
	if n := len(w.attempts); n > 0 {
		last := w.attempts[n-1]
		for i, t := range w.chain.cands {
			if t == last.Target {
				return last.Hop - i
			}
		}
	}
	return w.count.hops
}

// unservable reports whether no candidate could ever serve the request
// as it is: each one's last word is a skip for what it cannot honour
// (skipped_contract), none a park, a spent quota or a failure, which
// pass.
func (c *chain) unservable() bool {
	for i := range c.cs {
		if s := &c.cs[i]; !s.has || s.last.Status != ledger.StatusSkippedContract {
			return false
		}
	}
	return len(c.cs) > 0
}

// endpointName is t's endpoint for messages: its host, or its provider.
func endpointName(t *Target) string {
	if t.Endpoint != "" {
		return t.Endpoint
	}
	return "of provider " + t.Provider
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
