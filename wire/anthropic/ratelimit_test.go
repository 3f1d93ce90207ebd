package anthropic

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// withLimits sets Anthropic's anthropic-ratelimit-* headers on resp, as
// the "Rate limits" docs list them, resets as RFC 3339 times counted from
// the Date header.
func withLimits(resp *http.Response) *http.Response {
	for k, v := range map[string]string{
		"Date":                                        "Sun, 01 Mar 2026 12:00:00 GMT",
		"anthropic-ratelimit-requests-limit":          "50",
		"anthropic-ratelimit-requests-remaining":      "3",
		"anthropic-ratelimit-requests-reset":          "2026-03-01T12:00:06Z",
		"anthropic-ratelimit-tokens-limit":            "90000",
		"anthropic-ratelimit-tokens-remaining":        "89000",
		"anthropic-ratelimit-tokens-reset":            "2026-03-01T12:00:01Z",
		"anthropic-ratelimit-input-tokens-limit":      "80000",
		"anthropic-ratelimit-input-tokens-remaining":  "79000",
		"anthropic-ratelimit-input-tokens-reset":      "2026-03-01T12:00:01Z",
		"anthropic-ratelimit-output-tokens-limit":     "16000",
		"anthropic-ratelimit-output-tokens-remaining": "1200",
		"anthropic-ratelimit-output-tokens-reset":     "2026-03-01T12:00:02.5Z",
	} {
		resp.Header.Set(k, v)
	}
	return resp
}

var wantLimits = &llm.RateLimit{LimitRequests: 50, RemainingRequests: 3, ResetRequests: 6 * time.Second,
	LimitTokens: 16000, RemainingTokens: 1200, ResetTokens: 2500 * time.Millisecond}

func TestDecodeResponse_ReadsRateLimitHeaders(t *testing.T) {
	r, err := DecodeResponse(withLimits(jsonResponse(200, haikuTextJSON)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantLimits, r.RateLimit); diff != "" {
		t.Fatalf("RateLimit (-want +got):\n%s", diff)
	}
	r, err = DecodeResponse(jsonResponse(200, haikuTextJSON))
	if err != nil || r.RateLimit != nil {
		t.Fatalf("no headers: RateLimit %+v, %v; want nil", r.RateLimit, err)
	}
}

func TestDecodeStream_ReadsRateLimitHeaders(t *testing.T) {
	tests := []struct {
		name string
		resp func() *http.Response
	}{
		{"event stream", func() *http.Response { return sseResponse(bytes.NewReader(wiretest.Fixture(t, "text.sse"))) }},
		{"JSON body served as a stream", func() *http.Response { return jsonResponse(200, haikuTextJSON) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := DecodeStream(withLimits(tt.resp()))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := wiretest.Drain(t, st); err != io.EOF {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantLimits, llm.RateLimitOf(st)); diff != "" {
				t.Fatalf("RateLimit (-want +got):\n%s", diff)
			}
		})
	}
}
