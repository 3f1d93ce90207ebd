package router_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// The ok attempt carries what the provider's headers said of its limits,
// whole answers and streams alike, in both dialects that send them.
func TestRouter_OKAttemptCarriesTheRateLimit(t *testing.T) {
	openaiHeader := http.Header{
		"X-Ratelimit-Limit-Requests": {"100"}, "X-Ratelimit-Remaining-Requests": {"4"},
		"X-Ratelimit-Reset-Requests": {"6m0s"},
	}
	anthropicHeader := http.Header{
		"Date":                                   {epoch.Format(http.TimeFormat)},
		"Anthropic-Ratelimit-Requests-Limit":     {"50"},
		"Anthropic-Ratelimit-Requests-Remaining": {"2"},
		"Anthropic-Ratelimit-Requests-Reset":     {epoch.Add(30 * time.Second).Format(time.RFC3339)},
	}
	want := func(limit, left int, reset time.Duration) *llm.RateLimit {
		rl := llm.UnknownRateLimit()
		rl.LimitRequests, rl.RemainingRequests, rl.ResetRequests = limit, left, reset
		return &rl
	}
	tests := []struct {
		name    string
		dialect sim.Dialect
		header  http.Header
		stream  bool
		want    *llm.RateLimit
	}{
		{"openai whole", sim.DialectOpenAI, openaiHeader, false, want(100, 4, 6*time.Minute)},
		{"openai stream", sim.DialectOpenAI, openaiHeader, true, want(100, 4, 6*time.Minute)},
		{"anthropic whole", sim.DialectAnthropic, anthropicHeader, false, want(50, 2, 30*time.Second)},
		{"anthropic stream", sim.DialectAnthropic, anthropicHeader, true, want(50, 2, 30*time.Second)},
		{"no headers", sim.DialectOpenAI, nil, false, nil},
		{"no headers stream", sim.DialectOpenAI, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, route := newHarness(t, spec{provider: "p1", model: "m", dialect: tt.dialect})
			var got []router.Attempt
			h.router.OnAttempt = func(a router.Attempt) { got = append(got, a) }
			h.script("p1", "m", sim.Fault{Kind: sim.OK, Header: tt.header})
			if tt.stream {
				res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := drain(t, res.Stream); err != nil {
					t.Fatal(err)
				}
			} else if _, err := h.router.Complete(context.Background(), route, prompt("hi"), router.Options{}); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Status != "ok" {
				t.Fatalf("attempts = %+v, want one ok", got)
			}
			if diff := cmp.Diff(tt.want, got[0].RateLimit); diff != "" {
				t.Fatalf("Attempt.RateLimit (-want +got):\n%s", diff)
			}
		})
	}
}
