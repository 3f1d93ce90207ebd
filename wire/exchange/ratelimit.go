package exchange

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
)

// RateLimitOf reads what a provider said of its rate limits in a
// response's header, or nil when it said nothing (see RateLimitAt). The
// time Anthropic's resets are counted from is the response's Date header,
// or the wall clock when it has none.
func RateLimitOf(h http.Header) *llm.RateLimit {
	now, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		now = time.Now()
	}
	return RateLimitAt(h, now)
}

// RateLimitAt reads what a provider said of its rate limits in a
// response's header, counting resets given as a time from now; nil when
// it said nothing. It reads:
//
//   - x-ratelimit-{limit,remaining,reset}-{requests,tokens} (OpenAI, and
//     Groq, Mistral, DeepSeek, Together, OpenRouter's OpenAI routes...):
//     counts as integers, resets as durations, "1s", "6m0s",
//     "9m38.016s", "22ms", or bare seconds "60" (classify.ParseDuration);
//   - anthropic-ratelimit-requests-{limit,remaining,reset} and the same
//     for tokens, input-tokens and output-tokens (Anthropic): resets as
//     RFC 3339 times, made a duration from now (0 for a past one); of the
//     token budgets, the one with the fewest tokens remaining is kept.
//
// A value missing, negative or garbled is unknown (-1); when both
// dialects' headers come, the OpenAI ones win field by field.
func RateLimitAt(h http.Header, now time.Time) *llm.RateLimit {
	rl := llm.UnknownRateLimit()
	rl.LimitRequests = count(h.Get("X-Ratelimit-Limit-Requests"))
	rl.RemainingRequests = count(h.Get("X-Ratelimit-Remaining-Requests"))
	rl.ResetRequests = wait(h.Get("X-Ratelimit-Reset-Requests"))
	rl.LimitTokens = count(h.Get("X-Ratelimit-Limit-Tokens"))
	rl.RemainingTokens = count(h.Get("X-Ratelimit-Remaining-Tokens"))
	rl.ResetTokens = wait(h.Get("X-Ratelimit-Reset-Tokens"))

	const a = "Anthropic-Ratelimit-"
	fill(&rl.LimitRequests, count(h.Get(a+"Requests-Limit")))
	fill(&rl.RemainingRequests, count(h.Get(a+"Requests-Remaining")))
	fill(&rl.ResetRequests, until(h.Get(a+"Requests-Reset"), now))
	if rl.RemainingTokens < 0 && rl.LimitTokens < 0 && rl.ResetTokens < 0 {
		found := false
		for _, k := range []string{"Tokens", "Input-Tokens", "Output-Tokens"} {
			lim, rem, reset := count(h.Get(a+k+"-Limit")), count(h.Get(a+k+"-Remaining")), until(h.Get(a+k+"-Reset"), now)
			if lim < 0 && rem < 0 && reset < 0 {
				continue
			}
			if !found || rem >= 0 && (rl.RemainingTokens < 0 || rem < rl.RemainingTokens) {
				found = true
				rl.LimitTokens, rl.RemainingTokens, rl.ResetTokens = lim, rem, reset
			}
		}
	}
	if !rl.Known() {
		return nil
	}
	return &rl
}

// fill sets *dst to v when *dst is unknown.
func fill[T int | time.Duration](dst *T, v T) {
	if *dst < 0 {
		*dst = v
	}
}

// count reads a count header: a non-negative integer, else -1.
func count(v string) int {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || v[0] == '+' {
		return -1
	}
	return n
}

// wait reads a reset duration ("6m0s", "22ms", "60"), else -1. A signed
// one ("+1s", "-1s") is garbled (no provider writes a sign):
// classify.ParseDuration refuses it.
func wait(v string) time.Duration {
	d, ok := classify.ParseDuration(v)
	if !ok || d < 0 {
		return -1
	}
	return d
}

// until reads a reset time (RFC 3339) as the wait from now to it, 0 for a
// time past; else -1.
func until(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return -1
	}
	return max(t.Sub(now), 0)
}
