package eval

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// ProposeOptions set the gates of a proposal. The zero value is the
// default: reachability at least 90%, any accuracy.
type ProposeOptions struct {
	// MinReachability leaves out targets that answered less often; 0
	// means DefaultMinReachability, negative means no gate.
	MinReachability float64
	// MinAccuracy leaves out targets less accurate; 0 means none.
	MinAccuracy float64
	// Tie is the accuracy difference within which two targets count as
	// equally good, so the cheaper goes first; 0 means DefaultTie,
	// negative means exact ties only.
	Tie float64
}

// DefaultTie is the accuracy difference a proposal treats as a tie: five
// points.
const DefaultTie = 0.05

// DefaultMinReachability is the reachability gate of a proposal: a target
// that answers less often than this wastes a hop of the chain.
const DefaultMinReachability = 0.9

// Proposal is a chain for one route, ordered by measurement.
type Proposal struct {
	Route string          `json:"route"`
	Chain []ProposedEntry `json:"chain"`
	// Left are the targets measured but left out, and why.
	Left []ProposedEntry `json:"left_out,omitempty"`
	// Unmeasured are targets of the route's chain that were not measured:
	// the proposal says nothing of them.
	Unmeasured []string `json:"unmeasured,omitempty"`
}

// ProposedEntry is one target of a proposal, with the figures behind its
// place (or the reason it was left out).
type ProposedEntry struct {
	Target string `json:"target"`
	Why    string `json:"why"`
}

// Propose orders the measured targets for route: quality first (targets
// within Tie of the best accuracy form a band; bands in order of
// accuracy), then cost
// (within a band, the cheapest per correct answer first), billing pools
// interleaved within a band so one pool running dry does not take out two
// hops in a row. Reachability gates: a target below the gate is left out.
func Propose(route string, rep Report, o ProposeOptions) Proposal {
	minReach := o.MinReachability
	if minReach == 0 {
		minReach = DefaultMinReachability
	}
	p := Proposal{Route: route}
	var in []TargetReport
	for _, t := range rep.Targets {
		switch {
		case t.Answered == 0:
			p.Left = append(p.Left, ProposedEntry{t.Target, fmt.Sprintf("no answer in %d calls", t.Attempted)})
		case minReach > 0 && t.Reachability < minReach:
			p.Left = append(p.Left, ProposedEntry{t.Target, fmt.Sprintf("reachability %s is below the gate %s", pct(t.Reachability), pct(minReach))})
		case t.Accuracy < o.MinAccuracy:
			p.Left = append(p.Left, ProposedEntry{t.Target, fmt.Sprintf("accuracy %s is below the gate %s", pct(t.Accuracy), pct(o.MinAccuracy))})
		default:
			in = append(in, t)
		}
	}
	tie := o.Tie
	switch {
	case tie == 0:
		tie = DefaultTie
	case tie < 0:
		tie = 0
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].Accuracy > in[j].Accuracy })
	for len(in) > 0 {
		best := in[0]
		n := 1
		for n < len(in) && best.Accuracy-in[n].Accuracy <= tie+1e-9 {
			n++
		}
		band := interleave(byCost(in[:n]))
		for _, t := range band {
			p.Chain = append(p.Chain, ProposedEntry{t.Target, figures(t)})
		}
		in = in[n:]
	}
	return p
}

// byCost sorts a band by cost per correct answer (a target with no
// correct answer last), then accuracy, then median latency.
func byCost(band []TargetReport) []TargetReport {
	out := append([]TargetReport(nil), band...)
	key := func(t TargetReport) float64 {
		if t.CostPerCorrect < 0 {
			return math.Inf(1)
		}
		return t.CostPerCorrect
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ka, kb := key(a), key(b); ka != kb {
			return ka < kb
		}
		if a.Accuracy != b.Accuracy {
			return a.Accuracy > b.Accuracy
		}
		return a.P50MS < b.P50MS
	})
	return out
}

// interleave reorders a band so that two neighbours share a billing pool
// only when nothing else is left: each next place goes to the first target
// of another pool than the last one placed.
func interleave(band []TargetReport) []TargetReport {
	out := make([]TargetReport, 0, len(band))
	rest := append([]TargetReport(nil), band...)
	for len(rest) > 0 {
		k := 0
		if len(out) > 0 {
			last := out[len(out)-1].Pool
			for i, t := range rest {
				if t.Pool != last || last == "" {
					k = i
					break
				}
			}
		}
		out = append(out, rest[k])
		rest = append(rest[:k], rest[k+1:]...)
	}
	return out
}

// figures is the one-line summary behind a target's place.
func figures(t TargetReport) string {
	c := "no correct answer"
	if t.CostPerCorrect >= 0 {
		c = "$" + usd(t.CostPerCorrect) + " per correct answer"
	}
	s := fmt.Sprintf("accuracy %s, reachability %s, %s, p50 %d ms", pct(t.Accuracy), pct(t.Reachability), c, t.P50MS)
	if t.Pool != "" {
		s += ", pool " + t.Pool
	}
	return s
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// usd formats a small dollar amount with 2 significant digits.
func usd(x float64) string {
	if x == 0 {
		return "0"
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.*f", max(2, 1-int(math.Floor(math.Log10(x)))), x), "0"), ".")
}

// Snippet is ps as a detour.yaml fragment (routes: NAME: chain:) under
// header's lines as comments, each target's figures in a comment, the
// left-out and unmeasured ones listed in comments. A route with no target
// left gets a comment, never an empty chain.
func Snippet(header string, ps []Proposal) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(header), "\n") {
		if l != "" {
			fmt.Fprintf(&b, "# %s\n", l)
		}
	}
	b.WriteString("routes:\n")
	for _, p := range ps {
		if len(p.Chain) == 0 {
			fmt.Fprintf(&b, "  # %s: no measured target passed the gates; its chain is left as it is\n", p.Route)
		} else {
			fmt.Fprintf(&b, "  %s:\n    chain:\n", yamlKey(p.Route))
			for _, e := range p.Chain {
				fmt.Fprintf(&b, "      - %s  # %s\n", yamlKey(e.Target), e.Why)
			}
		}
		for _, e := range p.Left {
			fmt.Fprintf(&b, "      # left out: %s: %s\n", e.Target, e.Why)
		}
		for _, id := range p.Unmeasured {
			fmt.Fprintf(&b, "      # not measured (add it back if you keep it): %s\n", id)
		}
	}
	return b.String()
}

// yamlKey quotes s when YAML would read it as something else than a
// plain string.
func yamlKey(s string) string {
	if s == "" || strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`") || strings.TrimSpace(s) != s {
		return fmt.Sprintf("%q", s)
	}
	return s
}
