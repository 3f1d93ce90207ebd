// Package evalresults reads and writes the results files of `detour eval`:
// one JSON line per call (a target, a task, a repetition, and what became
// of it), appended and synced as each call ends, so a rerun measures only
// what is missing; and it turns them into a route's eval gate.
//
//	f, err := evalresults.Open("eval.jsonl")
//	if !f.Has(digest, "groq/llama-3.3-70b-versatile", "arith-margin-en", 1) {
//		err = f.Append(evalresults.Record{...})
//	}
//	approve := evalresults.Gate(recs, evalresults.GateSettings{Suite: "builtin", MinAccuracy: 0.8}, "eval.jsonl")
//	ok, why := approve("groq/llama-3.3-70b-versatile")
package evalresults
