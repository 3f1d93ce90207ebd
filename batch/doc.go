// Package batch runs files of LLM requests through the router, one
// request per line, one result per line: detour's own line format or
// OpenAI's Batch API (custom_id, method, url, body in; id, custom_id,
// response, error out), so an existing OpenAI batch file runs unchanged.
//
// A run is resumable and crash-safe. Each results line is written whole
// with one write and synced to disk before its worker moves on (writers
// share each fsync); a rerun skips the items whose outcome the file holds,
// cuts a torn last line, and sends again those left pending. Each item is
// sent under an idempotency key (router.Options.IdempotencyKey) made of
// the input's identity, the results file and the item's id, so an answer
// that came before a crash and never reached the file is given again by
// the health store's records on the rerun, with no send. Limits pace the
// sends per provider and halve a provider's rate on its rate-limit 429s.
//
//	in, err := batch.OpenInput("in.jsonl")
//	out, err := batch.OpenOutput("out.jsonl", in.Format)
//	r := &batch.Runner{
//		Router: &router.Router{Health: hb, Ledger: sink},
//		Route:  func(name string) (*router.Route, error) { return cfg.Lookup(name, config.BuildOptions{}) },
//		DefaultRoute: "default",
//		Scope:        batch.Key(in.Digest, "/abs/out.jsonl", host),
//	}
//	sum, err := r.Run(ctx, in, out)
package batch
