// Package grade reads task suites for `detour eval` and grades answers with
// machine graders: exact and normalized text, numbers, dates, JSON, a
// program's exit status, text constraints and an LLM judge.
//
// A suite is a YAML (or JSON) file of tasks, each with a prompt, its graders
// and known-good and known-bad answers that Check runs the graders on:
//
//	s, err := grade.Load("eval/suites/builtin.yaml")
//	if err != nil {
//		log.Fatal(err) // builtin.yaml:12: task "x": grade: unknown grader "numberic" (graders: ...)
//	}
//	if probs := s.Check(ctx, grade.Env{}); probs != nil {
//		log.Fatal(probs[0]) // task "x": grader passes known-bad answer #1 ("12.4"): ...
//	}
//	v, err := s.Task("arith-margin-en").Grade(ctx, grade.Env{}, answer)
//	// err: the grader could not run; v.Pass, v.Why: the grade
package grade
