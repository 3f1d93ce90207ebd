package router

import (
	"fmt"
	"slices"
	"time"

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
// and so is this count).
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
		spent, err := w.r.records().Add(dayKey(l.Key, now), 0, spendTTL) // adding nothing reads the counter
		if err != nil || spent+worst <= l.Limit || w.lower(t, v, l.Limit-spent, "the daily ceiling of "+l.Key) {
			continue
		}
		return fmt.Sprintf("the daily ceiling of %s ($%g) is reached: $%.4f spent today, this send may cost up to $%.4f",
			l.Key, l.Limit, spent, worst)
	}
	return ""
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
