// Package ledger records every attempt the router makes, success or failure,
// as one Record, and writes it to a Sink: by default a JSONL file that several
// processes may append to at once.
//
// A Record holds what happened and what it cost, never the prompt or the
// response text: it has no field for them.
//
//	f, err := ledger.OpenFile("detour-ledger.jsonl")
//	if err != nil { ... }
//	defer f.Close()
//	err = f.Write(ledger.Record{
//		Time: now, RequestID: id, Route: "default",
//		Provider: "groq", Model: "llama-3.3-70b-versatile",
//		Hop: 0, Attempt: 1, Status: "http_429", Kind: "transient",
//		Action: "retry", Seconds: 0.13, WaitSeconds: 2, RetryAfterS: 2,
//		Reason: "HTTP 429 rate_limit_exceeded: TPM limit",
//	})
//
//	recs, err := ledger.ReadFile("detour-ledger.jsonl")
package ledger
