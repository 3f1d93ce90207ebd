// Package simulate runs fake LLM providers that speak the real wire formats
// byte for byte — OpenAI's chat completions, Anthropic's Messages API,
// Gemini's generateContent and OpenAI's Responses API: answers, SSE
// streams, tool calls and each provider's real error bodies — and fail on
// a script or at random, over
// loopback TCP or in memory. Its encoders are written from recorded traffic,
// independently of the client adapters in wire/*, so a test that passes
// through both checks one against the other.
//
// Each provider lives under its own path prefix and speaks its Dialect;
// srv.BaseURL(name) is the base URL its clients expect:
//
//	DialectOpenAI (zero)  URL/{name}/v1      POST /chat/completions, POST /embeddings,
//	                                         GET /models
//	DialectAnthropic      URL/{name}         POST /v1/messages
//	DialectGemini         URL/{name}/v1beta  POST /models/{model}:generateContent
//	                                         and :streamGenerateContent?alt=sse,
//	                                         :embedContent, :batchEmbedContents
//	DialectResponses      URL/{name}/v1      POST /responses, GET /models
//
// Embeddings requests get deterministic vectors (Vector: a hash of the model
// and the text, EmbedDimensions long unless the request asks for another
// length) in the dialect's shape, and draw from the same scripts as chat
// requests: a DailyQuota walls an embeddings request with the same 429. A
// Record says which requests were embeddings (Record.Embed, Stats.Embeds).
//
// A Script serves one Fault per request, in order, then the Profile (random
// faults from a seed) or OK. Each Kind of fault takes its dialect's real
// shape: a RateLimit is OpenAI's 429 rate_limit_exceeded, Anthropic's 429
// rate_limit_error with anthropic-ratelimit-* headers, or Gemini's 429
// RESOURCE_EXHAUSTED with a per-minute QuotaFailure and a RetryInfo. Streams
// fail the ways real ones do: cut (StreamCut), stalled (StreamStall),
// garbled (StreamMalformed), or whole but for one garbled event in their
// midst (StreamMalformedEvent), with an in-stream error (StreamError), without
// their terminal marker (NoDone), or late to their first token, before the
// headers (SlowFirstToken) or after them (LateFirstToken); Fault.Gap and
// Fault.Pieces shape a long answer ("70 chunks, 1 s apart"), and
// Provider.NoPrefill refuses an assistant last turn. Provider.Answer scripts
// what a text answer says: it sees the request's system prompt, last user
// message and output limit (a Question) and returns the text, and whether it
// was cut at its limit (a Reply: finish_reason "length", A: stop_reason
// "max_tokens", G: finishReason "MAX_TOKENS"). Stats counts what every
// provider received and served, and the role of each request's last message.
//
//	srv, err := simulate.Start(
//		simulate.Provider{
//			Name:   "groq",
//			Models: []string{"llama-3.3-70b-versatile"},
//			Style:  simulate.StyleGroq,
//			Script: []simulate.Fault{
//				{Kind: simulate.RateLimit, RetryAfter: 2 * time.Second},
//				{Kind: simulate.DailyQuota},
//			}, // then OK: "Hello from groq/llama-3.3-70b-versatile."
//		},
//		simulate.Provider{Name: "claude", Dialect: simulate.DialectAnthropic,
//			Script: simulate.Faults(simulate.Unavailable)}, // a 529 overloaded_error
//		simulate.Provider{Name: "gemini", Dialect: simulate.DialectGemini},
//	)
//	if err != nil { ... }
//	defer srv.Close()
//	base := srv.BaseURL("groq")   // http://127.0.0.1:<port>/groq/v1
//	base = srv.BaseURL("claude")  // http://127.0.0.1:<port>/claude
//	base = srv.BaseURL("gemini")  // http://127.0.0.1:<port>/gemini/v1beta
//
// Tests under a fake clock skip the sockets: NewServer, set Clock, and send
// through srv.Transport() to srv.BaseURL(name). DayProfile reproduces the
// measured day of DESIGN.md (free tiers walled, a credit router refusing
// expensive models, a rate-limited pay-as-you-go tier, healthy prepaid
// providers), with a target of each dialect.
package simulate
