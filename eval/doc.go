// Package eval measures LLM targets on a task suite (package grade) so a
// chain's order is chosen from data, not price lists: every target x task x
// repetition through the router with no fallback, each call graded and
// appended to a results file (package eval/results), then a report per
// target (reachability apart from accuracy, truncation, latency, cost per
// correct answer) and a proposed chain.
//
//	out, err := results.Open("eval.jsonl")
//	run := &eval.Runner{Router: r, Suite: suite, Targets: routes, Reps: 3}
//	p, err := run.Run(ctx, out) // *GraderError before any call if a grader is wrong
//	rep := eval.Summarize(suite.Name, suite.Digest(), taskIDs, targets, out.Snapshot())
//	eval.WriteTable(os.Stdout, rep)
//	fmt.Print(eval.Propose("default", rep, eval.ProposeOptions{}).Snippet("proposed"))
package eval
