package report

import (
	"fmt"
	"sort"
	"time"
)

// The thresholds past which a route's head is flagged as staying degraded.
const (
	// StaleAfter is how long the head's wall may stay open.
	StaleAfter = 24 * time.Hour
	// FailingBelowPct is the head's reachability under which, over at
	// least FailingMinCalls calls, it is flagged as failing.
	FailingBelowPct = 50.0
	// FailingMinCalls is the least number of calls that judge a head.
	FailingMinCalls = 20
)

// RouteFlag is a route whose head (its first target) stays degraded: walled
// for StaleAfter or more, or answering under FailingBelowPct of its calls.
// A free tier dry for days is a config problem, not an incident.
type RouteFlag struct {
	Route string `json:"route"`
	// Head is the target the route's requests went to first.
	Head string `json:"head"`
	// Why is "walled" or "failing".
	Why string `json:"why"`
	// Since is the start of the open wall (walled).
	Since time.Time `json:"since,omitzero"`
	// ReachabilityPct and Calls are the head's own figures (failing).
	ReachabilityPct float64 `json:"reachability_pct"`
	Calls           int     `json:"calls"`
	// Text says it in one line.
	Text string `json:"text"`
}

// flags returns the flagged routes of r: heads by the records of s. A route
// whose head may be a target folded into "other" is not judged.
func (s *Summary) flags(r *Report, nm namer) []RouteFlag {
	out := []RouteFlag{}
	targets := map[string]*Target{}
	for i := range r.Targets {
		targets[r.Targets[i].Target] = &r.Targets[i]
	}
	open := map[string]Wall{}
	for _, w := range r.Walls {
		if w.Open {
			open[w.Target] = w
		}
	}
	routes := make([]int32, 0, len(s.heads))
	for id := range s.heads {
		routes = append(routes, id)
	}
	sort.Slice(routes, func(i, j int) bool { return nm.route(routes[i]) < nm.route(routes[j]) })
	for _, rid := range routes {
		name := nm.route(rid)
		head, id, best := int32(otherID), "", -1
		for tid, n := range s.heads[rid] {
			tn := nm.target(tid)
			// On a tie, a target kept apart rather than "other".
			if n > best || n == best && (head == otherID || tid != otherID && tn < id) {
				head, id, best = tid, tn, n
			}
		}
		if head == otherID {
			continue
		}
		if w, ok := open[id]; ok && s.latest.Sub(w.Start) >= StaleAfter {
			out = append(out, RouteFlag{Route: name, Head: id, Why: "walled", Since: w.Start,
				Text: fmt.Sprintf("route %s: its head %s has been behind a wall since %s (%s, %s): a config problem, not an incident; move it down the chain or fix its account",
					name, id, w.Start.UTC().Format("2006-01-02 15:04"), Age(s.latest.Sub(w.Start)), w.Status)})
			continue
		}
		t := targets[id]
		if t == nil || t.ReachabilityPct == nil || t.Calls < FailingMinCalls || *t.ReachabilityPct >= FailingBelowPct {
			continue
		}
		out = append(out, RouteFlag{Route: name, Head: id, Why: "failing", ReachabilityPct: *t.ReachabilityPct, Calls: t.Calls,
			Text: fmt.Sprintf("route %s: its head %s answered %.1f%% of %d calls: most requests pay for a failed hop; move it down the chain",
				name, id, *t.ReachabilityPct, t.Calls)})
	}
	return out
}

// Age is d for people: days and hours ("3d 2h") from a day up, else
// hours and minutes ("5h 12m"). check and report say a wall's age with it.
func Age(d time.Duration) string {
	if d >= 24*time.Hour {
		return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
	}
	return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
}
