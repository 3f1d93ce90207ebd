package exchange

import (
	"net/http"
	"testing"
)

// BenchmarkRateLimitOf is what reading the rate-limit headers costs each
// answer: with OpenAI-style headers, and with none.
func BenchmarkRateLimitOf(b *testing.B) {
	full := http.Header{}
	full.Set("Date", "Tue, 01 Dec 2026 15:00:00 GMT")
	for _, k := range []string{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens"} {
		full.Set(k, "1000")
	}
	full.Set("X-Ratelimit-Reset-Requests", "6m0s")
	full.Set("X-Ratelimit-Reset-Tokens", "22ms")
	none := http.Header{}
	none.Set("Date", "Tue, 01 Dec 2026 15:00:00 GMT")
	none.Set("Content-Type", "application/json")
	b.Run("openai-headers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			RateLimitOf(full)
		}
	})
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			RateLimitOf(none)
		}
	})
}
