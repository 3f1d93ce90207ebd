package batch

import (
	"fmt"
	"strings"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/health"
)

// Progress is a snapshot of a run. Its JSON form is what `detour batch
// --json-progress` writes, one object a second.
type Progress struct {
	// Done counts the items with an outcome, Skipped included; Total
	// counts the input's items (its non-blank lines).
	Done  int `json:"done"`
	Total int `json:"total"`
	// Answered, Failed, Pending and Invalid count this run's outcomes;
	// Skipped the items whose outcome an earlier run wrote.
	Answered int `json:"answered"`
	Failed   int `json:"failed"`
	Pending  int `json:"pending"`
	Invalid  int `json:"invalid"`
	Skipped  int `json:"skipped"`
	// Replayed counts the answers kept by an earlier run under the item's
	// idempotency key: given again with no send (among Answered).
	Replayed int `json:"replayed"`
	// InFlight counts the items being sent now.
	InFlight int `json:"in_flight"`
	// Sends counts the requests that reached a provider; Failovers the
	// hops away from a target that failed.
	Sends     int `json:"sends"`
	Failovers int `json:"failovers"`
	// Parked counts the keys (targets, accounts, endpoints) the health
	// store holds parked now.
	Parked  int     `json:"parked"`
	CostUSD float64 `json:"cost_usd"`
	// Elapsed is the run's time so far; ItemsPerSec this run's outcomes
	// (Skipped aside) a second; ETA the time left at that pace (0:
	// unknown).
	Elapsed     time.Duration `json:"-"`
	ElapsedSec  float64       `json:"elapsed_s"`
	ItemsPerSec float64       `json:"items_per_s"`
	ETA         time.Duration `json:"-"`
	ETASec      float64       `json:"eta_s"`
	// Final is set on the snapshot taken when the run ended.
	Final bool `json:"final,omitempty"`
}

// Line is p as one line of text for a terminal (no line end).
func (p Progress) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch %d/%d", p.Done, p.Total)
	if p.Total > 0 {
		fmt.Fprintf(&b, " (%d%%)", p.Done*100/p.Total)
	}
	fmt.Fprintf(&b, "  answers %d", p.Answered)
	if p.Failed > 0 {
		fmt.Fprintf(&b, "  failed %d", p.Failed)
	}
	if p.Pending > 0 {
		fmt.Fprintf(&b, "  pending %d", p.Pending)
	}
	if p.Invalid > 0 {
		fmt.Fprintf(&b, "  invalid %d", p.Invalid)
	}
	fmt.Fprintf(&b, "  failovers %d  parked %d  %.1f items/s", p.Failovers, p.Parked, p.ItemsPerSec)
	if p.ETA > 0 {
		fmt.Fprintf(&b, "  ETA %s", p.ETA.Round(time.Second))
	}
	return b.String()
}

// progress takes a snapshot of the run at now.
func (r *Runner) progress(now time.Time, final bool) Progress {
	p := Progress{Done: int(r.done.Load()), Total: r.total, Answered: int(r.answered.Load()),
		Failed: int(r.failed.Load()), Pending: int(r.pending.Load()), Invalid: int(r.invalid.Load()),
		Skipped: int(r.skipped.Load()), Replayed: int(r.replayed.Load()), InFlight: int(r.inFly.Load()),
		Sends: int(r.sends.Load()), Failovers: int(r.failovers.Load()), Final: final}
	r.mu.Lock()
	p.CostUSD = r.cost
	r.mu.Unlock()
	if hb := r.Router.Health; hb != nil {
		for _, k := range hb.Parks(now) {
			if k.State == string(health.Open) {
				p.Parked++
			}
		}
	}
	p.Elapsed = now.Sub(r.started)
	p.ElapsedSec = p.Elapsed.Seconds()
	if ran := p.Done - p.Skipped; ran > 0 && p.Elapsed > 0 {
		p.ItemsPerSec = float64(ran) / p.Elapsed.Seconds()
		if left := p.Total - p.Done; left > 0 && !final {
			p.ETA = time.Duration(float64(left) / p.ItemsPerSec * float64(time.Second))
			p.ETASec = p.ETA.Seconds()
		}
	}
	return p
}

// report calls OnProgress every ProgressEvery until stop is closed.
func (r *Runner) report(clk clock.Clock, stop <-chan struct{}) {
	if r.OnProgress == nil {
		return
	}
	every := r.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			r.OnProgress(r.progress(clk.Now(), false))
		}
	}
}
