package router_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/wire/openai"
)

const cannedAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`

const canned402 = `{"error":{"message":"This request requires more credits, or fewer max_tokens. You requested up to 64 tokens, but can only afford 10.","code":402}}`

// roundTrip answers every request in memory with status and body.
type roundTrip struct {
	status int
	body   []byte
}

func (rt roundTrip) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: rt.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(rt.body)), Request: req}, nil
}

// fixedClient answers in memory without HTTP: the router's loop alone.
type fixedClient struct{ resp llm.Response }

func (c *fixedClient) Complete(context.Context, *llm.Request) (*llm.Response, error) {
	r := c.resp
	return &r, nil
}

func (c *fixedClient) Stream(context.Context, *llm.Request) (llm.Stream, error) { return nil, nil }

func benchRoute(clients ...llm.Client) *router.Route {
	r := &router.Route{Name: "bench"}
	for i, c := range clients {
		r.Chain = append(r.Chain, router.Target{Provider: string(rune('a' + i)), Model: "m", Client: c})
	}
	return r
}

func runBench(b *testing.B, route *router.Route) {
	r := (&router.Router{Ledger: ledger.Discard}).Init()
	req := prompt("hello")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Complete(ctx, route, req, router.Options{RequestID: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRouter_Loop is the router's own cost per answered request: one
// target, a client that answers in memory.
func BenchmarkRouter_Loop(b *testing.B) {
	runBench(b, benchRoute(&fixedClient{resp: llm.Response{Model: "m", Message: llm.Message{Role: llm.RoleAssistant, Content: "hi"}}}))
}

// BenchmarkRouter_OpenAIInMemory adds the OpenAI wire encode/decode over an
// in-memory http.RoundTripper.
func BenchmarkRouter_OpenAIInMemory(b *testing.B) {
	hc := &http.Client{Transport: roundTrip{200, []byte(cannedAnswer)}}
	runBench(b, benchRoute(&openai.Client{BaseURL: "http://mem/v1", APIKey: "k", HTTPClient: hc}))
}

// BenchmarkRouter_ParkedSkip has a first target parked by a 402 (after the
// first request): each request records a skip, then answers from the second.
func BenchmarkRouter_ParkedSkip(b *testing.B) {
	dead := &openai.Client{BaseURL: "http://mem/v1", APIKey: "k", HTTPClient: &http.Client{Transport: roundTrip{402, []byte(canned402)}}}
	ok := &openai.Client{BaseURL: "http://mem/v1", APIKey: "k", HTTPClient: &http.Client{Transport: roundTrip{200, []byte(cannedAnswer)}}}
	runBench(b, benchRoute(dead, ok))
}
