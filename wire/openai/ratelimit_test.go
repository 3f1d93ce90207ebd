package openai

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// withLimits sets OpenAI's x-ratelimit-* headers on resp (from the
// "Rate limits" guide's example).
func withLimits(resp *http.Response) *http.Response {
	for k, v := range map[string]string{
		"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "5",
		"x-ratelimit-reset-requests": "9m38.016s", "x-ratelimit-limit-tokens": "150000",
		"x-ratelimit-remaining-tokens": "149984", "x-ratelimit-reset-tokens": "22ms",
	} {
		resp.Header.Set(k, v)
	}
	return resp
}

var wantLimits = &llm.RateLimit{LimitRequests: 60, RemainingRequests: 5, ResetRequests: 9*time.Minute + 38016*time.Millisecond,
	LimitTokens: 150000, RemainingTokens: 149984, ResetTokens: 22 * time.Millisecond}

func TestDecodeResponse_ReadsRateLimitHeaders(t *testing.T) {
	r, err := DecodeResponse(withLimits(jsonResponse(200, completionJSON)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantLimits, r.RateLimit); diff != "" {
		t.Fatalf("RateLimit (-want +got):\n%s", diff)
	}
	r, err = DecodeResponse(jsonResponse(200, completionJSON))
	if err != nil || r.RateLimit != nil {
		t.Fatalf("no headers: RateLimit %+v, %v; want nil", r.RateLimit, err)
	}
}

func TestDecodeStream_ReadsRateLimitHeaders(t *testing.T) {
	tests := []struct {
		name string
		resp func() *http.Response
	}{
		{"event stream", func() *http.Response {
			return sseResponse(bytes.NewReader(wiretest.Fixture(t, "text_usage.sse")))
		}},
		{"JSON body served as a stream", func() *http.Response { return jsonResponse(200, completionJSON) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := DecodeStream(withLimits(tt.resp()))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if diff := cmp.Diff(wantLimits, llm.RateLimitOf(st)); diff != "" {
				t.Fatalf("RateLimit before the first chunk (-want +got):\n%s", diff)
			}
			if _, err := wiretest.Drain(t, st); err != io.EOF {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantLimits, llm.RateLimitOf(st)); diff != "" {
				t.Fatalf("RateLimit after the end (-want +got):\n%s", diff)
			}
		})
	}
	st, err := DecodeStream(sseResponse(io.NopCloser(strings.NewReader("data: [DONE]\n\n"))))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if rl := llm.RateLimitOf(st); rl != nil {
		t.Fatalf("no headers: RateLimit %+v, want nil", rl)
	}
}

// A failure says what is left too (a 429 with x-ratelimit-remaining-*:
// 0): the error carries it, streamed or not, for the router to park the
// target until the reset it names.
func TestDecodeError_ReadsRateLimitHeaders(t *testing.T) {
	const body = `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`
	decode := map[string]func(*http.Response) error{
		"whole":    func(r *http.Response) error { _, err := DecodeResponse(r); return err },
		"streamed": func(r *http.Response) error { _, err := DecodeStream(r); return err },
	}
	for name, dec := range decode {
		t.Run(name, func(t *testing.T) {
			pe, ok := errors.AsType[*llm.ProviderError](dec(withLimits(jsonResponse(429, body))))
			if !ok {
				t.Fatal("want a *llm.ProviderError")
			}
			if diff := cmp.Diff(wantLimits, pe.RateLimit); diff != "" {
				t.Fatalf("RateLimit (-want +got):\n%s", diff)
			}
			pe, _ = errors.AsType[*llm.ProviderError](dec(jsonResponse(429, body)))
			if pe == nil || pe.RateLimit != nil {
				t.Fatalf("no headers: %+v, want a RateLimit of nil", pe)
			}
		})
	}
}
