package router

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
)

// SpendLimit is a daily spend ceiling with a counter of its own.
type SpendLimit struct {
	// Key names the counter ("key:alice"); the route's own is
	// "route:NAME".
	Key string
	// Limit is the most, in USD, spent under Key in one UTC day.
	Limit float64
}

// spendTTL keeps a day's counter a day past its end, for late readers.
const spendTTL = 48 * time.Hour

// ceilings returns the walk's daily ceilings: the route's, then the
// caller's.
func (w *walk) ceilings() []SpendLimit {
	a := &w.ask
	if a.ceilings == nil {
		if w.route.DailyCost > 0 {
			a.ceilings = append(a.ceilings, SpendLimit{Key: "route:" + w.route.Name, Limit: w.route.DailyCost})
		}
		for _, l := range a.opts.Spend {
			if l.Limit > 0 && l.Key != "" {
				a.ceilings = append(a.ceilings, l)
			}
		}
		if a.ceilings == nil {
			a.ceilings = []SpendLimit{}
		}
	}
	return a.ceilings
}

// dayKey is the records key of counter key's day at now.
func dayKey(key string, now time.Time) string {
	return "spend:" + key + ":" + now.UTC().Format(time.DateOnly)
}

// overDaily says why a send of v's request to t would pass a daily
// ceiling at now, or "" when none (after lowering its max_tokens in v
// where the route allows it). A target that costs nothing never passes
// one; a store that cannot be read lets the send go (health is advisory,
// and so is this count). It only reads the counters, as eligible changes
// nothing: a send holds its room once admitted (reserve).
func (w *walk) overDaily(t *Target, v *verdict, now time.Time) string {
	ls := w.ceilings()
	if len(ls) == 0 {
		return ""
	}
	worst := t.Cost(w.sender.usage(w.ask.req, t))
	if worst <= 0 {
		return ""
	}
	for _, l := range ls {
		spent, err := spentToday(w.r.records(), dayKey(l.Key, now))
		if err != nil || spent+worst <= l.Limit+health.ReserveSlack || w.lower(t, v, l.Limit-spent, "the daily ceiling of "+l.Key) {
			continue
		}
		return dailyWhy(l, spent, worst)
	}
	return ""
}

// spentToday reads the counter under key: a read alone, which takes no
// write lock of a shared store (a SQLite file's other processes write on).
func spentToday(rec health.Records, key string) (float64, error) {
	v, ok, err := rec.Get(key)
	if err != nil || !ok {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0, nil // not a number: the next Add starts it again
	}
	return f, nil
}

// dailyWhy is the reason of a skip for ceiling l, whose counter holds
// spent (spent today and held by sends in flight), for a send whose worst
// case is worst.
func dailyWhy(l SpendLimit, spent, worst float64) string {
	return fmt.Sprintf("the daily ceiling of %s ($%g) is reached: $%.4f spent or held by sends in flight today, this send may cost up to $%.4f",
		l.Key, l.Limit, spent, worst)
}

// reservation is what one send holds of the walk's daily ceilings, from
// its admission (reserve) to its end (settleSpend): per ceiling, the
// counter and the worst case held there (0 where the store could not
// take it).
type reservation struct {
	t    *Target
	held []heldSpend
}

// heldSpend is one counter and what a send holds of it (USD).
type heldSpend struct {
	key    string
	amount float64
}

// reserve holds the worst case of v's send to t (input estimate plus its
// max_tokens, at t's price) against every daily ceiling of the walk, in
// order, each in one atomic step of the records store, shared by every
// process and replica on it (health.Records.Reserve): sends in flight at
// the same moment never count on the same room, so a burst cannot pass a
// ceiling together. When a ceiling refuses, what the earlier ones hold is
// handed back; where the route allows (Route.LowerMaxTokens) the send's
// max_tokens is lowered in v to the room that ceiling has left and the
// lowered worst case is held, once; else the verdict is the skip
// (skipped_cost). A store that cannot answer holds nothing for its
// ceiling and lets the send go, as health is advisory; the send's real
// cost is still added when it settles. Nil with no ceiling to hold. The
// walk keeps the reservation (walk.held) until it is settled or handed to
// a stream.
func (w *walk) reserve(t *Target, v *verdict, now time.Time) (*reservation, verdict) {
	ls := w.ceilings()
	if len(ls) == 0 {
		return nil, verdict{}
	}
	rec := w.r.records()
	rs := &reservation{t: t, held: make([]heldSpend, len(ls))}
	for lowered := false; ; lowered = true {
		worst := max(t.Cost(w.sender.usage(w.sendReq(*v), t)), 0)
		i, sum := rs.hold(rec, ls, worst, now)
		if i < 0 {
			w.held = rs
			return rs, verdict{}
		}
		if l := ls[i]; lowered || !w.lower(t, v, l.Limit-sum, "the daily ceiling of "+l.Key) {
			return nil, skipped(ledger.StatusSkippedCost, dailyWhy(l, sum, worst))
		}
	}
}

// hold reserves worst on each ceiling of ls at now, in order. When one
// refuses, the ones before it are handed back, and it returns that
// ceiling's index and its sum (spent and held); else -1.
func (rs *reservation) hold(rec health.Records, ls []SpendLimit, worst float64, now time.Time) (refused int, sum float64) {
	for i, l := range ls {
		rs.held[i] = heldSpend{key: dayKey(l.Key, now)}
		if worst <= 0 {
			continue // a send that can cost nothing holds nothing
		}
		sum, ok, err := rec.Reserve(rs.held[i].key, worst, l.Limit, spendTTL)
		switch {
		case err != nil:
			// Advisory: the store cannot be reached (health.ErrUnreachable),
			// so this ceiling holds nothing and gets the real cost.
		case ok:
			rs.held[i].amount = worst
		default:
			for _, h := range rs.held[:i] {
				if h.amount > 0 {
					_, _ = rec.Add(h.key, -h.amount, spendTTL) // a lost hand-back overcounts until the day ends
				}
			}
			return i, sum
		}
	}
	return -1, 0
}

// settleSpend sets what rs holds to the real cost of usage u at its
// target, once: each counter gets that cost less what it held, so a send
// that billed nothing hands all of it back. A shared store that cannot be
// reached now keeps what the send held until the day's counter expires:
// counted too high, never too low. Nil, or settled already, it does
// nothing.
func (w *walk) settleSpend(rs *reservation, u llm.Usage) {
	if rs == nil || rs.held == nil {
		return
	}
	if w.held == rs {
		w.held = nil
	}
	cost, rec := rs.t.Cost(u), w.r.records()
	for _, h := range rs.held {
		if d := cost - h.amount; d != 0 {
			_, _ = rec.Add(h.key, d, spendTTL) // a lost add miscounts one send
		}
	}
	rs.held = nil
}

// unhold settles the reservation the walk still holds, if any, as a send
// that cost nothing: run defers it, for a walk that ends in a panic (a
// client's, a hook's) between a send's admission and its end.
func (w *walk) unhold() {
	w.settleSpend(w.held, llm.Usage{})
}

// overExtraCost says why a send to t would pass the extra-cost ceiling,
// or "" when it would not; room is what t's send may cost (USD).
func (w *walk) overExtraCost(t *Target) (why string, room float64) {
	u := w.sender.usage(w.ask.req, t)
	first, ceiling := w.chain.cands[0].Cost(u), w.ask.budget.MaxExtraCost
	room = ceiling - w.count.spentExtra + first
	if extra := t.Cost(u) - first; w.count.spentExtra+extra > ceiling {
		why = fmt.Sprintf("would add about $%.4f, over the $%g extra-cost ceiling", extra, ceiling)
	}
	return why, room
}

// extraCost is what a send to t would add over the walk's first
// candidate, by estimate: at most what the extra-cost ceiling leaves,
// for a target eligible let through only with its max_tokens lowered.
func (w *walk) extraCost(t *Target) float64 {
	u := w.sender.usage(w.ask.req, t)
	extra := max(t.Cost(u)-w.chain.cands[0].Cost(u), 0)
	if left := w.ask.budget.MaxExtraCost - w.count.spentExtra; extra > left {
		return max(left, 0)
	}
	return extra
}

// lowered returns the max_tokens that makes req's worst case at t cost
// at most room (USD), when the route allows lowering it
// (Route.LowerMaxTokens), the send has an output to lower (not
// embeddings) and it leaves at least a quarter of the tokens asked for
// (and 16): a cut that deep is no answer. n is the tokens asked for when
// they fit as they are.
func (w *walk) lowered(t *Target, req *llm.Request, room float64) (n int, ok bool) {
	if !w.route.LowerMaxTokens || t.PriceOut <= 0 {
		return 0, false
	}
	u := w.sender.usage(req, t)
	if u.OutputTokens <= 0 {
		return 0, false
	}
	n = int((room - float64(u.InputTokens)*t.PriceIn/1e6) * 1e6 / t.PriceOut)
	if n >= u.OutputTokens {
		return u.OutputTokens, true
	}
	return n, n >= max(16, u.OutputTokens/4)
}

// lower lowers the max_tokens of v's request to t so that its worst case
// costs at most room (see lowered), as credit routers ask ("fewer
// max_tokens"): the answer is then degraded and names it. It reports
// whether t may be sent to. v's request is a copy: the walk's own is
// never changed.
func (w *walk) lower(t *Target, v *verdict, room float64, why string) bool {
	req := w.ask.req
	if v.req != nil {
		req = v.req
	}
	n, ok := w.lowered(t, req, room)
	if !ok || n >= w.sender.usage(req, t).OutputTokens {
		return ok
	}
	c := req.Clone()
	c.MaxTokens = n
	if req == w.ask.req {
		c.Raw = nil // the raw body names the old max_tokens
	}
	v.req = c
	v.dropped = append(slices.Clip(v.dropped), fmt.Sprintf("max_tokens lowered to %d for %s", n, why))
	return true
}

// estimate is the usage req would bill at t, for the cost ceilings and
// the context check: about four characters of text a token in (content,
// tool arguments, text parts; not images or documents), and the output
// cap out (the request's, else the target's, else 1024).
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
