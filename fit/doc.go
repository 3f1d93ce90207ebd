// Package fit estimates a request's input tokens for a model family
// without a tokenizer, and adapts a request to a smaller context window
// as far as its route allows (old tool results elided, a shorter system
// prompt, old turns dropped), or says it cannot.
//
//	out, did, ok := fit.Fit(req, 32768, 4096, "llama-3.3-70b",
//		&fit.Adaptation{KeepLastTurns: 4, DropToolResults: 2})
//	if !ok {
//		// skip the target: even the adapted request does not fit
//	}
//	// send out; record did ("dropped 12 of 20 turns", ...)
package fit
