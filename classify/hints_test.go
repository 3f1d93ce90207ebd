package classify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
)

var t0 = time.Date(2025, 8, 21, 12, 40, 59, 0, time.UTC)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		// OpenAI x-ratelimit-reset-* (P: 1.2; sample openai-chat-400-unsupported-parameter).
		{"6m0s", 6 * time.Minute, true},
		{"1s", time.Second, true},
		{"20ms", 20 * time.Millisecond, true},
		{"120ms", 120 * time.Millisecond, true},
		{"7m12.3s", 7*time.Minute + 12300*time.Millisecond, true},
		{"2h1m", 2*time.Hour + time.Minute, true},
		{"1h2m3s", time.Hour + 2*time.Minute + 3*time.Second, true},
		// Groq (P: Groq; continue#10920).
		{"9m38.016s", 9*time.Minute + 38016*time.Millisecond, true},
		{"1.984999999s", 1984999999 * time.Nanosecond, true},
		{"6m 11.52s", 6*time.Minute + 11520*time.Millisecond, true},
		// Gemini RetryInfo (sample gemini-429-limit-zero).
		{"37s", 37 * time.Second, true},
		{"7.967587226s", 7967587226 * time.Nanosecond, true},
		// Bare and float seconds (Retry-After, Cerebras -day headers).
		{"45", 45 * time.Second, true},
		{"33011.382867097855", 33011382867098 * time.Microsecond / 1000, true},
		{"0", 0, true},
		{" 1S ", time.Second, true},
		{"500us", 500 * time.Microsecond, true},
		{"500µs", 500 * time.Microsecond, true},
		{"1d", 24 * time.Hour, true},
		{".5s", 500 * time.Millisecond, true},
		// Rejected.
		{"", 0, false},
		{"-1s", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},
		{"+1s", 0, false}, // a sign is garbled, never 0 (wire/exchange reads resets through this)
		{"1e3", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"s", 0, false},
		{"5", 5 * time.Second, true},
		{"5x", 0, false},
		{"1..2s", 0, false},
		{"1.2.3s", 0, false},
		{"1h-2m", 0, false},
		{"soon", 0, false},
		{"99999999h", 0, false},
	}
	for _, tt := range tests {
		got, ok := classify.ParseDuration(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"Seconds", "20", 20 * time.Second, true},              // sample anthropic-429-with-ratelimit-headers
		{"LongSeconds", "86400", 24 * time.Hour, true},         // sample azure-429-retry-after-86400
		{"FloatSeconds", "1.5", 1500 * time.Millisecond, true}, // openai-go accepts floats
		{"Zero", "0", 0, true},
		{"HTTPDate", "Thu, 21 Aug 2025 12:41:29 GMT", 30 * time.Second, true},
		{"RFC850Date", "Thursday, 21-Aug-25 12:42:59 GMT", 2 * time.Minute, true},
		{"PastDate", "Thu, 21 Aug 2025 12:00:00 GMT", 0, true},
		{"NowDate", "Thu, 21 Aug 2025 12:40:59 GMT", 0, true},
		{"Negative", "-1", 0, false},
		{"Empty", "", 0, false},
		{"Garbage", "soon", 0, false},
		{"Exponent", "1e3", 0, false},
		{"Huge", "99999999999999", 100 * 365 * 24 * time.Hour, true}, // a far reset: parks
		{"Beyond a float", strings.Repeat("9", 400), 100 * 365 * 24 * time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := classify.ParseRetryAfter(tt.in, t0)
			if ok != tt.ok || got != tt.want {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseRetryAfterMS(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1500", 1500 * time.Millisecond, true},
		{"644.5", 644500 * time.Microsecond, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"", 0, false},
		{"1s", 0, false},
		{"NaN", 0, false},
	}
	for _, tt := range tests {
		got, ok := classify.ParseRetryAfterMS(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseRetryAfterMS(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseShouldRetry(t *testing.T) {
	for in, want := range map[string]int{"true": 1, "false": -1, "": 0, "True": 0, "FALSE": 0, "1": 0, " true": 0} {
		if got := classify.ParseShouldRetry(in); got != want {
			t.Errorf("ParseShouldRetry(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestParseResetTime(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Time
		ok   bool
	}{
		// Anthropic anthropic-ratelimit-*-reset (sample anthropic-429-with-ratelimit-headers).
		{"RFC3339", "2025-08-21T12:41:19Z", t0.Add(20 * time.Second), true},
		{"RFC3339Offset", "2025-08-21T14:41:19+02:00", t0.Add(20 * time.Second), true},
		{"Past", "2025-08-21T12:40:00Z", time.Time{}, true},
		// Anthropic unified headers: epoch seconds.
		{"EpochSeconds", "1755780079", t0.Add(20 * time.Second), true},
		// OpenRouter X-RateLimit-Reset: epoch milliseconds (Gitlawb/openclaude#936).
		{"EpochMillis", "1755780079000", t0.Add(20 * time.Second), true},
		{"SmallNumberIsADuration", "33011.38", time.Time{}, false},
		{"Negative", "-1755780079", time.Time{}, false},
		{"Garbage", "tomorrow", time.Time{}, false},
		{"Empty", "", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := classify.ParseResetTime(tt.in, t0)
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Errorf("ParseResetTime(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseMessageWait(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"GroqTPD", "Rate limit reached for model `llama-3.3-70b-versatile` ... on tokens per day (TPD): Limit 100000, Used 99876, Requested 1134. Please try again in 7m12.3s. Need more tokens?", 7*time.Minute + 12300*time.Millisecond, true},
		{"OpenAIms", "on tokens per min (TPM): Limit 30000, Used 29937, Requested 385. Please try again in 644ms.", 644 * time.Millisecond, true}, // sample openai-429-tpm-ms
		{"OpenAI20ms", "Please try again in 20ms.", 20 * time.Millisecond, true},
		{"Float", "Please try again in 1.5s.", 1500 * time.Millisecond, true},
		{"RPDShortDrip", "on requests per day (RPD): Limit 10000, Used 10000, Requested 1. Please try again in 8.64s. Visit", 8640 * time.Millisecond, true}, // sample openai-429-rpd-short-drip
		{"GroqSpace", "Please try again in 6m 11.52s.", 6*time.Minute + 11520*time.Millisecond, true},
		{"Gemini", "limit: 0, model: gemini-2.0-flash\nPlease retry in 7.967587226s.", 7967587226 * time.Nanosecond, true},     // sample gemini-429-limit-zero
		{"AzureSeconds", "pricing tier. Please retry after 86400 seconds. Please contact Azure support", 24 * time.Hour, true}, // sample azure-429-retry-after-86400
		{"AzurePeak", "Please retry after 20 seconds.", 20 * time.Second, true},
		{"Minutes", "try again in 2 minutes", 2 * time.Minute, true},
		{"NoWait", "Please reduce the rate of your requests.", 0, false},
		{"Later", "Please try again later.", 0, false},
		{"NotAUnit", "Please try again in 7 months.", 0, false},
		{"Empty", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := classify.ParseMessageWait(tt.in)
			if ok != tt.ok || got != tt.want {
				t.Errorf("ParseMessageWait(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseMessageReset(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Time
		ok   bool
	}{
		// sample anthropic-400-user-spend-limit.
		{"AnthropicSpendLimit", "You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC.", time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), true},
		// MiniMax-AI/MiniMax-M2.7#36.
		{"MiniMax", "5-hour usage limit reached, resets at 2026-05-15T15:00:00Z", time.Date(2026, 5, 15, 15, 0, 0, 0, time.UTC), true},
		{"Offset", "quota resets at 2025-08-21T14:45:00+02:00", time.Date(2025, 8, 21, 12, 45, 0, 0, time.UTC), true},
		{"Past", "You will regain access on 2025-01-01 at 00:00 UTC.", time.Time{}, true},
		{"NoWord", "created 2026-05-15T15:00:00Z", time.Time{}, false},
		{"Nothing", "Overloaded", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := classify.ParseMessageReset(tt.in, t0)
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Errorf("ParseMessageReset(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseRetryInfo(t *testing.T) {
	tests := []struct {
		name string
		body string
		want time.Duration
		ok   bool
	}{
		{
			// RooCodeInc/Roo-Code#3883 (P: Gemini).
			name: "Gemini",
			body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`,
			want: 37 * time.Second, ok: true,
		},
		{
			name: "InArray",
			body: `[{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}]`,
			want: 26 * time.Second, ok: true,
		},
		{name: "None", body: `{"error":{"code":429}}`},
		{name: "Bad", body: `{"error":{"details":[{"retryDelay":"soon"}]}}`},
		{name: "NotJSON", body: `<html>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := classify.ParseRetryInfo([]byte(tt.body))
			if ok != tt.ok || got != tt.want {
				t.Errorf("ParseRetryInfo = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestClassify_Scrub(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz012345.", "Incorrect API key provided: [redacted]."},
		{"key sk-ant-api03-AbCdEfGhIjKlMnOp_qr-st", "key [redacted]"},
		{"gsk_ABCDEFGHIJKLMNOPQRSTUVWX failed", "[redacted] failed"},
		{"https://generativelanguage.googleapis.com/v1beta/models/x?key=AIzaSyA1234567890abcdefghijklmnop&alt=sse", "https://generativelanguage.googleapis.com/v1beta/models/x?key=[redacted]&alt=sse"},
		{"Authorization: Bearer abcdefghijklmnop", "Authorization: [redacted]"},
		{"sk-or-v1-0123456789abcdef0123456789abcdef", "[redacted]"},
		// Already masked, or not a key.
		{"Your api key: ****iKey is invalid", "Your api key: ****iKey is invalid"},
		{"Incorrect API key provided: sk-abc12***************************xyz1.", "Incorrect API key provided: sk-abc12***************************xyz1."},
		{"a task-management-service-for-everyone", "a task-management-service-for-everyone"},
		{`Bearer realm="OpenAI API"`, `Bearer realm="OpenAI API"`},
	}
	for _, tt := range tests {
		if got := classify.Scrub(tt.in); got != tt.want {
			t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
