// Package router is detour's one loop: pick a target from the route's chain,
// call it, classify a failure, let policy decide, wait or move on, and record
// every attempt in the ledger before the next one starts.
//
//	r := &router.Router{Ledger: sink}
//	res, err := r.Complete(ctx, route, req, router.Options{})
//	if err == nil {
//		fmt.Println(res.Target.ID(), res.Response.Message.Content)
//	}
package router
