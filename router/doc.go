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
package router
