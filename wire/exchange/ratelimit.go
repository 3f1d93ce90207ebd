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
	return readRateLimit(h, &lazyNow{h: h})
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
	return readRateLimit(h, &lazyNow{t: now, ok: true})
}

// The headers read, in canonical form so that each is one map lookup.
const (
	limitRequests     = "X-Ratelimit-Limit-Requests"
	remainingRequests = "X-Ratelimit-Remaining-Requests"
	resetRequests     = "X-Ratelimit-Reset-Requests"
	limitTokens       = "X-Ratelimit-Limit-Tokens"
	remainingTokens   = "X-Ratelimit-Remaining-Tokens"
	resetTokens       = "X-Ratelimit-Reset-Tokens"
	anLimitRequests   = "Anthropic-Ratelimit-Requests-Limit"
	anRemainRequests  = "Anthropic-Ratelimit-Requests-Remaining"
	anResetRequests   = "Anthropic-Ratelimit-Requests-Reset"
)

// anthropicTokens are Anthropic's token budgets: limit, remaining, reset.
var anthropicTokens = [3][3]string{
	{"Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset"},
	{"Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset"},
	{"Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset"},
}

// lazyNow is the time resets are counted from, read only when a reset
// time needs it: the response's Date, else the clock.
type lazyNow struct {
	h  http.Header
	t  time.Time
	ok bool
}

func (n *lazyNow) get() time.Time {
	if !n.ok {
		t, err := http.ParseTime(get(n.h, "Date"))
		if err != nil {
			t = time.Now()
		}
		n.t, n.ok = t, true
	}
	return n.t
}

// get is h's first value of the canonical key k: one map lookup.
func get(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// readRateLimit reads h (see RateLimitAt). Most answers carry one dialect's
// headers or none, so each is one map lookup and nothing is parsed that
// is not there: it runs on every answer.
func readRateLimit(h http.Header, now *lazyNow) *llm.RateLimit {
	if !saysRateLimits(h) {
		return nil // most answers of most providers: no lookup of the 18 names
	}
	rl := llm.UnknownRateLimit()
	rl.LimitRequests = count(get(h, limitRequests))
	rl.RemainingRequests = count(get(h, remainingRequests))
	rl.ResetRequests = wait(get(h, resetRequests))
	rl.LimitTokens = count(get(h, limitTokens))
	rl.RemainingTokens = count(get(h, remainingTokens))
	rl.ResetTokens = wait(get(h, resetTokens))

	fill(&rl.LimitRequests, count(get(h, anLimitRequests)))
	fill(&rl.RemainingRequests, count(get(h, anRemainRequests)))
	fill(&rl.ResetRequests, until(get(h, anResetRequests), now))
	if rl.RemainingTokens < 0 && rl.LimitTokens < 0 && rl.ResetTokens < 0 {
		found := false
		for _, k := range anthropicTokens {
			lim, rem, reset := count(get(h, k[0])), count(get(h, k[1])), until(get(h, k[2]), now)
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
	out := rl // only a known one goes to the heap
	return &out
}

// saysRateLimits reports whether h has a header of either dialect's rate
// limits: one pass over its keys (canonical, as net/http keeps them),
// where looking up every name read hashes eighteen long strings.
func saysRateLimits(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, "X-Ratelimit-") || strings.HasPrefix(k, "Anthropic-Ratelimit-") {
			return true
		}
	}
	return false
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
func until(v string, now *lazyNow) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return -1
	}
	return max(t.Sub(now.get()), 0)
}
