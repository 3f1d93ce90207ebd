package eval

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/detourhq/detour/evalresults"
)

// ProposeOptions set the gates of a proposal. The zero value is the
// default: an accuracy bar of DefaultMinAccuracy over at least
// evalresults.DefaultGateMinAnswers answers, reachability at least 90%
// (free tiers exempt), any length.
type ProposeOptions struct {
	// MinReachability leaves out targets that answered less often; 0
	// means DefaultMinReachability, negative means no gate. Targets of
	// the free pool are not held to it: a dry free tier is parked and
	// skipped at no cost, and spends nothing while it answers.
	MinReachability float64
	// MinAccuracy is the bar: a target less accurate is left out. 0 means
	// DefaultMinAccuracy; negative means no bar. A target with no correct
	// answer is never proposed, whatever the bar.
	MinAccuracy float64
	// BarFrom names where MinAccuracy comes from, for the explanation
	// ("--min-accuracy", "routes.default.eval_gate.min_accuracy"); ""
	// when MinAccuracy is 0 says the default applies.
	BarFrom string
	// MinAnswers is the answers a target needs before its accuracy
	// counts, as in a route's eval_gate; 0 means
	// evalresults.DefaultGateMinAnswers.
	MinAnswers int
	// MaxLen caps the chain, most often at the route's budget max_attempts
	// (a target past it is reached only when an earlier one is skipped);
	// 0 means no cap. MaxLenFrom names it for the explanation.
	MaxLen     int
	MaxLenFrom string
	// Tie is the accuracy difference within which two targets count as
	// equally good, so the cheaper goes first; 0 means DefaultTie,
	// negative means exact ties only.
	Tie float64
}

// DefaultTie is the accuracy difference a proposal treats as a tie: five
// points.
const DefaultTie = 0.05

// DefaultMinReachability is the reachability gate of a proposal: a paid
// target that answers less often than this wastes a hop of the chain.
const DefaultMinReachability = 0.9

// DefaultMinAccuracy is the accuracy bar of a proposal when neither the
// route's eval_gate nor the caller sets one: right more often than wrong.
const DefaultMinAccuracy = 0.5

// freePool is the billing pool whose targets go first when they pass:
// they spend nothing while they last (the pool `detour check` wants first).
const freePool = "free"

// Proposal is a chain for one route, ordered by measurement.
type Proposal struct {
	Route string          `json:"route"`
	Chain []ProposedEntry `json:"chain"`
	// Left are the targets measured but left out, and why.
	Left []ProposedEntry `json:"left_out,omitempty"`
	// Unmeasured are targets of the route's chain that were not measured:
	// the proposal says nothing of them.
	Unmeasured []string `json:"unmeasured,omitempty"`
	// MinAccuracy is the bar applied, MinAccuracyFrom where it came from
	// ("default" when neither the route nor the caller set one).
	MinAccuracy     float64 `json:"min_accuracy"`
	MinAccuracyFrom string  `json:"min_accuracy_from"`
	// MinAnswers is the answers a target needed for its accuracy to count.
	MinAnswers int `json:"min_answers"`
	// MinReachability is the reachability gate applied to targets outside
	// the free pool (0: none); MaxLen the cap on the chain's length (0:
	// none) and MaxLenFrom where it came from.
	MinReachability float64 `json:"min_reachability"`
	MaxLen          int     `json:"max_len,omitempty"`
	MaxLenFrom      string  `json:"max_len_from,omitempty"`
	// Notes say what the chain cannot be: why it is empty, or why `detour
	// check` will still warn about it (one target, one billing pool).
	Notes []string `json:"notes,omitempty"`
}

// ProposedEntry is one target of a proposal, with the reason for its
// place and the figures behind it (or the reason it was left out).
type ProposedEntry struct {
	Target string `json:"target"`
	Pool   string `json:"pool,omitempty"`
	// Why is the reason for the place (or for leaving it out), and for a
	// place, the figures behind it.
	Why string `json:"why"`
	// Figures are the measurements of a target in the chain: accuracy,
	// reachability, cost per correct answer, latency, pool.
	Figures string `json:"figures,omitempty"`
}

// Propose orders the measured targets for route. A target is left out
// when it gave no correct answer, gave fewer than MinAnswers answers, is
// below the accuracy bar, or (unless free) below the reachability gate.
// Of the rest, free tiers go first (they spend nothing while they last),
// then the others; each group in bands of accuracy within Tie of the
// band's best, best band first, and within a band the cheapest per
// correct answer first with billing pools interleaved, so one pool
// running dry does not take out two hops in a row. A chain longer than
// MaxLen is cut, keeping two billing pools when the targets measured
// allow. An empty chain and a chain `detour check` will warn about carry
// a note that says why.
func Propose(route string, rep Report, o ProposeOptions) Proposal {
	minReach := o.MinReachability
	if minReach == 0 {
		minReach = DefaultMinReachability
	}
	bar, from := o.MinAccuracy, o.BarFrom
	switch {
	case bar == 0:
		bar, from = DefaultMinAccuracy, "default"
	case bar < 0:
		bar = 0
	}
	if from == "" {
		from = "set by the caller"
	}
	minAnswers := o.MinAnswers
	if minAnswers <= 0 {
		minAnswers = evalresults.DefaultGateMinAnswers
	}
	if minReach < 0 {
		minReach = 0
	}
	maxFrom := o.MaxLenFrom
	if maxFrom == "" {
		maxFrom = "the cap"
	}
	p := Proposal{Route: route, MinAccuracy: bar, MinAccuracyFrom: from, MinAnswers: minAnswers, MinReachability: minReach}
	if o.MaxLen > 0 {
		p.MaxLen, p.MaxLenFrom = o.MaxLen, maxFrom
	}
	var free, paid []TargetReport
	answered, anyCorrect := 0, false
	for _, t := range rep.Targets {
		left := func(format string, args ...any) {
			p.Left = append(p.Left, ProposedEntry{Target: t.Target, Pool: t.Pool, Why: fmt.Sprintf(format, args...)})
		}
		if t.Answered > 0 {
			answered++
		}
		if t.Correct > 0 {
			anyCorrect = true
		}
		switch {
		case t.Answered == 0:
			left("no answer in %d calls", t.Attempted)
		case t.Correct == 0:
			left("no correct answer in %d answers", t.Answered)
		case t.Answered < minAnswers:
			left("only %d answer(s) in %d calls (reachability %s): too few to judge its accuracy; the bar needs %d",
				t.Answered, t.Attempted, pct(t.Reachability), minAnswers)
		case t.Accuracy < bar:
			left("accuracy %s (%d/%d) is below the bar %s", pct(t.Accuracy), t.Correct, t.Answered, pct(bar))
		case t.Pool != freePool && t.Reachability < minReach:
			left("reachability %s is below the gate %s", pct(t.Reachability), pct(minReach))
		case t.Pool == freePool:
			free = append(free, t)
		default:
			paid = append(paid, t)
		}
	}
	tie := o.Tie
	switch {
	case tie == 0:
		tie = DefaultTie
	case tie < 0:
		tie = 0
	}
	chain := append(order(free, tie, minReach, true), order(paid, tie, minReach, false)...)
	if o.MaxLen > 0 && len(chain) > o.MaxLen {
		chain = capLen(&p, chain, o.MaxLen, maxFrom)
	}
	for _, e := range chain {
		f := figures(e.t)
		p.Chain = append(p.Chain, ProposedEntry{Target: e.t.Target, Pool: e.t.Pool, Why: e.place + ": " + f, Figures: f})
	}
	p.Notes = notes(p, answered, anyCorrect)
	return p
}

// placed is a target and the reason for its place in the chain.
type placed struct {
	t     TargetReport
	place string
}

// order puts one group (the free tiers, or the others) in bands of
// accuracy within tie of the band's best, best band first, each band by
// cost with pools interleaved, and says why each is where it is. A free
// tier below minReach is kept, and its place says why.
func order(in []TargetReport, tie, minReach float64, free bool) []placed {
	in = append([]TargetReport(nil), in...)
	sort.SliceStable(in, func(i, j int) bool { return in[i].Accuracy > in[j].Accuracy })
	var out []placed
	for k := 1; len(in) > 0; k++ {
		best := in[0]
		n := 1
		for n < len(in) && best.Accuracy-in[n].Accuracy <= tie+1e-9 {
			n++
		}
		cheap := byCost(in[:n])
		rank := map[string]int{}
		for i, t := range cheap {
			rank[t.Target] = i
		}
		for i, t := range interleave(cheap) {
			var b strings.Builder
			if free {
				b.WriteString("free tier, before any paid one (spends nothing while it lasts); ")
			}
			fmt.Fprintf(&b, "accuracy band %d (within %.0f points of %s)", k, 100*tie, pct(best.Accuracy))
			switch r := rank[t.Target]; {
			case n == 1:
			case r > i:
				fmt.Fprintf(&b, ", ahead of a cheaper target so that pool %s does not hold two hops in a row", cheap[i].Pool)
			case r < i:
				b.WriteString(", behind a dearer target of another pool (pools alternate)")
			case i == 0:
				b.WriteString(", cheapest per correct answer in its band")
			default:
				b.WriteString(", next cheapest per correct answer in its band")
			}
			if free && minReach > 0 && t.Reachability < minReach {
				fmt.Fprintf(&b, "; reachability under %s is no bar for a free tier (dry, it is parked and skipped at no cost)", pct(minReach))
			}
			out = append(out, placed{t: t, place: b.String()})
		}
		in = in[n:]
	}
	return out
}

// capLen keeps the first n of chain, and when that leaves one billing pool
// while a target cut off bills from another, swaps the last kept for the
// first such one, so `detour check` finds two pools. The targets cut off
// join p.Left.
func capLen(p *Proposal, chain []placed, n int, from string) []placed {
	kept := append([]placed(nil), chain[:n]...)
	rest := append([]placed(nil), chain[n:]...)
	if n >= 2 && len(pools(kept)) == 1 {
		for i, e := range rest {
			if e.t.Pool != kept[0].t.Pool {
				last := kept[n-1]
				e.place += ", put in place of " + last.t.Target + " to keep two billing pools in the chain"
				kept[n-1] = e
				rest = append(append([]placed{last}, rest[:i]...), rest[i+1:]...)
				break
			}
		}
	}
	for _, e := range rest {
		p.Left = append(p.Left, ProposedEntry{Target: e.t.Target, Pool: e.t.Pool,
			Why: fmt.Sprintf("passes, but the chain holds %d (%s): a target past it is reached only when an earlier one is skipped; %s",
				n, from, figures(e.t))})
	}
	return kept
}

// pools returns the billing pools of chain, each once, in order.
func pools(chain []placed) []string {
	var out []string
	for _, e := range chain {
		if !contains(out, e.t.Pool) {
			out = append(out, e.t.Pool)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// notes says why p's chain is empty, or what `detour check` will still
// warn about: a single target, a single billing pool.
func notes(p Proposal, answered int, anyCorrect bool) []string {
	bar := pct(p.MinAccuracy) + " (" + p.MinAccuracyFrom + ")"
	switch {
	case len(p.Left) == 0 && len(p.Chain) == 0:
		return []string{"nothing was measured: no target to propose"}
	case len(p.Chain) == 0 && answered == 0:
		return []string{"no target answered: nothing to judge, so nothing is proposed; the route's chain is left as it is"}
	case len(p.Chain) == 0 && !anyCorrect:
		return []string{"every target scored 0%: nothing is proposed and the route's chain is left as it is; " +
			"a suite no model passes says more about the suite than the models: read the answers in the results " +
			"file (a format the graders do not expect?) and run eval --check"}
	case len(p.Chain) == 0:
		return []string{"no target passed the accuracy bar " + bar + " with enough answers: nothing is proposed " +
			"and the route's chain is left as it is"}
	}
	var out []string
	ps := map[string]bool{}
	for _, e := range p.Chain {
		ps[e.Pool] = true
	}
	switch {
	case len(p.Chain) == 1:
		out = append(out, "one target passed: `detour check` will warn that nothing is left to move on to when it fails; "+
			"measure targets of other providers to add one")
	case len(ps) == 1:
		out = append(out, fmt.Sprintf("every target that passed bills from pool %s: `detour check` will warn that they "+
			"run dry together; measure a target of another pool (a free tier, a prepaid balance) to add one", p.Chain[0].Pool))
	}
	return out
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

// figures is the one-line summary behind a target's place: accuracy,
// reachability, cost, latency, pool.
func figures(t TargetReport) string {
	c := "no correct answer"
	if t.CostPerCorrect >= 0 {
		c = "$" + usd(t.CostPerCorrect) + " per correct answer"
	}
	s := fmt.Sprintf("accuracy %s (%d/%d), reachability %s, %s, p50 %d ms", pct(t.Accuracy), t.Correct, t.Answered, pct(t.Reachability), c, t.P50MS)
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
// header's lines as comments: for each route the gates that applied,
// each target's place and figures in a comment, the left-out and
// unmeasured ones and the notes in comments. A route with no target left
// gets a comment, never an empty chain.
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
			fmt.Fprintf(&b, "  # %s: no chain proposed; its chain is left as it is\n", p.Route)
		} else {
			fmt.Fprintf(&b, "  %s:\n", yamlKey(p.Route))
		}
		fmt.Fprintf(&b, "    # %s\n", Gates(p))
		for _, n := range p.Notes {
			fmt.Fprintf(&b, "    # note: %s\n", n)
		}
		if len(p.Chain) > 0 {
			b.WriteString("    chain:\n")
			for i, e := range p.Chain {
				fmt.Fprintf(&b, "      - %s  # %d. %s\n", yamlKey(e.Target), i+1, e.Why)
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

// OrderRule says in one line how Propose orders a chain, for a
// proposal's header; tie as in ProposeOptions (0: DefaultTie).
func OrderRule(tie float64) string {
	switch {
	case tie == 0:
		tie = DefaultTie
	case tie < 0:
		tie = 0
	}
	return fmt.Sprintf("order: free tiers that pass first (they spend nothing while they last), then bands of accuracy "+
		"within %.0f points, best band first; in a band the cheapest per correct answer first, billing pools alternating", 100*tie)
}

// Gates says in one line the bar p was held to and where it came from.
func Gates(p Proposal) string {
	from := p.MinAccuracyFrom
	if from == "default" {
		from = "detour's default; set routes." + p.Route + ".eval_gate.min_accuracy or pass --min-accuracy"
	}
	s := fmt.Sprintf("accuracy bar %s (%s) over at least %d answers", pct(p.MinAccuracy), from, p.MinAnswers)
	if p.MinReachability > 0 {
		s += fmt.Sprintf("; reachability gate %s, free tiers exempt", pct(p.MinReachability))
	}
	if p.MaxLen > 0 {
		s += fmt.Sprintf("; at most %d targets (%s)", p.MaxLen, p.MaxLenFrom)
	}
	return s
}

// yamlKey quotes s when YAML would read it as something else than a
// plain string.
func yamlKey(s string) string {
	if s == "" || strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`") || strings.TrimSpace(s) != s {
		return fmt.Sprintf("%q", s)
	}
	return s
}
