// Package detour is the short way to use detour from Go: a Client built from
// a config file (or from a config built in code) that sends requests down a
// route's chain of targets, with the ledger and the health store the config
// names, and hooks that see every attempt and every hop.
//
//	c, err := detour.Open("detour.yaml", detour.WithLedgerFile("ledger.jsonl"))
//	if err != nil { ... }
//	defer c.Close()
//	res, err := c.Complete(ctx, "default", &llm.Request{
//		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Summarise RFC 9110 in one line"}},
//	})
//	if err == nil {
//		fmt.Println(res.Target.ID(), res.Response.Message.Content) // who really answered
//	}
//
// A route is named as in a request's model: a route of the config, or a
// "provider/model" target directly. Batch sends the items of a channel with
// bounded concurrency and yields one Outcome per item; Stream streams. Each
// is a thin layer over [router.Router], which Client.Router returns for what
// this package does not cover.
//
// The program in examples/failover runs a Client against simulated providers
// (package simulate): a daily-quota wall on the first provider, the request
// failing over, and the ledger lines it left.
package detour
