// Package router is detour's one loop: pick a target from the route's chain,
// call it, classify a failure, let policy decide, wait or move on, and record
// every attempt in the ledger before the next one starts. Complete, Stream
// and Embed (embeddings, which fail over only within the first candidate's
// model family: vectors of different models do not mix) share that walk.
//
//	r := &router.Router{Ledger: sink}
//	res, err := r.Complete(ctx, route, req, router.Options{})
//	if err == nil {
//		fmt.Println(res.Target.ID(), res.Response.Message.Content)
//	}
//
//	er, err := r.Embed(ctx, route, &llm.EmbedRequest{Input: []string{"a", "b"}}, router.Options{})
//	// er.Embeddings.Vectors[1] is the vector of "b", from er.Target
//
// Whether a candidate may be sent to is decided in one place (eligible,
// chain.go): the skip the ledger records, the next candidate policy is
// offered and the reason the final error gives for a candidate never
// reached all read it. The kinds of send (whole, streamed, embeddings)
// are one interface (sender.go), and a failed send is settled in three
// steps (failure.go): classify, decide, settle.
//
// The router imports only what lies below it in DESIGN.md's layers
// (policy, health, ledger, classify, llm, clock) and fit, which adapts a
// request to a context window; never a wire adapter or an HTTP client: a
// Target's llm.Client speaks to its provider.
package router
