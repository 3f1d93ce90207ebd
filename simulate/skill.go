package simulate

import (
	"hash/fnv"
	"math"
	"strings"
	"sync"
)

// Skill is a scripted model of known skill on known questions, for
// Provider.Answer: it answers a prompt it knows rightly at the rate
// Accuracy (AccuracyOf, when set, per prompt) and wrongly otherwise, and
// cuts an answer at its output limit at the rate Truncation first (half
// the right answer, finish reason length). A prompt it does not know gets
// "I do not know.".
//
// The rates hold exactly, not just on average: the k-th call on a prompt
// draws the k-th number of an evenly spread sequence (golden-ratio steps
// from an offset seeded by Seed and the prompt), so n calls on one prompt
// get within one of n x rate, whatever order the calls arrive in. Safe
// for concurrent use.
type Skill struct {
	// Answers maps a prompt (Question.Prompt) to its right and wrong answers.
	Answers map[string]Pair
	// Accuracy is the rate of right answers, 0 to 1.
	Accuracy float64
	// AccuracyOf, when set, gives the rate per prompt instead.
	AccuracyOf func(prompt string) float64
	// Truncation is the rate of cut answers, 0 to 1.
	Truncation float64
	// Seed moves the sequences' offsets.
	Seed uint64

	mu    sync.Mutex // guards calls
	calls map[string]int
}

// Pair is a right and a wrong answer to one prompt.
type Pair struct{ Right, Wrong string }

// The steps of the two sequences: the golden ratio's and the silver's
// fractional parts, so cut and right draws do not move together.
const (
	rightStep = 0.6180339887498949
	cutStep   = 0.4142135623730951
)

// Answer answers q; use it as Provider.Answer (skill.Answer).
func (s *Skill) Answer(q Question) Reply {
	p, ok := s.Answers[q.Prompt]
	if !ok {
		return Reply{Text: "I do not know."}
	}
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	k := s.calls[q.Prompt]
	s.calls[q.Prompt] = k + 1
	s.mu.Unlock()
	h := fnv.New64a()
	h.Write([]byte(q.Prompt))
	off := h.Sum64() ^ s.Seed*0x9e3779b97f4a7c15
	cutOff, rightOff := float64(off>>40)/(1<<24), float64(off&(1<<24-1))/(1<<24)
	draw := func(offset, step float64) float64 {
		_, f := math.Modf(offset + float64(k)*step)
		return f
	}
	// Cut draws of 1 - Truncation and above: the k-th right draw is then
	// taken among the answers not cut.
	if draw(cutOff, cutStep) >= 1-s.Truncation {
		r := []rune(p.Right)
		return Reply{Text: strings.TrimSpace(string(r[:len(r)/2])), Truncated: true}
	}
	acc := s.Accuracy
	if s.AccuracyOf != nil {
		acc = s.AccuracyOf(q.Prompt)
	}
	if draw(rightOff, rightStep) < acc {
		return Reply{Text: p.Right}
	}
	return Reply{Text: p.Wrong}
}
