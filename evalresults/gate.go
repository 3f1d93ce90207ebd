package evalresults

import (
	"fmt"
)

// GateSettings are a route's eval gate: which results count and the
// accuracy a target must have shown on them.
type GateSettings struct {
	// Suite names the suite whose results count; "" means any. Of each
	// suite only its latest version (digest of the newest record) counts.
	Suite string
	// MinAccuracy is the accuracy (correct over answered calls) a target
	// needs, from 0 to 1.
	MinAccuracy float64
	// MinAnswers is the answered calls a target needs before its accuracy
	// counts; 0 means DefaultGateMinAnswers.
	MinAnswers int
}

// DefaultGateMinAnswers is the answered calls a gate needs of a target
// by default: fewer say too little to approve it.
const DefaultGateMinAnswers = 5

// Gate returns the approval of each target id by the records: ok when its
// accuracy on the gate's suite (latest version) reaches MinAccuracy over
// at least MinAnswers answers; why says what was measured otherwise.
func Gate(recs []Record, g GateSettings, source string) func(id string) (ok bool, why string) {
	minAnswers := g.MinAnswers
	if minAnswers <= 0 {
		minAnswers = DefaultGateMinAnswers
	}
	latest := map[string]Record{} // suite -> its newest record
	for _, r := range recs {
		if g.Suite != "" && r.Suite != g.Suite {
			continue
		}
		if l, ok := latest[r.Suite]; !ok || r.Time.After(l.Time) || r.Time.Equal(l.Time) {
			latest[r.Suite] = r
		}
	}
	type score struct{ correct, answered int }
	byTarget := map[string]*score{}
	for _, r := range recs {
		l, ok := latest[r.Suite]
		if !ok || r.Digest != l.Digest || !r.Outcome.Answered() {
			continue
		}
		s := byTarget[r.Target]
		if s == nil {
			s = &score{}
			byTarget[r.Target] = s
		}
		s.answered++
		if r.Outcome == Correct {
			s.correct++
		}
	}
	suite := g.Suite
	if suite == "" {
		suite = "any suite"
	} else {
		suite = "suite " + suite
	}
	pct := func(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }
	return func(id string) (bool, string) {
		s := byTarget[id]
		switch {
		case s == nil:
			return false, fmt.Sprintf("no eval result on %s in %s (run detour eval --targets %s)", suite, source, id)
		case s.answered < minAnswers:
			return false, fmt.Sprintf("only %d answered call(s) on %s in %s; the gate needs %d", s.answered, suite, source, minAnswers)
		}
		acc := float64(s.correct) / float64(s.answered)
		if acc < g.MinAccuracy {
			return false, fmt.Sprintf("accuracy %s (%d/%d) on %s is below %s", pct(acc), s.correct, s.answered, suite, pct(g.MinAccuracy))
		}
		return true, ""
	}
}
