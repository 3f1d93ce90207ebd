// Package gateway is detour's OpenAI-, Anthropic- and Gemini-compatible HTTP
// gateway: any app pointing its OpenAI SDK (base URL http://HOST/v1),
// Anthropic SDK (base URL http://HOST) or Google Gen AI SDK (base URL
// http://HOST: POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse) at it gets detour's fallback routing,
// unchanged. It serves chat completions, Anthropic Messages, Gemini's
// generateContent, embeddings and, statelessly, OpenAI's Responses API
// (POST /v1/responses: translated for every target, since no provider
// speaks it; previous_response_id is a 400, as detour keeps no
// conversation).
//
// A request's model names a route of the config, or a provider/model target
// (with OpenRouter's "models": [...] it names its own candidates). Streams
// fail over only before their first output; after it a failure ends the
// stream with an error event in the client's dialect, never with another
// model's text. Every answer says who answered (the model field, Gemini's
// modelVersion, and the x-detour-* headers); every failure comes in the
// client's dialect (Google's {"error":{code,message,status}} for Gemini). When
// every candidate failed the answer is 429 (all rate limited or out of
// quota), 504 (all timed out) or 503, with x-should-retry: false and the
// providers' wait as Retry-After and retry-after-ms. POST /v1/embeddings
// serves OpenAI's embeddings the same way (keys, limits, headers, errors),
// through router.Embed: a request fails over only to targets of its first
// candidate's model family, since vectors of different models do not mix.
//
//	cfg, err := config.Load("detour.yaml")
//	if err != nil {
//		log.Fatal(err)
//	}
//	gw, err := gateway.New(gateway.Config{File: cfg, Logger: slog.Default()})
//	if err != nil {
//		log.Fatal(err)
//	}
//	ln, err := net.Listen("tcp", gw.Addr())
//	if err != nil {
//		log.Fatal(err)
//	}
//	go gw.Serve(ln)
//	// ... on SIGTERM:
//	gw.Shutdown(context.Background()) // drains streams within gateway.drain_timeout
package gateway
