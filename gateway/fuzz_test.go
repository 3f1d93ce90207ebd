package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	sim "github.com/detourhq/detour/simulate"
)

// memGateway is a keyless gateway whose route default goes to a fake
// provider in memory (no sockets), for table and fuzz tests of the parsers.
func memGateway(t testing.TB) *gateway.Server {
	t.Helper()
	srv, err := sim.NewServer(sim.Provider{Name: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cfg, err := config.Parse("detour.yaml", []byte(`providers:
  p1: {base_url: `+sim.MemoryURL+`/p1/v1, key_env: ""}
routes:
  default: {chain: [p1/m], budget: {base_backoff: 1ms, max_backoff: 2ms, max_attempts: 1}}
`))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{File: cfg, HTTPClient: &http.Client{Transport: srv.Transport()}})
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

// checkAnswer checks that a response to any body is an answer or an error
// in the surface's shape, with a status that fits.
func checkAnswer(t *testing.T, anthropicShape bool, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	switch rec.Code {
	case 200:
		return
	case 400, 404:
	default:
		t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q for %q", ct, body)
	}
	var v struct {
		Type  string                     `json:"type"`
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("error body %q for %q: %v", rec.Body, body, err)
	}
	keys := []string{"message", "type", "param", "code"}
	if anthropicShape {
		keys = keys[:2]
		if v.Type != "error" {
			t.Fatalf("anthropic error body %q lacks type: error", rec.Body)
		}
	}
	for _, k := range keys {
		if _, ok := v.Error[k]; !ok {
			t.Fatalf("error body %q for %q lacks %q", rec.Body, body, k)
		}
	}
	if rec.Code == 400 && !strings.Contains(string(v.Error["type"]), "invalid_request_error") {
		t.Fatalf("400 of type %s for %q", v.Error["type"], body)
	}
}

func serveBody(gw http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
	gw.ServeHTTP(rec, req)
	return rec
}

var openAISeeds = []string{
	chatBody,
	`{"model":"default","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"default","messages":[{"role":"system","content":[{"type":"text","text":"x"}]},{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto"}`,
	`{"model":"default","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"ok"}]}`,
	`{"model":"default","messages":[{"role":"user","content":"hi"}],"stop":"x","max_tokens":5,"n":1}`,
	`{"models":["default","p1/m"],"messages":[{"role":"user","content":"hi"}]}`,
	// Shapes detour's canonical form does not hold: they reach a target of
	// the client's dialect raw (needs), so they are no 400 of detour's.
	`{"model":"default","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`,
	`{"model":"default","messages":[{"role":"user","content":"hi"}],"n":2}`,
}

var openAIBad = []string{
	``, `null`, `[]`, `"x"`, `{`, `{"model":1}`, `{"model":"default"}`, `{"model":"default","messages":[]}`,
	`{"model":"default","messages":"hi"}`, `{"model":"default","messages":[{"content":"hi"}]}`,
	`{"model":"default","messages":[{"role":"wizard","content":"hi"}]}`,
	`{"model":"default","messages":[{"role":"user","content":7}]}`,
	`{"model":"default","messages":[{"role":"tool","content":"x"}]}`,
	`{"model":"default","messages":[{"role":"user","content":"hi"}],"max_tokens":0}`,
	`{"model":"default","messages":[{"role":"user","content":"hi"}],"stop":5}`,
	`{"model":"default","messages":[{"role":"user","content":"hi"}],"stream":"yes"}`,
	`{"model":"default","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`,
	`{"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"a\u0000b","messages":[{"role":"user","content":"hi"}]}`,
}

var anthropicSeeds = []string{
	messagesBody,
	`{"model":"default","max_tokens":9,"stream":true,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
	`{"model":"default","max_tokens":9,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"},"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"default","max_tokens":9,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}],"is_error":true}]}]}`,
}

var anthropicBad = []string{
	``, `[]`, `{}`, `{"model":"default","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"default","max_tokens":-1,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"default","max_tokens":5,"messages":[]}`,
	`{"model":"default","max_tokens":5,"messages":[{"role":"robot","content":"hi"}]}`,
	`{"model":"default","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]}`,
	`{"model":"default","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"t","name":"f"}]}]}`,
	`{"model":"default","max_tokens":5,"messages":[{"role":"user","content":{}}]}`,
	`{"model":"default","max_tokens":5,"system":7,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"default","max_tokens":5,"tools":[{"type":"web_search_20250305","name":"w"}],"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"default","max_tokens":5,"tool_choice":{"type":"sometimes"},"messages":[{"role":"user","content":"hi"}]}`,
}

func TestParsers_BadRequestsGet400InTheirShape(t *testing.T) {
	gw := memGateway(t)
	for _, tc := range []struct {
		path      string
		anthropic bool
		good, bad []string
	}{
		{"/v1/chat/completions", false, openAISeeds, openAIBad},
		{"/v1/messages", true, anthropicSeeds, anthropicBad},
	} {
		for _, body := range tc.good {
			if rec := serveBody(gw, tc.path, []byte(body)); rec.Code != 200 {
				t.Errorf("%s %s: %d %s", tc.path, body, rec.Code, rec.Body)
			}
		}
		for _, body := range tc.bad {
			rec := serveBody(gw, tc.path, []byte(body))
			if rec.Code != 400 {
				t.Errorf("%s %s: %d, want 400: %s", tc.path, body, rec.Code, rec.Body)
				continue
			}
			checkAnswer(t, tc.anthropic, []byte(body), rec)
		}
	}
}

func FuzzOpenAIRequest(f *testing.F) {
	for _, s := range append(openAISeeds, openAIBad...) {
		f.Add([]byte(s))
	}
	gw := memGateway(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, false, body, serveBody(gw, "/v1/chat/completions", body))
	})
}

func FuzzAnthropicRequest(f *testing.F) {
	for _, s := range append(anthropicSeeds, anthropicBad...) {
		f.Add([]byte(s))
	}
	gw := memGateway(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, true, body, serveBody(gw, "/v1/messages", body))
	})
}
