package router_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// ridServer is a real OpenAI-compatible HTTP server that answers every
// request with status (200 as JSON or, when the request asks for one, as
// a stream) and the headers given.
func ridServer(t *testing.T, status int, header http.Header, errBody string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		for k, vs := range header {
			w.Header()[k] = vs
		}
		switch {
		case status != http.StatusOK:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, errBody)
		case req.Stream:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"chatcmpl-1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}`+"\n\n")
			io.WriteString(w, `data: {"id":"chatcmpl-1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`+"\n\n")
			io.WriteString(w, "data: [DONE]\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"chatcmpl-1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// ridRoute is a one-target route to base, with the given dialect, writing
// to a memory ledger; and the router and attempts it reports.
func ridRoute(t *testing.T, d config.Dialect, base string) (*router.Router, *router.Route, *ledger.Memory, *[]router.Attempt) {
	t.Helper()
	mem := &ledger.Memory{}
	var attempts []router.Attempt
	r := &router.Router{Ledger: mem, Rand: func() float64 { return 0 },
		OnAttempt: func(a router.Attempt) { attempts = append(attempts, a) }}
	route := &router.Route{Name: "rid", Chain: []router.Target{{Provider: "p", Model: "m", Family: "f", Pool: "payg",
		Dialect: string(d), KeyEnv: "TEST_P_KEY",
		Client: config.NewClient(d, base, testKey, &http.Client{}, nil)}}}
	return r, route, mem, &attempts
}

// Each provider's request-id header reaches the attempt's ledger line and
// its Attempt, on an answer, a 429 and a streamed answer; the preferred
// one wins when several come.
func TestProviderRequestID_Headers(t *testing.T) {
	headers := []struct {
		name   string
		header http.Header
		want   string
	}{
		{"openai x-request-id", http.Header{"X-Request-Id": {"req_8f3a2b"}}, "req_8f3a2b"},
		{"anthropic request-id", http.Header{"Request-Id": {"req_011CUB2XUHWkFnQzxcKBbjpF"}}, "req_011CUB2XUHWkFnQzxcKBbjpF"},
		{"cloudflare cf-ray", http.Header{"Cf-Ray": {"8e1f0c2b5d6a7e3f-AMS"}}, "8e1f0c2b5d6a7e3f-AMS"},
		{"bedrock x-amzn-requestid", http.Header{"X-Amzn-Requestid": {"5c0a4f1e-6b1d-4c55-9a8e-1f2e3d4c5b6a"}}, "5c0a4f1e-6b1d-4c55-9a8e-1f2e3d4c5b6a"},
		{"x-request-id before cf-ray", http.Header{"Cf-Ray": {"ray-1"}, "X-Request-Id": {"req_first"}}, "req_first"},
		{"request-id before x-amzn-requestid", http.Header{"X-Amzn-Requestid": {"amzn-1"}, "Request-Id": {"req_an"}}, "req_an"},
		{"none", http.Header{}, ""},
	}
	for _, hc := range headers {
		for _, mode := range []string{"200", "429", "stream"} {
			t.Run(hc.name+"/"+mode, func(t *testing.T) {
				status := http.StatusOK
				if mode == "429" {
					status = http.StatusTooManyRequests
				}
				base := ridServer(t, status, hc.header,
					`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
				r, route, mem, attempts := ridRoute(t, config.OpenAI, base)
				ctx := context.Background()
				var err error
				if mode == "stream" {
					var sr *router.StreamResult
					if sr, err = r.Stream(ctx, route, prompt("hi"), router.Options{}); err == nil {
						_, err = llm.Assemble(sr.Stream)
					}
				} else {
					_, err = r.Complete(ctx, route, prompt("hi"), router.Options{})
				}
				if (err == nil) != (mode != "429") {
					t.Fatalf("err = %v", err)
				}
				recs := mem.Records()
				if len(recs) == 0 {
					t.Fatal("no ledger line")
				}
				for _, rec := range recs {
					if rec.ProviderRequestID != hc.want {
						t.Errorf("%s line: upstream_request_id %q, want %q", rec.Status, rec.ProviderRequestID, hc.want)
					}
					line, _ := json.Marshal(rec)
					if has := strings.Contains(string(line), `"upstream_request_id"`); has != (hc.want != "") {
						t.Errorf("line %s: upstream_request_id written = %v, want %v", line, has, hc.want != "")
					}
				}
				for _, a := range *attempts {
					if a.ProviderRequestID != hc.want {
						t.Errorf("Attempt %s: ProviderRequestID %q, want %q", a.Status, a.ProviderRequestID, hc.want)
					}
				}
			})
		}
	}
}

// An id only in the error body (Anthropic's and Groq's request_id) is
// kept; one that comes in a header wins over it. Outside input: control
// characters and bytes beyond printable ASCII are left out, and a long id
// is cut to 128 bytes.
func TestProviderRequestID_BodyCapAndControl(t *testing.T) {
	anthropicBody := `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"},"request_id":"req_011CXF1SZ3S3oXChsdxhoUwV"}`
	long := strings.Repeat("a", 300)
	cases := []struct {
		name    string
		dialect config.Dialect
		header  http.Header
		body    string
		want    string
	}{
		{"anthropic body only", config.Anthropic, nil, anthropicBody, "req_011CXF1SZ3S3oXChsdxhoUwV"},
		{"anthropic header wins", config.Anthropic, http.Header{"Request-Id": {"req_header"}}, anthropicBody, "req_header"},
		{"groq body", config.OpenAI, nil,
			`{"request_id":"req_01jrxjvtw2etc9agst0q7qsy6r","error":{"message":"Rate limit reached","type":"tokens","code":"rate_limit_exceeded"}}`,
			"req_01jrxjvtw2etc9agst0q7qsy6r"},
		{"control characters in the body", config.Anthropic, nil,
			`{"type":"error","error":{"type":"rate_limit_error","message":"x"},"request_id":"req_\u0000a\u001b[31mb\u0007\u00e9c\n"}`, "req_a[31mbc"},
		{"long header cut", config.OpenAI, http.Header{"X-Request-Id": {long}}, `{}`, long[:128]},
		{"tab and high bytes in a header", config.OpenAI, http.Header{"X-Request-Id": {"req\t1\xc3\xa92"}}, `{}`, "req12"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := ridServer(t, http.StatusTooManyRequests, c.header, c.body)
			r, route, mem, attempts := ridRoute(t, c.dialect, base)
			if _, err := r.Complete(context.Background(), route, prompt("hi"), router.Options{}); err == nil {
				t.Fatal("a 429 answered")
			}
			recs := mem.Records()
			if len(recs) == 0 {
				t.Fatal("no ledger line")
			}
			for _, rec := range recs {
				if rec.ProviderRequestID != c.want {
					t.Errorf("%s line: upstream_request_id %q, want %q", rec.Status, rec.ProviderRequestID, c.want)
				}
			}
			for _, a := range *attempts {
				if a.ProviderRequestID != c.want {
					t.Errorf("Attempt %s: ProviderRequestID %q, want %q", a.Status, a.ProviderRequestID, c.want)
				}
			}
		})
	}
}

// Against the simulator, which sends each dialect's real id: OpenAI's
// x-request-id, Anthropic's request-id, and Gemini's answer's responseId
// (Gemini sends no request-id header, and its error bodies name none: its
// failures have no id to record).
func TestProviderRequestID_Simulator(t *testing.T) {
	for _, d := range []simulate.Dialect{simulate.DialectOpenAI, simulate.DialectAnthropic, simulate.DialectGemini} {
		t.Run(string(d), func(t *testing.T) {
			h, route := newHarness(t, spec{provider: "a", model: "m", family: "f", dialect: d},
				spec{provider: "b", model: "m", family: "f", dialect: d})
			for i := range route.Chain {
				route.Chain[i].Dialect = string(d) // as config sets it
			}
			h.script("a", "m", simulate.Fault{Kind: simulate.RateLimit})
			if _, err := h.router.Complete(context.Background(), route, prompt("hi"), router.Options{}); err != nil {
				t.Fatal(err)
			}
			sr, err := h.router.Stream(context.Background(), route, prompt("hi"), router.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := llm.Assemble(sr.Stream); err != nil {
				t.Fatal(err)
			}
			for _, rec := range h.ledger.Records() {
				t.Logf("%s %s %s upstream_request_id=%q", rec.Provider, rec.Status, rec.Kind, rec.ProviderRequestID)
				failed := rec.Status != ledger.StatusOK
				if rec.ProviderRequestID == "" && !(d == simulate.DialectGemini && failed) {
					t.Errorf("%s %s: no upstream_request_id", rec.Provider, rec.Status)
				}
			}
		})
	}
}

// Embeddings too: the simulator's x-request-id reaches the failed and the
// answering attempt's lines.
func TestProviderRequestID_Embed(t *testing.T) {
	h, route := newHarness(t, spec{provider: "a", model: "emb", family: "emb"},
		spec{provider: "b", model: "emb", family: "emb"})
	h.script("a", "emb", simulate.Fault{Kind: simulate.DailyQuota})
	if _, err := h.router.Embed(context.Background(), route, &llm.EmbedRequest{Input: []string{"x"}}, router.Options{}); err != nil {
		t.Fatal(err)
	}
	recs := h.ledger.Records()
	if len(recs) != 2 {
		t.Fatalf("rows %+v", h.rows())
	}
	for _, rec := range recs {
		if !strings.HasPrefix(rec.ProviderRequestID, "req_") {
			t.Errorf("%s/%s %s: upstream_request_id %q", rec.Provider, rec.Model, rec.Status, rec.ProviderRequestID)
		}
	}
}
