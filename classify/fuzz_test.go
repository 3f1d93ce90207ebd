package classify_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/wire/openai"
)

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"6m0s", "1s", "20ms", "7m12.3s", "2h1m", "9m38.016s", "6m 11.52s", "37s",
		"33011.382867097855", "45", "0", "-1s", "1e3", "µs", "1..2s", "99999999h", " 1S "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := classify.ParseDuration(s)
		if !ok {
			if d != 0 {
				t.Fatalf("ParseDuration(%q) = %v with ok false", s, d)
			}
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		// Round trip through Go's own format.
		d2, ok := classify.ParseDuration(d.String())
		if !ok {
			t.Fatalf("ParseDuration(%q) of %q failed", d.String(), s)
		}
		if diff := d2 - d; diff < -time.Microsecond || diff > time.Microsecond {
			t.Fatalf("round trip of %q: %v then %v", s, d, d2)
		}
	})
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"20", "1.5", "86400", "0", "-1", "", "soon", "1e3",
		"Thu, 21 Aug 2025 12:41:29 GMT", "Thursday, 21-Aug-25 12:42:59 GMT", "Thu Aug 21 12:41:29 2025"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := classify.ParseRetryAfter(s, t0)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("ParseRetryAfter(%q) = %v, %v", s, d, ok)
		}
		ms, ok := classify.ParseRetryAfterMS(s)
		if ms < 0 || (!ok && ms != 0) {
			t.Fatalf("ParseRetryAfterMS(%q) = %v, %v", s, ms, ok)
		}
		if d, _ := classify.ParseMessageWait(s); d < 0 {
			t.Fatalf("ParseMessageWait(%q) = %v", s, d)
		}
		if at, ok := classify.ParseResetTime(s, t0); ok && !at.IsZero() && !at.After(t0) {
			t.Fatalf("ParseResetTime(%q) = %v, not after now", s, at)
		}
		if at, ok := classify.ParseMessageReset(s, t0); ok && !at.IsZero() && !at.After(t0) {
			t.Fatalf("ParseMessageReset(%q) = %v, not after now", s, at)
		}
	})
}

func FuzzClassify(f *testing.F) {
	for _, c := range loadSample(f) {
		status := 0
		if c.Status != nil {
			status = *c.Status
		}
		f.Add(status, c.Body, c.Headers["retry-after"], c.Headers["x-should-retry"], "", "")
	}
	f.Add(429, `{"error":{"message":"Please try again in 7m12.3s","code":"rate_limit_exceeded"}}`, "", "", "0", "6m0s")
	f.Add(503, "<html><title>\u2028x</title>", "Thu, 21 Aug 2025 12:41:29 GMT", "false", "", "")
	f.Fuzz(func(t *testing.T, status int, body, retryAfter, shouldRetry, remaining, reset string) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("X-Should-Retry", shouldRetry)
		h.Set("X-Ratelimit-Remaining-Tokens", remaining)
		h.Set("X-Ratelimit-Reset-Tokens", reset)
		h.Set("Anthropic-Ratelimit-Tokens-Remaining", remaining)
		h.Set("Anthropic-Ratelimit-Tokens-Reset", reset)
		check := func(f classify.Failure) {
			if f.Kind == "" || f.Status == "" || f.Reason == "" {
				t.Fatalf("incomplete failure %+v", f)
			}
			if n := utf8.RuneCountInString(f.Reason); n > classify.MaxReason {
				t.Fatalf("Reason has %d runes: %q", n, f.Reason)
			}
			if strings.ContainsAny(f.Reason, "\r\n") || !utf8.ValidString(f.Reason) {
				t.Fatalf("Reason not one valid line: %q", f.Reason)
			}
			if f.RetryAfter < 0 {
				t.Fatalf("negative RetryAfter %v", f.RetryAfter)
			}
		}
		check(classify.Classify(openai.ParseError(status, h, []byte(body)), t0))
		if e, ok := openai.ParseStreamError([]byte(body)); ok {
			check(classify.Classify(e, t0))
		}
	})
}
