package router

import (
	"fmt"
	"time"

	"github.com/detourhq/detour/ledger"
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
	worst := t.Cost(estimate(w.req, t))
	if worst <= 0 {
		return false
	}
	now := w.clk.Now()
	for _, l := range ls {
		spent, err := w.r.records().Add(dayKey(l.Key, now), 0, spendTTL)
		if err != nil || spent+worst <= l.Limit {
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
