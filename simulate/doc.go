// Package simulate runs fake LLM providers that speak OpenAI's chat
// completions byte for byte (answers, SSE streams, tool calls and each
// provider's real error bodies) and fail on a script or at random, over
// loopback TCP or in memory.
//
// Each provider lives under its own path prefix, so its base URL is
// srv.URL + "/" + name + "/v1" (srv.BaseURL(name)). A Script serves one
// Fault per request, in order, then the Profile (random faults from a seed)
// or OK. Stats counts what every provider received and served.
//
//	srv, err := simulate.Start(simulate.Provider{
//		Name:   "groq",
//		Models: []string{"llama-3.3-70b-versatile"},
//		Style:  simulate.StyleGroq,
//		Script: []simulate.Fault{
//			{Kind: simulate.RateLimit, RetryAfter: 2 * time.Second},
//			{Kind: simulate.DailyQuota},
//		}, // then OK: "Hello from groq/llama-3.3-70b-versatile."
//	})
//	if err != nil { ... }
//	defer srv.Close()
//	base := srv.BaseURL("groq") // http://127.0.0.1:<port>/groq/v1
//
// Tests under a fake clock skip the sockets: NewServer, set Clock, and send
// through srv.Transport() to srv.BaseURL(name). DayProfile reproduces the
// measured day of DESIGN.md (free tiers walled, a credit router refusing
// expensive models, a rate-limited pay-as-you-go tier, two healthy prepaid
// providers).
package simulate
