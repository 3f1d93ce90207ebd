package grade

import (
	"context"
	"fmt"
	"sync"
)

// checkWorkers is how many tasks Check grades at once: program graders
// are slow, and each runs a process.
const checkWorkers = 4

// Problem is a known answer a task's graders get wrong: a known-good one
// they fail, a known-bad one they pass, or one they cannot grade.
type Problem struct {
	// Task is the task's id.
	Task string
	// Answer is the known answer, whole.
	Answer string
	// Good is true for a known-good answer, false for a known-bad one.
	Good bool
	// Index is the answer's 1-based place in good: or bad:.
	Index int
	// Verdict is the graders' verdict; zero when Err is set.
	Verdict Verdict
	// Err is why the graders could not run; nil otherwise.
	Err error
}

// String describes the problem in one line, e.g.
// `task "arith-margin-en": grader passes known-bad answer #1 ("12.4"): ...`.
func (p Problem) String() string {
	which := "known-bad"
	if p.Good {
		which = "known-good"
	}
	ans := clip(oneLine(p.Answer, 200), 40)
	switch {
	case p.Err != nil:
		return fmt.Sprintf("task %q: grader could not run on %s answer #%d (%s): %v", p.Task, which, p.Index, ans, p.Err)
	case p.Good:
		return fmt.Sprintf("task %q: grader fails known-good answer #%d (%s): %s", p.Task, p.Index, ans, p.Verdict.Why)
	}
	return fmt.Sprintf("task %q: grader passes known-bad answer #%d (%s): make the grader stricter, or move the answer to good:",
		p.Task, p.Index, ans)
}

// Check grades every task's known-good answers (each must pass) and
// known-bad answers (each must fail) and returns what does not hold, in
// task order, good answers before bad; nil when all hold. Tasks are
// graded checkWorkers at a time. A judge grader with no env.Judge yields a
// Problem whose Err wraps ErrNeedsJudge for each answer of its task.
func (s *Suite) Check(ctx context.Context, env Env) []Problem {
	found := make([][]Problem, len(s.Tasks))
	sem := make(chan struct{}, checkWorkers)
	var wg sync.WaitGroup
	for i, t := range s.Tasks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			found[i] = checkTask(ctx, env, t)
		}()
	}
	wg.Wait()
	var out []Problem
	for _, ps := range found {
		out = append(out, ps...)
	}
	return out
}

// checkTask grades t's known answers.
func checkTask(ctx context.Context, env Env, t *Task) []Problem {
	var out []Problem
	for _, set := range []struct {
		answers []string
		good    bool
	}{{t.Good, true}, {t.Bad, false}} {
		for i, a := range set.answers {
			v, err := t.Grade(ctx, env, a)
			if err != nil || v.Pass != set.good {
				out = append(out, Problem{Task: t.ID, Answer: a, Good: set.good, Index: i + 1, Verdict: v, Err: err})
			}
		}
	}
	return out
}
