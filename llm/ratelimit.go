package llm

import "time"

// RateLimit is what a provider said of its rate limits on one answer
// (OpenAI's x-ratelimit-*, Anthropic's anthropic-ratelimit-* headers): how
// many requests and tokens its window allows, how many are left, and when
// the window resets. A field the provider did not send, or sent garbled,
// is -1; every other value is 0 or more. The zero RateLimit says the
// provider has nothing left and resets now; use Unknown for one that says
// nothing yet.
type RateLimit struct {
	// LimitRequests is the requests the window allows; -1: unknown.
	LimitRequests int
	// RemainingRequests is the requests left in the window; -1: unknown.
	RemainingRequests int
	// ResetRequests is how long until the requests are back to the limit
	// (OpenAI) or the window resets (Anthropic), from the answer; -1:
	// unknown.
	ResetRequests time.Duration
	// LimitTokens is the tokens the window allows; -1: unknown.
	LimitTokens int
	// RemainingTokens is the tokens left in the window (the smallest of
	// the token budgets a provider reports separately, such as Anthropic's
	// input and output tokens); -1: unknown.
	RemainingTokens int
	// ResetTokens is how long until the tokens are back to the limit;
	// -1: unknown.
	ResetTokens time.Duration
}

// UnknownRateLimit returns a RateLimit whose every field is unknown (-1).
func UnknownRateLimit() RateLimit {
	return RateLimit{-1, -1, -1, -1, -1, -1}
}

// Known reports whether r says anything: some field is not unknown. A nil
// r says nothing.
func (r *RateLimit) Known() bool {
	return r != nil && (r.LimitRequests >= 0 || r.RemainingRequests >= 0 || r.ResetRequests >= 0 ||
		r.LimitTokens >= 0 || r.RemainingTokens >= 0 || r.ResetTokens >= 0)
}

// RateLimiter is an optional interface of a Stream that knows what its
// provider said of its rate limits, in the response's headers. RateLimit
// returns nil when the provider said nothing; it may be called at any
// time, from the goroutine that calls Next, and returns the same value
// every time (the headers came before the stream was returned).
type RateLimiter interface {
	RateLimit() *RateLimit
}

// RateLimitOf returns s's RateLimit when s implements RateLimiter, else
// nil.
func RateLimitOf(s Stream) *RateLimit {
	if r, ok := s.(RateLimiter); ok {
		return r.RateLimit()
	}
	return nil
}
