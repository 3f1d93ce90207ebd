package exchange

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func rateLimit(lr, rr int, resr time.Duration, lt, rt int, rest time.Duration) *llm.RateLimit {
	return &llm.RateLimit{LimitRequests: lr, RemainingRequests: rr, ResetRequests: resr,
		LimitTokens: lt, RemainingTokens: rt, ResetTokens: rest}
}

func TestRateLimitAt(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    http.Header
		want *llm.RateLimit
	}{
		{"no headers", header(), nil},
		{"unrelated headers", header("X-Request-Id", "r1", "Retry-After", "3"), nil},
		{
			// Source: OpenAI, "Rate limits" guide, "Rate limits in headers".
			"openai",
			header("x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "59",
				"x-ratelimit-reset-requests", "1s", "x-ratelimit-limit-tokens", "150000",
				"x-ratelimit-remaining-tokens", "149984", "x-ratelimit-reset-tokens", "6m0s"),
			rateLimit(60, 59, time.Second, 150000, 149984, 6*time.Minute),
		},
		{
			// Source: Groq, "Rate limits" docs.
			"groq fractional and ms",
			header("x-ratelimit-limit-requests", "14400", "x-ratelimit-remaining-requests", "14370",
				"x-ratelimit-reset-requests", "2m59.56s", "x-ratelimit-remaining-tokens", "5997",
				"x-ratelimit-reset-tokens", "22ms"),
			rateLimit(14400, 14370, 2*time.Minute+59560*time.Millisecond, -1, 5997, 22*time.Millisecond),
		},
		{
			"long fractions and bare seconds",
			header("x-ratelimit-reset-requests", "1.984999999s", "x-ratelimit-reset-tokens", "60",
				"x-ratelimit-remaining-requests", "0"),
			rateLimit(-1, 0, 1984999999, -1, -1, time.Minute),
		},
		{"9m38.016s", header("x-ratelimit-reset-requests", "9m38.016s"),
			rateLimit(-1, -1, 9*time.Minute+38016*time.Millisecond, -1, -1, -1)},
		{
			"garbled and negative values are unknown",
			header("x-ratelimit-limit-requests", "lots", "x-ratelimit-remaining-requests", "-3",
				"x-ratelimit-reset-requests", "-1s", "x-ratelimit-limit-tokens", "+5",
				"x-ratelimit-remaining-tokens", "1.5", "x-ratelimit-reset-tokens", "soon"),
			nil,
		},
		{
			// Source: Anthropic, "Rate limits" docs, "Response headers".
			"anthropic",
			header("anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "49",
				"anthropic-ratelimit-requests-reset", "2026-03-01T12:00:01Z",
				"anthropic-ratelimit-tokens-limit", "90000", "anthropic-ratelimit-tokens-remaining", "80000",
				"anthropic-ratelimit-tokens-reset", "2026-03-01T12:00:30Z"),
			rateLimit(50, 49, time.Second, 90000, 80000, 30*time.Second),
		},
		{
			"anthropic keeps the token budget with the fewest left",
			header("anthropic-ratelimit-tokens-limit", "90000", "anthropic-ratelimit-tokens-remaining", "80000",
				"anthropic-ratelimit-tokens-reset", "2026-03-01T12:00:30Z",
				"anthropic-ratelimit-input-tokens-limit", "40000", "anthropic-ratelimit-input-tokens-remaining", "1000",
				"anthropic-ratelimit-input-tokens-reset", "2026-03-01T12:00:10Z",
				"anthropic-ratelimit-output-tokens-limit", "8000", "anthropic-ratelimit-output-tokens-remaining", "7000",
				"anthropic-ratelimit-output-tokens-reset", "2026-03-01T12:00:02Z"),
			rateLimit(-1, -1, -1, 40000, 1000, 10*time.Second),
		},
		{
			"anthropic reset in the past is now; a bad time is unknown",
			header("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-03-01T11:59:00Z",
				"anthropic-ratelimit-tokens-remaining", "5", "anthropic-ratelimit-tokens-reset", "in a bit"),
			rateLimit(-1, 0, 0, -1, 5, -1),
		},
		{
			"openai headers win over anthropic ones",
			header("x-ratelimit-remaining-requests", "7", "anthropic-ratelimit-requests-remaining", "9",
				"anthropic-ratelimit-requests-limit", "10"),
			rateLimit(10, 7, -1, -1, -1, -1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RateLimitAt(tt.h, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("RateLimitAt (-want +got):\n%s", diff)
			}
			if got.Known() != (tt.want != nil) {
				t.Fatalf("Known() = %v", got.Known())
			}
		})
	}
}

func TestRateLimitOf_CountsAnthropicResetsFromTheDateHeader(t *testing.T) {
	h := header("Date", "Sun, 01 Mar 2026 12:00:00 GMT", "anthropic-ratelimit-requests-reset", "2026-03-01T12:00:20Z")
	if got := RateLimitOf(h); got == nil || got.ResetRequests != 20*time.Second {
		t.Fatalf("RateLimitOf = %+v, want a 20 s reset", got)
	}
}

func FuzzRateLimitAt(f *testing.F) {
	f.Add("60", "59", "1s", "150000", "6m0s", "2026-03-01T12:00:01Z")
	f.Add("-1", "x", "9m38.016s", "1.5", "1.984999999s", "2026-03-01T11:00:00Z")
	f.Add("99999999999999999999", "0", "22ms", "", "60", "9999-12-31T23:59:59Z")
	f.Add("1e9", "+3", "1000000h", " 4 ", "NaN", "0001-01-01T00:00:00Z")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, limit, remaining, reset, tokens, tokenReset, at string) {
		h := header("x-ratelimit-limit-requests", limit, "x-ratelimit-remaining-requests", remaining,
			"x-ratelimit-reset-requests", reset, "x-ratelimit-remaining-tokens", tokens,
			"x-ratelimit-reset-tokens", tokenReset,
			"anthropic-ratelimit-requests-reset", at, "anthropic-ratelimit-input-tokens-remaining", tokens,
			"anthropic-ratelimit-output-tokens-remaining", remaining, "anthropic-ratelimit-output-tokens-reset", at)
		rl := RateLimitAt(h, now)
		if rl == nil {
			return
		}
		if !rl.Known() {
			t.Fatalf("a RateLimit that says nothing: %+v", rl)
		}
		for _, n := range []int{rl.LimitRequests, rl.RemainingRequests, rl.LimitTokens, rl.RemainingTokens} {
			if n < -1 {
				t.Fatalf("negative count: %+v", rl)
			}
		}
		for _, d := range []time.Duration{rl.ResetRequests, rl.ResetTokens} {
			if d < -1 {
				t.Fatalf("negative reset: %+v", rl)
			}
		}
		signed := reset != "" && (reset[0] == '+' || reset[0] == '-') // garbled: unknown, then Anthropic's may fill it
		if d, err := time.ParseDuration(reset); err == nil && !signed && d >= 0 && d < 100*365*24*time.Hour && rl.ResetRequests >= 0 {
			if diff := rl.ResetRequests - d; diff < -time.Microsecond || diff > time.Microsecond {
				t.Fatalf("reset %q: %v, time.ParseDuration says %v", reset, rl.ResetRequests, d)
			}
		}
	})
}

// Every name readRateLimit reads is read when it comes alone: the
// pre-scan (saysRateLimits) passes over an answer that has none of its
// prefixes, so a name outside them would be silently never read.
func TestRateLimitAt_EveryNameAloneIsRead(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	names := map[string]string{limitRequests: "5", remainingRequests: "5", resetRequests: "1s",
		limitTokens: "5", remainingTokens: "5", resetTokens: "1s",
		anLimitRequests: "5", anRemainRequests: "5", anResetRequests: now.Add(time.Second).Format(time.RFC3339)}
	for _, k := range anthropicTokens {
		names[k[0]], names[k[1]], names[k[2]] = "5", "5", now.Add(time.Second).Format(time.RFC3339)
	}
	for name, v := range names {
		if RateLimitAt(http.Header{name: {v}}, now) == nil {
			t.Errorf("%s: %s alone reads as no rate limit", name, v)
		}
	}
}
