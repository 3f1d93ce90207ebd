package simulate

import (
	"fmt"
	"math"
	"testing"
)

// A Skill answers rightly, wrongly and cut at the scripted rates, on each
// prompt and over many, whatever the order of the calls.
func TestSkill_Rates(t *testing.T) {
	answers := map[string]Pair{}
	for i := range 20 {
		answers[fmt.Sprint("q", i)] = Pair{Right: "ANSWER: 42", Wrong: "ANSWER: 52"}
	}
	for _, tc := range []struct{ acc, cut float64 }{{0.7, 0.2}, {0.2, 0}, {1, 0}, {0, 0.5}} {
		s := &Skill{Answers: answers, Accuracy: tc.acc, Truncation: tc.cut, Seed: 7}
		right, wrong, cut := 0, 0, 0
		for rep := range 50 {
			for i := range 20 {
				q := fmt.Sprint("q", (i*7+rep)%20) // a shuffled order
				r := s.Answer(Question{Prompt: q})
				switch {
				case r.Truncated:
					cut++
				case r.Text == "ANSWER: 42":
					right++
				case r.Text == "ANSWER: 52":
					wrong++
				default:
					t.Fatalf("unexpected text %q", r.Text)
				}
			}
		}
		if got := float64(cut) / 1000; math.Abs(got-tc.cut) > 0.03 {
			t.Errorf("%+v: truncation %.3f", tc, got)
		}
		if got := float64(right) / float64(max(right+wrong, 1)); right+wrong > 0 && math.Abs(got-tc.acc) > 0.03 {
			t.Errorf("%+v: accuracy %.3f", tc, got)
		}
	}
	if r := (&Skill{}).Answer(Question{Prompt: "unknown"}); r.Text != "I do not know." {
		t.Errorf("unknown prompt: %q", r.Text)
	}
}

// On one prompt, n calls get within one of n x Accuracy right answers.
func TestSkill_ExactOnOnePrompt(t *testing.T) {
	for _, acc := range []float64{0.1, 0.25, 0.5, 0.9} {
		s := &Skill{Answers: map[string]Pair{"q": {Right: "r", Wrong: "w"}}, Accuracy: acc, Seed: 3}
		right := 0
		for range 40 {
			if s.Answer(Question{Prompt: "q"}).Text == "r" {
				right++
			}
		}
		if math.Abs(float64(right)-40*acc) > 1.5 {
			t.Errorf("accuracy %.2f: %d of 40 right", acc, right)
		}
	}
}
