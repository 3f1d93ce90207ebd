package classify

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/internal/lazyregexp"
)

// ParseRetryAfterMS reads OpenAI's retry-after-ms header: milliseconds, a
// fraction allowed ("1500", "644.5"). ok is false for an empty, malformed,
// negative or absurd value. openai-go reads it before Retry-After
// (internal/requestconfig/requestconfig.go), and so does Classify.
func ParseRetryAfterMS(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || v == "" || v[0] == '-' || v[0] == '+' || strings.ContainsAny(v, "eEinfINFxX") {
		return 0, false
	}
	return fromNanos(f * 1e6)
}

// ParseRetryAfter reads a Retry-After header: delay-seconds, whole or
// fractional ("20", "1.5", as openai-go accepts), or an HTTP date, which is
// taken relative to now. A date in the past is a zero wait (ok true); a
// negative number, an empty or malformed value is rejected (ok false). A
// number of seconds too large for any wait (past a century, or past what a
// float holds) is a far reset: the longest wait a hint may name, so the
// target is parked rather than retried.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if c := v[0]; c >= '0' && c <= '9' || c == '.' {
		if strings.ContainsAny(v, "eEinfINFxX") {
			return 0, false
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		if d, ok := fromNanos(f * 1e9); ok {
			return d, true
		}
		return maxHint, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if !t.After(now) {
		return 0, true
	}
	return fromNanos(float64(t.Sub(now)))
}

// ParseShouldRetry reads the x-should-retry header: "true" is +1, "false"
// is -1, anything else (including "True") is 0. The comparison is
// case-sensitive, as in openai-go and anthropic-sdk-go.
func ParseShouldRetry(v string) int {
	switch v {
	case "true":
		return 1
	case "false":
		return -1
	}
	return 0
}

// ParseResetTime reads an absolute reset instant: RFC 3339
// ("2025-08-21T12:40:59Z", Anthropic's anthropic-ratelimit-*-reset), epoch
// seconds (Anthropic's unified subscription headers) or epoch milliseconds
// (OpenRouter's X-RateLimit-Reset). A number is an epoch only from 1e9 up
// (milliseconds from 1e12 up); smaller numbers are durations, see
// ParseDuration. An instant at or before now is the zero time (ok true).
func ParseResetTime(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	var t time.Time
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case strings.ContainsAny(v, "eEinfINFxX-+"), f < 1e9, f >= 1e15:
			return time.Time{}, false
		case f >= 1e12:
			t = time.UnixMilli(int64(f))
		default:
			t = time.Unix(0, int64(f*1e9))
		}
	} else if t, err = time.Parse(time.RFC3339Nano, v); err != nil {
		return time.Time{}, false
	}
	if !t.After(now) {
		return time.Time{}, true
	}
	return t, true
}

// messageWait finds a wait in a provider's message.
var messageWait = lazyregexp.New(`(?i)(?:try again|retry)\s+(?:in|after)\s+(\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h|d)(?:\s?\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h|d))*|\d+(?:\.\d+)?\s*(?:milliseconds?|seconds?|secs?|minutes?|mins?|hours?))(?:[^\pL\pN]|$)`)

// ParseMessageWait reads the wait a provider wrote in its message:
// "Please try again in 7m12.3s." (OpenAI, Groq), "in 20ms", "in 1.5s",
// "in 6m 11.52s" (Groq), "Please retry in 7.967587226s." (Gemini),
// "Please retry after 86400 seconds." (Azure). The first such phrase wins.
func ParseMessageWait(msg string) (time.Duration, bool) {
	m := messageWait().FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	v := strings.ToLower(m[1])
	if w := strings.TrimLeft(v, "0123456789. "); len(w) >= 3 {
		num := strings.TrimSpace(strings.TrimSuffix(v, w))
		switch w[:3] {
		case "mil":
			return ParseDuration(num + "ms")
		case "sec":
			return ParseDuration(num + "s")
		case "min":
			return ParseDuration(num + "m")
		case "hou":
			return ParseDuration(num + "h")
		}
	}
	return ParseDuration(v)
}

// messageReset finds an absolute reset instant in a message: an RFC 3339
// time, or Anthropic's "on 2026-04-01 at 00:00 UTC", after a word that says
// access comes back then.
var messageReset = lazyregexp.New(`(?i)(?:resets?|regain access|resumes?|available again|until)\s+(?:at\s+|on\s+)?(\d{4}-\d{2}-\d{2})(?:T|\s+at\s+|\s+)(\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(Z|UTC|[+-]\d{2}:\d{2})?`)

// ParseMessageReset reads an absolute reset time a provider wrote in its
// message: "You will regain access on 2026-04-01 at 00:00 UTC." (Anthropic
// spend limit, claude-code#38035), "resets at 2026-05-15T15:00:00Z"
// (MiniMax-AI/MiniMax-M2.7#36). A time without a zone is UTC. An instant at
// or before now is the zero time (ok true).
func ParseMessageReset(msg string, now time.Time) (time.Time, bool) {
	m := messageReset().FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}, false
	}
	clock := m[2]
	if len(clock) == 5 {
		clock += ":00"
	}
	zone := strings.ToUpper(m[3])
	if zone == "" || zone == "UTC" {
		zone = "Z"
	}
	t, err := time.Parse(time.RFC3339Nano, m[1]+"T"+clock+zone)
	if err != nil {
		return time.Time{}, false
	}
	if !t.After(now) {
		return time.Time{}, true
	}
	return t, true
}

// ParseRetryInfo reads the retryDelay of a google.rpc.RetryInfo detail
// anywhere in a JSON error body ("37s"; Gemini, go-genai api_client.go).
func ParseRetryInfo(body []byte) (time.Duration, bool) {
	fx := readFacts(body)
	if fx.retryDelay == "" {
		return 0, false
	}
	return ParseDuration(fx.retryDelay)
}

// MaxTransientWait is the longest server-directed wait a transient failure
// may ask for: a longer Retry-After (or reset of an exhausted bucket) makes
// the failure a Wall (PROVIDERS.md §3: "any wait above ~60 s"). It matches
// policy's default MaxServerWait.
const MaxTransientWait = 60 * time.Second

// hints are the retry hints of one provider error.
type hints struct {
	// wait is the server's wait from the first channel that named one, in
	// the order retry-after-ms, Retry-After, the message's "try again in",
	// RetryInfo, OpenRouter's retry_after_seconds, an absolute reset in the
	// message, an exhausted bucket's reset.
	wait time.Duration
	// until is the absolute reset when a channel gave one.
	until time.Time
	// bucket is the latest reset of a rate-limit bucket whose remaining
	// count is 0 (x-ratelimit-*, anthropic-ratelimit-*, OpenRouter's
	// metadata.headers).
	bucket time.Duration
	// shouldRetry is x-should-retry: +1, -1 or 0.
	shouldRetry int
}

// far is the longest wait any hint names: what decides a wall.
func (h hints) far() time.Duration { return max(h.wait, h.bucket) }

// bucketHeaders pairs the remaining and reset headers of each rate-limit
// bucket. Sources: PROVIDERS.md §1.2 (OpenAI/Groq durations; Cerebras
// float seconds; Anthropic RFC 3339; Hugging Face mixed).
var bucketHeaders = [][2]string{
	{"X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"},
	{"X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"},
	{"X-Ratelimit-Remaining-Requests-Day", "X-Ratelimit-Reset-Requests-Day"},
	{"X-Ratelimit-Remaining-Tokens-Minute", "X-Ratelimit-Reset-Tokens-Minute"},
	{"X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
	{"Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset"},
	{"Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset"},
	{"Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset"},
	{"Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset"},
}

// readHints gathers the retry hints of one error: its header, message and
// body facts. status is the HTTP status (a 429 counts a bucket reset even
// when the remaining count is absent).
func readHints(status int, h http.Header, msg string, fx facts, now time.Time) hints {
	out := hints{shouldRetry: ParseShouldRetry(h.Get("X-Should-Retry"))}
	named := true
	if d, ok := ParseRetryAfterMS(h.Get("Retry-After-Ms")); ok {
		out.wait = d
	} else if d, ok := ParseRetryAfter(h.Get("Retry-After"), now); ok {
		out.wait = d
		if t, err := http.ParseTime(strings.TrimSpace(h.Get("Retry-After"))); err == nil && t.After(now) {
			out.until = t
		}
	} else if d, ok := ParseMessageWait(msg); ok {
		out.wait = d
	} else if d, ok := ParseDuration(fx.retryDelay); ok {
		out.wait = d
	} else if d, ok := ParseDuration(fx.retryAfterS); ok {
		out.wait = d
	} else if t, ok := ParseMessageReset(msg, now); ok && !t.IsZero() {
		out.until, out.wait = t, t.Sub(now)
	} else {
		named = false
	}
	for _, p := range bucketHeaders {
		out.bucket = max(out.bucket, bucketReset(status, h.Get(p[0]), h.Get(p[1]), now))
	}
	out.bucket = max(out.bucket, bucketReset(status, fx.rlRemaining, fx.rlReset, now))
	if !named {
		out.wait = out.bucket
	}
	return out
}

// bucketReset is the time until an exhausted bucket resets. A bucket is
// exhausted when its remaining count is exactly 0 (Azure's -1 means
// "unknown"), or absent on a 429. Otherwise, or when reset parses neither
// as an instant (RFC 3339, epoch) nor as a duration, it is zero: the reset
// of a bucket with room left says nothing about this failure (sample
// openai-chat-400-unsupported-parameter carries "120ms" on a 400).
func bucketReset(status int, remaining, reset string, now time.Time) time.Duration {
	remaining = strings.TrimSpace(remaining)
	if reset == "" || !(remaining == "0" || remaining == "" && status == http.StatusTooManyRequests) {
		return 0
	}
	if t, ok := ParseResetTime(reset, now); ok {
		if t.IsZero() {
			return 0
		}
		return t.Sub(now)
	}
	d, _ := ParseDuration(reset)
	return d
}
