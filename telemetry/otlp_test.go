package telemetry_test

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
	"github.com/detourhq/detour/telemetry"
)

// receiver is an in-process OTLP/HTTP collector: it decodes every POST
// /v1/traces (protobuf, gzipped or not) and keeps the spans.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex // guards the fields below
	posts    int
	spans    []*tracepb.Span
	resource map[string]string // the last post's resource attributes
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{t: t}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

// url is the receiver's traces URL.
func (rc *receiver) url() string { return rc.srv.URL + "/v1/traces" }

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "want POST /v1/traces", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		rc.t.Errorf("receiver: %s body is not an ExportTraceServiceRequest: %v", r.Header.Get("Content-Type"), err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.posts++
	for _, rs := range req.GetResourceSpans() {
		rc.resource = attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			rc.spans = append(rc.spans, ss.GetSpans()...)
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out) //nolint:errcheck
}

// got returns the spans received so far, in the order they came, and the
// number of posts.
func (rc *receiver) got() ([]*tracepb.Span, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.spans), rc.posts
}

// attrs flattens OTLP attributes to text: strings as they are, numbers and
// booleans as Go prints them, lists joined by ",".
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = valueText(kv.GetValue())
	}
	return out
}

func valueText(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, valueText(e))
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// The client's trace: W3C traceparent of a sampled span.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	traceparent   = "00-" + clientTraceID + "-" + clientSpanID + "-01"
)

// gatewayFixture is a gateway over simulated providers on loopback, with
// route default = [p0/m (its key unset: skipped), p1/m, p2/m], one family.
type gatewayFixture struct {
	ts     *httptest.Server
	ledger *ledger.Memory
}

func newGateway(t *testing.T, trace *telemetry.Tracer, p1 []sim.Fault) *gatewayFixture {
	t.Helper()
	srv, err := sim.NewServer(sim.Provider{Name: "p1", Script: p1}, sim.Provider{Name: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(srv)
	t.Cleanup(func() { up.Close(); srv.Close() })
	yaml := fmt.Sprintf(`providers:
  p0: {base_url: %[1]s/p0/v1, key_env: P0_KEY, pool: free}
  p1: {base_url: %[1]s/p1/v1, key_env: P1_KEY, pool: free}
  p2: {base_url: %[1]s/p2/v1, key_env: P2_KEY, pool: credit}
targets:
  p0/m: {family: fam}
  p1/m: {family: fam}
  p2/m: {family: fam, price: {in: 1, out: 2}}
routes:
  default:
    chain: [p0/m, p1/m, p2/m]
`, up.URL)
	cfg, err := config.Parse("detour.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"P1_KEY": "sk-p1-key-0123456789", "P2_KEY": "sk-p2-key-0123456789"}
	f := &gatewayFixture{ledger: &ledger.Memory{}}
	gc := gateway.Config{File: cfg, Getenv: func(k string) string { return env[k] }, Ledger: f.ledger}
	if trace != nil {
		gc.Trace = trace
	}
	gw, err := gateway.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(gw)
	t.Cleanup(f.ts.Close)
	return f
}

// chat posts an OpenAI chat request for route default, with header pairs,
// and returns the response and its body.
func (f *gatewayFixture) chat(t *testing.T, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.ts.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return resp, string(b)
}

// newTracer starts a Tracer posting to rc.
func newTracer(t *testing.T, rc *receiver) *telemetry.Tracer {
	t.Helper()
	tr, err := telemetry.New(context.Background(), telemetry.Config{URL: rc.url(), Version: "v0.0.0-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) }) //nolint:errcheck // flushed in the test already
	return tr
}

// flush sends every queued span.
func flush(t *testing.T, tr *telemetry.Tracer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// tree splits spans into the one request span named name and its
// children, ordered by start (ties in the order they came: the ledger's).
func tree(t *testing.T, spans []*tracepb.Span, name string) (*tracepb.Span, []*tracepb.Span) {
	t.Helper()
	var root *tracepb.Span
	for _, s := range spans {
		if s.GetName() == name {
			if root != nil {
				t.Fatalf("two spans named %q", name)
			}
			root = s
		}
	}
	if root == nil {
		t.Fatalf("no span named %q among %d", name, len(spans))
	}
	var kids []*tracepb.Span
	for _, s := range spans {
		if s != root {
			if string(s.GetParentSpanId()) != string(root.GetSpanId()) {
				t.Errorf("span %q is not a child of the request span %q", s.GetName(), name)
			}
			if string(s.GetTraceId()) != string(root.GetTraceId()) {
				t.Errorf("span %q is in another trace", s.GetName())
			}
			kids = append(kids, s)
		}
	}
	slices.SortStableFunc(kids, func(a, b *tracepb.Span) int {
		return cmp.Compare(a.GetStartTimeUnixNano(), b.GetStartTimeUnixNano())
	})
	return root, kids
}

// wantAttrs reports every attribute of s that differs from want; a want
// of "*" asks only that the attribute be there, "-" that it be absent.
func wantAttrs(t *testing.T, s *tracepb.Span, want map[string]string) {
	t.Helper()
	got := attrs(s.GetAttributes())
	for k, w := range want {
		g, ok := got[k]
		switch {
		case w == "-" && ok:
			t.Errorf("span %q: %s = %q, want none", s.GetName(), k, g)
		case w == "-":
		case !ok:
			t.Errorf("span %q: no %s (want %q); has %v", s.GetName(), k, w, got)
		case w != "*" && g != w:
			t.Errorf("span %q: %s = %q, want %q", s.GetName(), k, g, w)
		}
	}
}

func TestTracing_FailoverThroughGateway(t *testing.T) {
	rc := newReceiver(t)
	tr := newTracer(t, rc)
	f := newGateway(t, tr, sim.Faults(sim.NoCredits))
	resp, body := f.chat(t, `{"model":"default","messages":[{"role":"user","content":"hi"}]}`, "traceparent", traceparent)
	if !strings.Contains(body, "Hello from p2/m.") {
		t.Fatalf("the answer is not p2's: %s", body)
	}
	id := resp.Header.Get("X-Request-Id")
	flush(t, tr)

	spans, _ := rc.got()
	root, kids := tree(t, spans, "chat default")
	recs := f.ledger.Records()
	if len(kids) != len(recs) || len(recs) != 3 {
		t.Fatalf("%d child spans, %d ledger lines; want one per line, 3 (skip, 402, answer)", len(kids), len(recs))
	}
	for i, r := range recs {
		if got := attrs(kids[i].GetAttributes())["detour.status"]; got != r.Status || r.RequestID != id {
			t.Errorf("child %d: detour.status %q, ledger line %q of request %s (want %s)", i, got, r.Status, r.RequestID, id)
		}
	}

	// The request span continues the client's trace, as the server.
	if got := hex.EncodeToString(root.GetTraceId()); got != clientTraceID {
		t.Errorf("trace id %s, want the client's %s", got, clientTraceID)
	}
	if got := hex.EncodeToString(root.GetParentSpanId()); got != clientSpanID {
		t.Errorf("parent span id %s, want the client's %s", got, clientSpanID)
	}
	if root.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("request span kind %v, want server", root.GetKind())
	}
	answer := attrs(kids[2].GetAttributes())
	wantAttrs(t, root, map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "default",
		"gen_ai.system": "p2", "gen_ai.provider.name": "p2", "gen_ai.response.model": "m",
		"gen_ai.usage.input_tokens": answer["gen_ai.usage.input_tokens"], "gen_ai.usage.output_tokens": answer["gen_ai.usage.output_tokens"],
		"detour.route": "default", "detour.request_id": id, "detour.target": "p2/m", "detour.attempts": "2",
		"detour.degraded": "false", "detour.stream": "false", "detour.cost_usd": "*", "error.type": "-",
	})
	if c := root.GetStatus().GetCode(); c != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("request span status %v, want unset (it answered)", c)
	}

	skip, failed, ok := kids[0], kids[1], kids[2]
	if skip.GetName() != "skip p0/m" || skip.GetKind() != tracepb.Span_SPAN_KIND_INTERNAL ||
		skip.GetEndTimeUnixNano() != skip.GetStartTimeUnixNano() {
		t.Errorf("skip span %q kind %v, %d ns long: want \"skip p0/m\", internal, of no length",
			skip.GetName(), skip.GetKind(), skip.GetEndTimeUnixNano()-skip.GetStartTimeUnixNano())
	}
	wantAttrs(t, skip, map[string]string{
		"detour.status": "skipped_no_key", "detour.action": "skip", "detour.hop": "0", "gen_ai.system": "p0",
		"detour.reason": "no key: P0_KEY is not set", "error.type": "-", "gen_ai.response.model": "-",
	})

	if failed.GetName() != "chat m" || failed.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("failed attempt span %q kind %v, want \"chat m\", client", failed.GetName(), failed.GetKind())
	}
	wantAttrs(t, failed, map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.system": "p1", "gen_ai.request.model": "m",
		"detour.kind": "wall", "detour.scope": recs[1].Scope, "detour.action": "failover", "detour.status": "http_402",
		"error.type": "http_402", "detour.hop": "1", "detour.attempt": "1", "detour.failover": "true",
		"detour.wait_seconds": "0", "detour.phase": "sent", "detour.route": "default", "detour.request_id": id,
		"detour.reason": "*", "gen_ai.response.model": "-",
	})
	if st := failed.GetStatus(); st.GetCode() != tracepb.Status_STATUS_CODE_ERROR || !strings.Contains(st.GetMessage(), "402") {
		t.Errorf("failed attempt status %v %q, want error naming the 402", st.GetCode(), st.GetMessage())
	}

	if ok.GetName() != "chat m" || ok.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("answer span %q kind %v, want \"chat m\", client", ok.GetName(), ok.GetKind())
	}
	wantAttrs(t, ok, map[string]string{
		"gen_ai.system": "p2", "gen_ai.request.model": "m", "gen_ai.response.model": "m",
		"detour.status": "ok", "detour.action": "return", "detour.hop": "2", "detour.attempt": "1",
		"detour.phase": "committed", "detour.cost_usd": "*", "error.type": "-", "detour.kind": "-",
	})
	if answer["gen_ai.usage.input_tokens"] == "0" || answer["gen_ai.usage.input_tokens"] == "" ||
		answer["gen_ai.usage.output_tokens"] == "0" || answer["gen_ai.usage.output_tokens"] == "" {
		t.Errorf("answer span usage in %q out %q, want the tokens p2 reported", answer["gen_ai.usage.input_tokens"],
			answer["gen_ai.usage.output_tokens"])
	}

	// Each attempt lies within the request, after the one before it.
	var last uint64
	for i, k := range kids {
		if k.GetStartTimeUnixNano() < root.GetStartTimeUnixNano() || k.GetEndTimeUnixNano() > root.GetEndTimeUnixNano() {
			t.Errorf("child %d [%d, %d] lies outside the request [%d, %d]", i, k.GetStartTimeUnixNano(), k.GetEndTimeUnixNano(),
				root.GetStartTimeUnixNano(), root.GetEndTimeUnixNano())
		}
		if k.GetStartTimeUnixNano() < last {
			t.Errorf("child %d starts before the one before it ended", i)
		}
		last = k.GetEndTimeUnixNano()
	}
	rc.mu.Lock()
	res := rc.resource
	rc.mu.Unlock()
	if res["service.name"] != "detour" || res["service.version"] != "v0.0.0-test" {
		t.Errorf("resource %v, want service.name detour, service.version v0.0.0-test", res)
	}
}

func TestTracing_StreamSpanEndsWithTheStream(t *testing.T) {
	rc := newReceiver(t)
	tr := newTracer(t, rc)
	f := newGateway(t, tr, sim.Faults(sim.Unavailable, sim.Unavailable))
	_, body := f.chat(t, `{"model":"default","stream":true,"stream_options":{"include_usage":true},`+
		`"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(body, "[DONE]") {
		t.Fatalf("the stream did not end: %s", body)
	}
	flush(t, tr)
	spans, _ := rc.got()
	root, kids := tree(t, spans, "chat default")
	recs := f.ledger.Records()
	if len(kids) != len(recs) {
		t.Fatalf("%d child spans for %d ledger lines", len(kids), len(recs))
	}
	if len(root.GetParentSpanId()) != 0 || root.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("request span parent %x kind %v: want a root (no traceparent came), server", root.GetParentSpanId(), root.GetKind())
	}
	// p1's 503s are retried, then the walk moves on: a transient failure
	// with its wait, then the stream's own attempt, recorded when it ended.
	wantAttrs(t, kids[1], map[string]string{"detour.kind": "transient", "detour.action": "retry", "detour.status": "http_503",
		"error.type": "http_503", "detour.wait_seconds": "*"})
	last := kids[len(kids)-1]
	wantAttrs(t, last, map[string]string{"detour.status": "ok", "gen_ai.system": "p2", "gen_ai.response.model": "m",
		"gen_ai.usage.output_tokens": "*"})
	wantAttrs(t, root, map[string]string{"detour.stream": "true", "gen_ai.response.model": "m", "gen_ai.system": "p2",
		"gen_ai.usage.output_tokens": attrs(last.GetAttributes())["gen_ai.usage.output_tokens"]})
	if root.GetEndTimeUnixNano() < last.GetEndTimeUnixNano() {
		t.Errorf("the request span ended before its stream did")
	}
	if st := root.GetStatus(); st.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("request span status %v %q, want unset: the stream ended whole", st.GetCode(), st.GetMessage())
	}
}

func TestTracing_UnsampledClientTraceExportsNothing(t *testing.T) {
	rc := newReceiver(t)
	tr := newTracer(t, rc)
	f := newGateway(t, tr, sim.Faults(sim.NoCredits))
	f.chat(t, `{"model":"default","messages":[{"role":"user","content":"hi"}]}`,
		"traceparent", "00-"+clientTraceID+"-"+clientSpanID+"-00")
	flush(t, tr)
	if spans, _ := rc.got(); len(spans) != 0 {
		t.Errorf("%d spans exported for a client trace that is not sampled", len(spans))
	}
}

func TestTracing_OffExportsNothing(t *testing.T) {
	rc := newReceiver(t)
	// Were anything to read the standard variables behind detour's back,
	// it would post here.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.srv.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	f := newGateway(t, nil, sim.Faults(sim.NoCredits))
	resp, _ := f.chat(t, `{"model":"default","messages":[{"role":"user","content":"hi"}]}`, "traceparent", traceparent)
	if tp := resp.Header.Get("traceparent"); tp != "" {
		t.Errorf("response traceparent %q with tracing off", tp)
	}
	time.Sleep(100 * time.Millisecond) // room for a stray background export
	if spans, posts := rc.got(); posts != 0 || len(spans) != 0 {
		t.Errorf("%d posts, %d spans with tracing off", posts, len(spans))
	}
}

func TestNew_NeedsURL(t *testing.T) {
	if _, err := telemetry.New(context.Background(), telemetry.Config{}); err == nil {
		t.Error("New with no URL: no error")
	}
}
