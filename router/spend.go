package router

import (
	"fmt"
	"time"

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
	if w.spendLimits == nil {
		if w.route.DailyCost > 0 {
			w.spendLimits = append(w.spendLimits, SpendLimit{Key: "route:" + w.route.Name, Limit: w.route.DailyCost})
		}
		for _, l := range w.opts.Spend {
			if l.Limit > 0 && l.Key != "" {
				w.spendLimits = append(w.spendLimits, l)
			}
		}
		if w.spendLimits == nil {
			w.spendLimits = []SpendLimit{}
		}
	}
	return w.spendLimits
}

// dayKey is the records key of counter key's day at now.
func dayKey(key string, now time.Time) string {
	return "spend:" + key + ":" + now.UTC().Format(time.DateOnly)
}

// overDaily reports, and records as a skip, a send to t whose worst case
// would pass a daily ceiling. A target that costs nothing is never
// skipped; a store that cannot be read lets the send go (health is
// advisory, and so is this count).
func (w *walk) overDaily(t *Target) bool {
	ls := w.ceilings()
	if len(ls) == 0 {
		return false
	}
	worst := t.Cost(w.estimate(w.req, t))
	if worst <= 0 {
		return false
	}
	now := w.clk.Now()
	for _, l := range ls {
		spent, err := w.r.records().Add(dayKey(l.Key, now), 0, spendTTL)
		if err != nil || spent+worst <= l.Limit || w.lowerMaxTokens(t, l.Limit-spent, "the daily ceiling of "+l.Key) {
			continue
		}
		w.skip(t, ledger.StatusSkippedCost, fmt.Sprintf("the daily ceiling of %s ($%g) is reached: $%.4f spent today, this send may cost up to $%.4f",
			l.Key, l.Limit, spent, worst))
		return true
	}
	return false
}

// spend adds cost to every daily counter of the walk.
func (w *walk) spend(cost float64) {
	if cost <= 0 {
		return
	}
	now := w.clk.Now()
	for _, l := range w.ceilings() {
		_, _ = w.r.records().Add(dayKey(l.Key, now), cost, spendTTL) // a lost add undercounts one send
	}
}

// lowered returns the max_tokens that makes req's worst case at t cost
// at most room (USD), when the route allows lowering it
// (Route.LowerMaxTokens) and it leaves at least a quarter of the tokens
// asked for (and 16): a cut that deep is no answer. n is the tokens
// asked for when they fit as they are.
func (w *walk) lowered(t *Target, req *llm.Request, room float64) (n int, ok bool) {
	if !w.route.LowerMaxTokens || t.PriceOut <= 0 || w.embed != nil {
		return 0, false
	}
	u := w.estimate(req, t)
	n = int((room - float64(u.InputTokens)*t.PriceIn/1e6) * 1e6 / t.PriceOut)
	if n >= u.OutputTokens {
		return u.OutputTokens, true
	}
	return n, n >= max(16, u.OutputTokens/4)
}

// lowerMaxTokens lowers the max_tokens of t's request so that its worst
// case costs at most room (see lowered), as credit routers ask ("fewer
// max_tokens"): the answer is then degraded and names it. It reports
// whether t may be sent to.
func (w *walk) lowerMaxTokens(t *Target, room float64, why string) bool {
	st := w.state(t)
	req := w.req
	if st.fitted != nil {
		req = st.fitted
	}
	n, ok := w.lowered(t, req, room)
	if !ok || n >= w.estimate(req, t).OutputTokens {
		return ok
	}
	c := req.Clone()
	c.MaxTokens = n
	if req == w.req {
		c.Raw = nil // the raw body names the old max_tokens
	}
	st.fitted = c
	st.dropped = append(st.dropped, fmt.Sprintf("max_tokens lowered to %d for %s", n, why))
	return true
}
