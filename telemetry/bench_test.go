package telemetry_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/telemetry"
	"github.com/detourhq/detour/wire/openai"
)

// fixedClient answers in memory without HTTP: the router's loop alone.
type fixedClient struct{ resp llm.Response }

func (c *fixedClient) Complete(context.Context, *llm.Request) (*llm.Response, error) {
	r := c.resp
	return &r, nil
}

func (c *fixedClient) Stream(context.Context, *llm.Request) (llm.Stream, error) { return nil, nil }

// roundTrip answers every request in memory with status and body.
type roundTrip struct {
	status int
	body   []byte
}

func (rt roundTrip) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body) //nolint:errcheck
		req.Body.Close()
	}
	return &http.Response{StatusCode: rt.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(rt.body)), Request: req}, nil
}

const canned402 = `{"error":{"message":"This request requires more credits, or fewer max_tokens. You requested up to 64 tokens, but can only afford 10.","code":402}}`

func answering() llm.Client {
	return &fixedClient{resp: llm.Response{Model: "m", Message: llm.Message{Role: llm.RoleAssistant, Content: "hi"},
		Usage: llm.Usage{InputTokens: 5, OutputTokens: 1}}}
}

func route(clients ...llm.Client) *router.Route {
	r := &router.Route{Name: "bench"}
	for i, c := range clients {
		r.Chain = append(r.Chain, router.Target{Provider: string(rune('a' + i)), Model: "m", Dialect: "openai", Client: c})
	}
	return r
}

func hello() *llm.Request {
	return &llm.Request{Model: "bench", MaxTokens: 64, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}}
}

func TestTracing_RouterAloneMakesAnInternalRoot(t *testing.T) {
	rc := newReceiver(t)
	tr := newTracer(t, rc)
	r := (&router.Router{Ledger: ledger.Discard, Trace: tr}).Init()
	res, err := r.Complete(context.Background(), route(answering()), hello(), router.Options{RequestID: "req-1"})
	if err != nil {
		t.Fatal(err)
	}
	flush(t, tr)
	spans, _ := rc.got()
	root, kids := tree(t, spans, "chat bench")
	if len(kids) != len(res.Attempts) || len(kids) != 1 {
		t.Fatalf("%d child spans for %d attempts, want 1", len(kids), len(res.Attempts))
	}
	if len(root.GetParentSpanId()) != 0 || root.GetKind() != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("request span parent %x kind %v: want a root, internal (no gateway)", root.GetParentSpanId(), root.GetKind())
	}
	wantAttrs(t, root, map[string]string{"detour.request_id": "req-1", "gen_ai.response.model": "m",
		"gen_ai.usage.input_tokens": "5", "gen_ai.usage.output_tokens": "1", "detour.attempts": "1"})
	wantAttrs(t, kids[0], map[string]string{"detour.dialect": "openai", "gen_ai.system": "a", "detour.status": "ok"})
}

// benchComplete runs Complete on route, traced by tr (nil: off).
func benchComplete(b *testing.B, tr router.Tracer, rt *router.Route) {
	r := (&router.Router{Ledger: ledger.Discard, Trace: tr}).Init()
	req := hello()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Complete(ctx, rt, req, router.Options{RequestID: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTracer is a real Tracer posting to an in-process collector that
// reads each post and answers 200 without decoding it: a real collector
// runs in a process of its own.
func benchTracer(b *testing.B) *telemetry.Tracer {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(srv.Close)
	tr, err := telemetry.New(context.Background(), telemetry.Config{URL: srv.URL + "/v1/traces"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Shutdown(context.Background()) }) //nolint:errcheck
	return tr
}

func parkedSkip() *router.Route {
	dead := &openai.Client{BaseURL: "http://mem/v1", APIKey: "k", HTTPClient: &http.Client{Transport: roundTrip{402, []byte(canned402)}}}
	return route(dead, answering())
}

// BenchmarkComplete_TracingOff is the router's own cost per answered
// request with Router.Trace nil: the same as BenchmarkRouter_Loop.
func BenchmarkComplete_TracingOff(b *testing.B) {
	benchComplete(b, nil, route(answering()))
}

// BenchmarkComplete_TracingOn adds a request span and one attempt span,
// exported over OTLP/HTTP in the background (to an in-process collector:
// the export's CPU and allocations count here too).
func BenchmarkComplete_TracingOn(b *testing.B) {
	benchComplete(b, benchTracer(b), route(answering()))
}

// BenchmarkComplete_TracingOnNoExport is TracingOn with batches that go
// nowhere: the cost of making the spans, on the request's goroutine.
func BenchmarkComplete_TracingOnNoExport(b *testing.B) {
	tr := telemetry.NewDiscarding()
	b.Cleanup(func() { tr.Shutdown(context.Background()) }) //nolint:errcheck
	benchComplete(b, tr, route(answering()))
}

// BenchmarkComplete_ParkedSkipTracingOff has a first target parked by a
// 402: each request records a skip, then the second target answers.
func BenchmarkComplete_ParkedSkipTracingOff(b *testing.B) {
	benchComplete(b, nil, parkedSkip())
}

// BenchmarkComplete_ParkedSkipTracingOn is the same, traced: a request
// span and two children.
func BenchmarkComplete_ParkedSkipTracingOn(b *testing.B) {
	benchComplete(b, benchTracer(b), parkedSkip())
}
