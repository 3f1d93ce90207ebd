package eval_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/detourhq/detour/eval"
	"github.com/detourhq/detour/evalresults"
	"github.com/detourhq/detour/router"
)

// measured is a TargetReport of n calls, answered of them, correct of
// those, at cost per correct answer (0 for a free tier).
func measured(id, pool string, calls, answered, correct int, cost float64) eval.TargetReport {
	t := eval.TargetReport{Target: id, Pool: pool, Attempted: calls, Answered: answered, Correct: correct,
		Errors: calls - answered, Wrong: answered - correct, CostPerCorrect: -1}
	if calls > 0 {
		t.Reachability = float64(answered) / float64(calls)
	}
	if answered > 0 {
		t.Accuracy = float64(correct) / float64(answered)
	}
	if correct > 0 {
		t.CostPerCorrect = cost
	}
	return t
}

func ids(es []eval.ProposedEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Target)
	}
	return out
}

func TestPropose(t *testing.T) {
	for _, tc := range []struct {
		name      string
		targets   []eval.TargetReport
		o         eval.ProposeOptions
		chain     []string
		left      []string
		note      string // a note must hold this; "" means no note
		barFrom   string
		whyHolds  map[string]string // target -> part of its line
		leftHolds map[string]string
	}{
		{
			name: "every candidate scores 0: nothing proposed, and why",
			targets: []eval.TargetReport{
				measured("a/m", "free", 20, 20, 0, 0), measured("b/m", "prepaid", 20, 20, 0, 0), measured("c/m", "payg", 20, 18, 0, 0),
			},
			left:      []string{"a/m", "b/m", "c/m"},
			note:      "every target scored 0%: nothing is proposed",
			barFrom:   "default",
			leftHolds: map[string]string{"b/m": "no correct answer in 20 answers"},
		},
		{
			name: "every candidate under the bar: nothing proposed, the bar named",
			targets: []eval.TargetReport{
				measured("a/m", "free", 20, 20, 8, 0), measured("b/m", "prepaid", 20, 20, 9, 0.001),
			},
			o:         eval.ProposeOptions{MinAccuracy: 0.8, BarFrom: "routes.default.eval_gate.min_accuracy"},
			left:      []string{"a/m", "b/m"},
			note:      "no target passed the accuracy bar 80% (routes.default.eval_gate.min_accuracy)",
			barFrom:   "routes.default.eval_gate.min_accuracy",
			leftHolds: map[string]string{"b/m": "accuracy 45% (9/20) is below the bar 80%"},
		},
		{
			name: "free tiers that pass go first, even when rarely reachable; a paid one rarely reachable is left out",
			targets: []eval.TargetReport{
				measured("best/m", "prepaid", 20, 20, 19, 0.002),
				measured("free1/m", "free", 20, 20, 13, 0),
				measured("dryfree/m", "free", 20, 6, 5, 0),
				measured("flaky/m", "payg", 20, 10, 10, 0.0001),
				measured("ok/m", "payg", 20, 20, 14, 0.0005),
			},
			chain:     []string{"dryfree/m", "free1/m", "best/m", "ok/m"},
			left:      []string{"flaky/m"},
			barFrom:   "default",
			whyHolds:  map[string]string{"dryfree/m": "is no bar for a free tier", "best/m": "accuracy band 1", "ok/m": "accuracy band 2"},
			leftHolds: map[string]string{"flaky/m": "reachability 50% is below the gate 90%"},
		},
		{
			name: "a free tier under the bar stays out; too few answers are no accuracy",
			targets: []eval.TargetReport{
				measured("weakfree/m", "free", 20, 20, 6, 0),
				measured("twofree/m", "free", 20, 2, 2, 0),
				measured("p/m", "prepaid", 20, 20, 18, 0.001),
				measured("q/m", "payg", 20, 20, 17, 0.002),
			},
			chain:     []string{"p/m", "q/m"},
			left:      []string{"weakfree/m", "twofree/m"},
			barFrom:   "default",
			leftHolds: map[string]string{"twofree/m": "only 2 answer(s) in 20 calls", "weakfree/m": "below the bar 50%"},
		},
		{
			name: "pools alternate within a band, cheapest first",
			targets: []eval.TargetReport{
				measured("p1/m", "prepaid", 20, 20, 18, 0.001),
				measured("p2/m", "prepaid", 20, 20, 18, 0.002),
				measured("g/m", "payg", 20, 20, 18, 0.003),
			},
			chain:    []string{"p1/m", "g/m", "p2/m"},
			barFrom:  "default",
			whyHolds: map[string]string{"g/m": "ahead of a cheaper target so that pool prepaid does not hold two hops in a row"},
		},
		{
			name: "a cap that would leave one pool keeps a second",
			targets: []eval.TargetReport{
				measured("f1/m", "free", 20, 20, 19, 0), measured("f2/m", "free", 20, 20, 18, 0),
				measured("f3/m", "free", 20, 20, 17, 0), measured("p/m", "prepaid", 20, 20, 19, 0.01),
			},
			o:        eval.ProposeOptions{MaxLen: 3, MaxLenFrom: "budget max_attempts"},
			chain:    []string{"f1/m", "f2/m", "p/m"},
			left:     []string{"f3/m"},
			barFrom:  "default",
			whyHolds: map[string]string{"p/m": "to keep two billing pools"},
		},
		{
			name:    "one pool only: proposed, with the warning check will give",
			targets: []eval.TargetReport{measured("p1/m", "prepaid", 20, 20, 18, 0.001), measured("p2/m", "prepaid", 20, 20, 17, 0.001)},
			chain:   []string{"p1/m", "p2/m"},
			note:    "bills from pool prepaid",
			barFrom: "default",
		},
		{
			name:    "--min-accuracy 0 means no bar, but never a target with no correct answer",
			targets: []eval.TargetReport{measured("a/m", "free", 20, 20, 2, 0), measured("b/m", "prepaid", 20, 20, 0, 0)},
			o:       eval.ProposeOptions{MinAccuracy: -1, BarFrom: "--min-accuracy"},
			chain:   []string{"a/m"},
			left:    []string{"b/m"},
			note:    "one target passed",
			barFrom: "--min-accuracy",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := eval.Propose("default", eval.Report{Targets: tc.targets}, tc.o)
			if got := ids(p.Chain); !slices.Equal(got, tc.chain) {
				t.Errorf("chain %v, want %v", got, tc.chain)
			}
			if got := ids(p.Left); !slices.Equal(got, tc.left) {
				t.Errorf("left out %v, want %v", got, tc.left)
			}
			joined := strings.Join(p.Notes, "\n")
			if (tc.note == "") != (len(p.Notes) == 0) || !strings.Contains(joined, tc.note) {
				t.Errorf("notes %q, want one holding %q", p.Notes, tc.note)
			}
			if p.MinAccuracyFrom != tc.barFrom {
				t.Errorf("bar from %q, want %q", p.MinAccuracyFrom, tc.barFrom)
			}
			for _, es := range []struct {
				es   []eval.ProposedEntry
				want map[string]string
			}{{p.Chain, tc.whyHolds}, {p.Left, tc.leftHolds}} {
				for id, want := range es.want {
					i := slices.IndexFunc(es.es, func(e eval.ProposedEntry) bool { return e.Target == id })
					if i < 0 || !strings.Contains(es.es[i].Why, want) {
						t.Errorf("%s: why does not hold %q: %+v", id, want, es.es)
					}
				}
			}
			// Every line of the chain explains accuracy, reachability, cost
			// and pool.
			for _, e := range p.Chain {
				for _, w := range []string{"accuracy ", "reachability ", "per correct answer", "pool " + e.Pool} {
					if !strings.Contains(e.Why, w) {
						t.Errorf("%s: %q does not say %q", e.Target, e.Why, w)
					}
				}
			}
		})
	}
}

// A run where every target scored 0% proposes nothing and says why, in
// the report's warnings (not "too easy") and in the snippet (no chain).
func TestPropose_AllZeroSaysWhyAndProposesNothing(t *testing.T) {
	tasks := []string{"a", "b"}
	targets := []router.Target{{Provider: "x", Model: "m", Pool: "free"}, {Provider: "y", Model: "m", Pool: "prepaid"}}
	var recs []evalresults.Record
	for _, tg := range []string{"x/m", "y/m"} {
		for _, task := range tasks {
			for rep := 1; rep <= 3; rep++ {
				recs = append(recs, evalresults.Record{Digest: "d", Target: tg, Task: task, Rep: rep, Outcome: evalresults.Wrong})
			}
		}
	}
	rep := eval.Summarize("s", "d", tasks, targets, recs)
	for _, w := range rep.Warnings {
		if strings.Contains(w, "too easy") {
			t.Errorf("warning %q: 0%% everywhere is no sign of an easy suite", w)
		}
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "no target answered a single task correctly") }) {
		t.Errorf("warnings %q do not say that nothing was right", rep.Warnings)
	}
	p := eval.Propose("default", rep, eval.ProposeOptions{})
	if len(p.Chain) != 0 {
		t.Fatalf("proposed %v from a run where every target scored 0%%", ids(p.Chain))
	}
	s := eval.Snippet("header", []eval.Proposal{p})
	if strings.Contains(s, "chain:") || !strings.Contains(s, "every target scored 0%") || !strings.Contains(s, "left out: x/m: no correct answer") {
		t.Errorf("snippet:\n%s", s)
	}
}
