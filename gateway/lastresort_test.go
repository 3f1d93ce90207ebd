package gateway_test

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	sim "github.com/detourhq/detour/simulate"
)

// The route's static answer, seen by the official SDK, plain and
// streamed: a 200 from detour/static, degraded, counted as static.
func TestLastResort_StaticThroughTheSDK(t *testing.T) {
	wall := sim.Fault{Kind: sim.NoCredits}
	f := newFixture(t, withMetricsKey(setup{p1: []sim.Fault{wall}, p2: []sim.Fault{wall},
		routes: "  calm:\n    chain: [p1/m, p2/m]\n    static_answer: \"We are busy; please try again in a minute.\"\n"}))
	params := userHi()
	params.Model = "calm"
	var raw *http.Response
	got, err := f.openai().Chat.Completions.New(ctx(t), params, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "We are busy; please try again in a minute." ||
		raw.Header.Get("X-Detour-Provider") != "detour" || raw.Header.Get("X-Detour-Model") != "static" ||
		raw.Header.Get("X-Detour-Degraded") != "true" {
		t.Fatalf("answer %q, headers %v", got.Choices[0].Message.Content, raw.Header)
	}
	stream := f.openai().Chat.Completions.NewStreaming(ctx(t), params)
	var text strings.Builder
	for stream.Next() {
		if cs := stream.Current().Choices; len(cs) > 0 {
			text.WriteString(cs[0].Delta.Content)
		}
	}
	if stream.Err() != nil || text.String() != "We are busy; please try again in a minute." {
		t.Fatalf("streamed: %q %v", text.String(), stream.Err())
	}
	if n := f.sim.Stats().Total(); n != 2 {
		t.Fatalf("the upstreams got %d requests, want the two walls only (parked after)", n)
	}
	m, _ := scrape(t, f)
	if v := m[`detour_requests_total{outcome="static",route="calm",surface="openai"}`]; v != 2 {
		t.Errorf("static outcomes counted %v, want 2", v)
	}
}

// x-detour-cost is what the request cost, every attempt's together: the
// ledger's figures, on a plain answer.
func TestCostHeader(t *testing.T) {
	f := newFixture(t, setup{p1: []sim.Fault{{Kind: sim.Unavailable}}})
	resp, body := f.post("/v1/chat/completions", chatHi, "X-Detour-No-Fallback", "")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	sum := 0.0
	for _, r := range f.ledger.Records() {
		sum += r.Cost
	}
	if got := resp.Header.Get("X-Detour-Cost"); sum == 0 || got != strconv.FormatFloat(sum, 'f', 6, 64) {
		t.Fatalf("x-detour-cost %q, ledger total %v", got, sum)
	}
}

// A stream's x-detour-cost comes as a trailer once it ended.
func TestCostTrailer(t *testing.T) {
	f := newFixture(t, setup{})
	req, _ := http.NewRequest("POST", f.ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := 0.0
	for _, r := range f.ledger.Records() {
		sum += r.Cost
	}
	if got := resp.Trailer.Get("X-Detour-Cost"); sum == 0 || got != strconv.FormatFloat(sum, 'f', 6, 64) {
		t.Fatalf("trailer x-detour-cost %q, ledger total %v; body %q", got, sum, body)
	}
}

// An invalid request fails closed through the SDK: no static answer covers
// it, whatever the route says.
func TestLastResort_NeverForAnInvalidRequest(t *testing.T) {
	f := newFixture(t, setup{p1: []sim.Fault{{Kind: sim.BadRequest}},
		routes: "  calm:\n    chain: [p1/m, p1/other]\n    static_answer: \"We are busy.\"\n"})
	params := userHi()
	params.Model = "calm"
	_, err := f.openai(option.WithMaxRetries(0)).Chat.Completions.New(ctx(t), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("err %v, want the provider's 400 passed through", err)
	}
	for _, r := range f.ledger.Records() {
		if r.Status == "last_resort" {
			t.Fatalf("a last resort answered an invalid request: %+v", r)
		}
	}
}
