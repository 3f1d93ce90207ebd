package simulate

import "time"

// The providers of DayProfile, named for a demo.
const (
	// GroqFree is the free LPU-class tier: 39% of requests hit the
	// tokens-per-day wall (14/36 measured).
	GroqFree = "groq-free"
	// GeminiFree is the free large-context tier, speaking Gemini's native
	// generateContent (DialectGemini): 86% fail (31/36), half with 503
	// UNAVAILABLE, the rest with 429 RESOURCE_EXHAUSTED, per-minute (RetryInfo
	// 2s) or per-day (a wall whose RetryInfo still says 47s).
	GeminiFree = "gemini-free"
	// OpenRouter is the credit router: every expensive model gets a 402
	// (the balance pre-check is max_tokens x price); cheap models answer.
	OpenRouter = "openrouter"
	// MistralPayg is the pay-as-you-go mid tier: 42% of requests get a
	// per-minute 429 (15/36) with a 1-2 s Retry-After.
	MistralPayg = "mistral-payg"
	// DeepSeek is a prepaid-balance provider: no failures (36/36).
	DeepSeek = "deepseek"
	// Together is a prepaid-balance provider: no failures (36/36).
	Together = "together"
	// Anthropic is a prepaid-balance provider speaking Anthropic's Messages
	// API (DialectAnthropic): about 5% of requests get a 529 overloaded_error.
	Anthropic = "anthropic"
)

// The models of DayProfile.
const (
	GroqModel           = "llama-3.3-70b-versatile"
	GeminiModel         = "gemini-2.5-flash"
	OpenRouterCheap     = "meta-llama/llama-3.3-70b-instruct"
	OpenRouterExpensive = "anthropic/claude-sonnet-4"
	MistralModel        = "mistral-small-latest"
	DeepSeekModel       = "deepseek-chat"
	TogetherModel       = "meta-llama/Llama-3.3-70B-Instruct-Turbo"
	AnthropicModel      = "claude-haiku-4-5"
)

// DayProfile returns seven providers reproducing the day measured in
// DESIGN.md, with failure rates drawn from seed (the same seed gives the
// same day) and latencies as measured: errors fail fast (about 130 ms),
// answers take a few hundred milliseconds. Scale the latencies with
// Server.LatencyScale. The providers take any key.
//
// Every dialect is present: GeminiFree speaks Gemini's native API,
// Anthropic (the seventh, added after the six of the measured day) the
// Messages API, the others OpenAI's chat completions. Each Provider's
// Dialect is set, so a client can be picked per provider:
//
//	srv, err := simulate.Start(simulate.DayProfile(42)...)
//	for _, p := range simulate.DayProfile(42) {
//		base := srv.BaseURL(p.Name) // the form p.Dialect's clients expect
//		...
//	}
func DayProfile(seed uint64) []Provider {
	rates := func(cs ...Chance) *Profile {
		return &Profile{Seed: seed, Rules: []Rule{{Chances: cs}}}
	}
	return []Provider{
		{
			Name: GroqFree, Dialect: DialectOpenAI, Models: []string{GroqModel}, Style: StyleGroq,
			Profile: rates(Chance{Fault{Kind: DailyQuota}, 0.39}),
			Latency: Latency{Error: 130 * time.Millisecond, FirstToken: 180 * time.Millisecond, PerChunk: 8 * time.Millisecond},
		},
		{
			Name: GeminiFree, Dialect: DialectGemini, Models: []string{GeminiModel}, ContextWindow: 1048576,
			Profile: rates(
				Chance{Fault{Kind: Unavailable}, 0.50},
				Chance{Fault{Kind: RateLimit, RetryAfter: 2 * time.Second}, 0.18},
				Chance{Fault{Kind: DailyQuota}, 0.18},
			),
			Latency: Latency{Error: 140 * time.Millisecond, FirstToken: 450 * time.Millisecond, PerChunk: 25 * time.Millisecond},
		},
		{
			Name: OpenRouter, Dialect: DialectOpenAI, Models: []string{OpenRouterCheap, OpenRouterExpensive}, Style: StyleOpenRouter,
			Profile: &Profile{Seed: seed, Rules: []Rule{
				{Models: []string{OpenRouterExpensive}, Chances: []Chance{{Fault{Kind: NoCredits}, 1}}},
			}},
			Latency: Latency{Error: 120 * time.Millisecond, FirstToken: 400 * time.Millisecond, PerChunk: 20 * time.Millisecond},
		},
		{
			Name: MistralPayg, Dialect: DialectOpenAI, Models: []string{MistralModel}, Style: StyleMistral,
			Profile: rates(
				Chance{Fault{Kind: RateLimit, RetryAfter: time.Second}, 0.21},
				Chance{Fault{Kind: RateLimit, RetryAfter: 2 * time.Second}, 0.21},
			),
			Latency: Latency{Error: 130 * time.Millisecond, FirstToken: 300 * time.Millisecond, PerChunk: 15 * time.Millisecond},
		},
		{
			Name: DeepSeek, Dialect: DialectOpenAI, Models: []string{DeepSeekModel},
			Latency: Latency{Error: 150 * time.Millisecond, FirstToken: 600 * time.Millisecond, PerChunk: 30 * time.Millisecond},
		},
		{
			Name: Together, Dialect: DialectOpenAI, Models: []string{TogetherModel},
			Latency: Latency{Error: 130 * time.Millisecond, FirstToken: 350 * time.Millisecond, PerChunk: 15 * time.Millisecond},
		},
		{
			Name: Anthropic, Dialect: DialectAnthropic, Models: []string{AnthropicModel}, ContextWindow: 200000,
			Profile: rates(Chance{Fault{Kind: Unavailable}, 0.05}),
			Latency: Latency{Error: 160 * time.Millisecond, FirstToken: 450 * time.Millisecond, PerChunk: 20 * time.Millisecond},
		},
	}
}
