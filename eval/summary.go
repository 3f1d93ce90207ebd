package eval

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/detourhq/detour/evalresults"
	"github.com/detourhq/detour/router"
)

// TargetReport is what a run measured of one target. Reachability and
// accuracy are apart: a call that got no answer counts against
// reachability only, and accuracy is over the answers.
type TargetReport struct {
	Target string `json:"target"`
	Pool   string `json:"pool,omitempty"`
	// Attempted counts calls; Answered those that got an answer
	// (Correct + Wrong + Truncated); Errors those that did not.
	Attempted int `json:"attempted"`
	Answered  int `json:"answered"`
	Correct   int `json:"correct"`
	Wrong     int `json:"wrong"`
	Truncated int `json:"truncated"`
	Errors    int `json:"errors"`
	// Reachability is Answered / Attempted.
	Reachability float64 `json:"reachability"`
	// Accuracy is Correct / Answered; 0 when nothing answered.
	Accuracy float64 `json:"accuracy"`
	// TruncationRate is Truncated / Answered.
	TruncationRate float64 `json:"truncation_rate"`
	// P50MS and P95MS are the answers' latencies, milliseconds.
	P50MS int64 `json:"p50_ms"`
	P95MS int64 `json:"p95_ms"`
	// TokensIn and TokensOut are the answers' mean token counts.
	TokensIn  float64 `json:"mean_tokens_in"`
	TokensOut float64 `json:"mean_tokens_out"`
	// CostPerTask is the mean USD cost of an answer; CostPerCorrect the
	// whole cost over the correct answers (-1 when none was correct).
	CostPerTask    float64 `json:"cost_per_task_usd"`
	CostPerCorrect float64 `json:"cost_per_correct_usd"`
	// Tasks holds the score of each task: correct answers over calls.
	Tasks map[string]TaskScore `json:"tasks"`
}

// TaskScore is one target's result on one task.
type TaskScore struct {
	Correct  int `json:"correct"`
	Answered int `json:"answered"`
	Calls    int `json:"calls"`
}

// Report is a run's summary.
type Report struct {
	Suite  string `json:"suite"`
	Digest string `json:"digest"`
	// Tasks are the suite's task ids, in order.
	Tasks []string `json:"tasks"`
	// Targets are in the order asked.
	Targets []TargetReport `json:"targets"`
	// Warnings say what the numbers cannot tell (a suite too easy for the
	// top targets, too few answers to compare).
	Warnings []string `json:"warnings,omitempty"`
	// Proposals are chains ordered by the measurements, one per route.
	Proposals []Proposal `json:"proposals,omitempty"`
}

// Summarize reads the records of the suite version digest for targets
// (in that order) and tasks; records of other targets or versions are
// left out.
func Summarize(suite, digest string, tasks []string, targets []router.Target, recs []evalresults.Record) Report {
	rep := Report{Suite: suite, Digest: digest, Tasks: tasks}
	idx := map[string]int{}
	for i, t := range targets {
		idx[t.ID()] = i
		rep.Targets = append(rep.Targets, TargetReport{Target: t.ID(), Pool: t.Pool, Tasks: map[string]TaskScore{}})
	}
	lat := make([][]int64, len(targets))
	cost := make([]float64, len(targets))
	in, out := make([]int, len(targets)), make([]int, len(targets))
	for _, r := range recs {
		i, ok := idx[r.Target]
		if !ok || r.Digest != digest {
			continue
		}
		t := &rep.Targets[i]
		ts := t.Tasks[r.Task]
		t.Attempted++
		ts.Calls++
		switch r.Outcome {
		case evalresults.Correct:
			t.Correct++
			ts.Correct++
		case evalresults.Wrong:
			t.Wrong++
		case evalresults.Truncated:
			t.Truncated++
		default:
			t.Errors++
		}
		if r.Outcome.Answered() {
			t.Answered++
			ts.Answered++
			lat[i] = append(lat[i], r.MS)
			in[i] += r.TokensIn
			out[i] += r.TokensOut
		}
		cost[i] += r.Cost
		t.Tasks[r.Task] = ts
	}
	for i := range rep.Targets {
		t := &rep.Targets[i]
		t.Reachability = ratio(t.Answered, t.Attempted)
		t.Accuracy = ratio(t.Correct, t.Answered)
		t.TruncationRate = ratio(t.Truncated, t.Answered)
		t.P50MS, t.P95MS = percentile(lat[i], 50), percentile(lat[i], 95)
		if t.Answered > 0 {
			t.TokensIn = float64(in[i]) / float64(t.Answered)
			t.TokensOut = float64(out[i]) / float64(t.Answered)
			t.CostPerTask = cost[i] / float64(t.Answered)
		}
		t.CostPerCorrect = -1
		if t.Correct > 0 {
			t.CostPerCorrect = cost[i] / float64(t.Correct)
		}
	}
	rep.Warnings = warnings(rep)
	return rep
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// percentile returns the p-th percentile of xs (nearest rank); 0 for none.
func percentile(xs []int64, p int) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := (p*len(s) + 99) / 100
	return s[max(k, 1)-1]
}

// warnings says when the top targets tie on every task (the suite cannot
// tell them apart), when no target got anything right (no tie: the suite
// is suspect) and when a target has no answers to judge.
func warnings(rep Report) []string {
	var w []string
	ranked := make([]TargetReport, 0, len(rep.Targets))
	for _, t := range rep.Targets {
		if t.Answered == 0 {
			if t.Attempted > 0 {
				w = append(w, fmt.Sprintf("%s gave no answer in %d calls: its accuracy is unknown", t.Target, t.Attempted))
			}
			continue
		}
		ranked = append(ranked, t)
	}
	sort.SliceStable(ranked, func(i, j int) bool { return ranked[i].Accuracy > ranked[j].Accuracy })
	if len(ranked) > 0 && ranked[0].Correct == 0 {
		// Alike at 0% is no tie of good models: nothing was right.
		return append(w, "no target answered a single task correctly: the suite (its graders, or the answer format "+
			"they expect) is the first suspect; read the answers in the results file before judging the models")
	}
	if len(ranked) < 2 {
		return w
	}
	if a, b := ranked[0], ranked[1]; a.Accuracy-b.Accuracy > 0 {
		// The 95% margin of the difference between the two best.
		se := math.Sqrt(a.Accuracy*(1-a.Accuracy)/float64(a.Answered) + b.Accuracy*(1-b.Accuracy)/float64(b.Answered))
		if m := 1.96 * se; m > a.Accuracy-b.Accuracy {
			w = append(w, fmt.Sprintf("%s leads %s by %.0f points, within the ±%.0f-point margin of %d and %d answers: more --reps (or tasks) would tell them apart",
				a.Target, b.Target, 100*(a.Accuracy-b.Accuracy), 100*m, a.Answered, b.Answered))
		}
	}
	top := []string{ranked[0].Target}
	for _, t := range ranked[1:] {
		if !sameScores(ranked[0], t, rep.Tasks) {
			break
		}
		top = append(top, t.Target)
	}
	if len(top) >= 2 {
		w = append(w, fmt.Sprintf("%s tie on every task (%.0f%% each): the suite is too easy to tell them apart; add harder tasks before choosing between them",
			strings.Join(top, ", "), 100*ranked[0].Accuracy))
	}
	return w
}

// sameScores reports whether a and b scored alike on every task (the same
// share of correct answers).
func sameScores(a, b TargetReport, tasks []string) bool {
	for _, id := range tasks {
		x, y := a.Tasks[id], b.Tasks[id]
		if x.Answered == 0 || y.Answered == 0 {
			return false
		}
		if x.Correct*y.Answered != y.Correct*x.Answered {
			return false
		}
	}
	return true
}

// Only returns rep with just the targets named by ids, in that order
// (ids not in rep are left out), and its warnings made anew for them.
func (rep Report) Only(ids []string) Report {
	out := rep
	out.Targets, out.Proposals = nil, nil
	for _, id := range ids {
		for _, t := range rep.Targets {
			if t.Target == id {
				out.Targets = append(out.Targets, t)
				break
			}
		}
	}
	out.Warnings = warnings(out)
	return out
}
