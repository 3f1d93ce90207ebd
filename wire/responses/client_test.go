package responses_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
	"github.com/detourhq/detour/wire/responses"
)

const testKey = "sk-test-responses-key-0123456789"

func ctx(t *testing.T) context.Context { return t.Context() }

// newServer is an httptest server of h, closed when the test ends.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// recorder keeps the last request a server got.
type recorder struct {
	mu     sync.Mutex
	method string
	path   string
	header http.Header
	body   []byte
}

func (r *recorder) keep(req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.method, r.path, r.header, r.body = req.Method, req.URL.Path, req.Header.Clone(), b
}

func (r *recorder) fields(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("request body %s: %v", r.body, err)
	}
	return m
}

// Complete posts the encoded request to {base}/responses with the key,
// and reads the recorded answer, its provider request id from the header.
func TestClient_CompleteSendsOneRequest(t *testing.T) {
	var rec recorder
	body := readBody(t, "gpt5mini_text.json")
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.keep(r)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_5591e461b03756aa10a1c2a517bbbd43")
		w.Write(body)
	})
	c := &responses.Client{BaseURL: srv.URL + "/v1/", APIKey: testKey, Header: http.Header{"X-Title": {"detour"}}}
	resp, err := c.Complete(ctx(t), &llm.Request{Model: "gpt-5-mini", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hello."}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Hello" || resp.ProviderRequestID != "req_5591e461b03756aa10a1c2a517bbbd43" || resp.Usage.ReasoningTokens != 64 {
		t.Errorf("response %+v", resp)
	}
	if rec.method != http.MethodPost || rec.path != "/v1/responses" || rec.header.Get("Authorization") != "Bearer "+testKey ||
		rec.header.Get("X-Title") != "detour" {
		t.Errorf("request %s %s %v", rec.method, rec.path, rec.header)
	}
	f := rec.fields(t)
	if string(f["store"]) != "false" || string(f["model"]) != `"gpt-5-mini"` || f["stream"] != nil {
		t.Errorf("body %s", rec.body)
	}
}

// Store: true asks the provider to keep the response.
func TestClient_StoreIsTheClientsChoice(t *testing.T) {
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.keep(r)
		w.Header().Set("Content-Type", "application/json")
		w.Write(readBody(t, "gpt5mini_text.json"))
	})
	c := &responses.Client{BaseURL: srv.URL, Store: true}
	if _, err := c.Complete(ctx(t), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if f := rec.fields(t); string(f["store"]) != "true" {
		t.Errorf("store = %s, want true", f["store"])
	}
}

// A request sent raw goes as its client wrote it: every field, unknown
// ones and reasoning items included, with only model and stream set, and
// store: false added when the client said nothing of store.
func TestClient_RawBodyPassesEveryField(t *testing.T) {
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.keep(r)
		w.Header().Set("Content-Type", "application/json")
		w.Write(readBody(t, "gpt5mini_text.json"))
	})
	c := &responses.Client{BaseURL: srv.URL, APIKey: testKey}
	for _, tc := range []struct {
		name, body, store string
	}{
		{"no store", `{"model":"route","models":["a"],"detour":{"no_fallback":true},"input":[{"type":"reasoning","id":"rs_1","encrypted_content":"gAAA","summary":[]},{"role":"user","content":"hi"}],"include":["reasoning.encrypted_content"],"service_tier":"flex","stream":true}`, "false"},
		{"store true", `{"model":"route","input":"hi","store":true}`, "true"},
		{"store null", `{"model":"route","input":"hi","store":null}`, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.Complete(ctx(t), &llm.Request{Model: "gpt-5-mini", Raw: &llm.Raw{Dialect: responses.Dialect, Body: []byte(tc.body)}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Raw == nil || resp.Raw.Dialect != responses.Dialect || string(resp.Raw.Body) != string(readBody(t, "gpt5mini_text.json")) {
				t.Errorf("the answer keeps no raw body: %+v", resp.Raw)
			}
			got := rec.fields(t)
			var want map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.body), &want); err != nil {
				t.Fatal(err)
			}
			delete(want, "models")
			delete(want, "detour")
			delete(want, "stream")
			want["model"] = json.RawMessage(`"gpt-5-mini"`)
			want["store"] = json.RawMessage(tc.store)
			if len(got) != len(want) {
				t.Errorf("body %s, want the fields of %s", rec.body, tc.body)
			}
			for k, v := range want {
				if string(got[k]) != string(v) {
					t.Errorf("%s = %s, want %s", k, got[k], v)
				}
			}
		})
	}
}

// Probe lists the models; an error status is the provider's error, its
// key never in it.
func TestClient_ProbeAndKeylessErrors(t *testing.T) {
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.keep(r)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/models" {
			w.Write([]byte(`{"object":"list","data":[]}`))
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + testKey + `.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
	})
	c := &responses.Client{BaseURL: srv.URL, APIKey: testKey}
	if err := c.Probe(ctx(t), "m"); err != nil || rec.method != http.MethodGet || rec.path != "/models" {
		t.Fatalf("Probe = %v (%s %s)", err, rec.method, rec.path)
	}
	_, err := c.Complete(ctx(t), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	wiretest.WantKeyless(t, err, testKey)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 401 || pe.Code != "invalid_api_key" || pe.Dialect != responses.Dialect {
		t.Errorf("err = %#v", err)
	}
	_, err = c.Stream(ctx(t), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	wiretest.WantKeyless(t, err, testKey)
}

// Stream asks for a stream and decodes it; its provider request id comes
// from the header.
func TestClient_Stream(t *testing.T) {
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.keep(r)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("X-Request-Id", "req_3a873e8f024d938c581f16e639ced89b")
		w.Write(wiretest.Fixture(t, "gpt41_text.sse"))
	})
	c := &responses.Client{BaseURL: srv.URL}
	st, err := c.Stream(ctx(t), &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hello."}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := llm.Assemble(st)
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Content != "Hello!" || r.ProviderRequestID != "req_3a873e8f024d938c581f16e639ced89b" {
		t.Errorf("answer %+v", r)
	}
	if f := rec.fields(t); string(f["stream"]) != "true" || string(f["store"]) != "false" || rec.header.Get("Authorization") != "" {
		t.Errorf("request %s %v", rec.body, rec.header)
	}
}

// What a Responses target carries of another dialect's request, and what
// it cannot have (stop sequences).
func TestClient_CarriesAndFit(t *testing.T) {
	c := &responses.Client{}
	wiretest.WantCarries(t, c, map[string]bool{
		"response_format": true, "reasoning_effort": true, "thinking": true, "strict": true,
		llm.NeedImage: true, llm.NeedImageURL: true, llm.NeedDocument: true, llm.NeedDocumentURL: true,
		llm.NeedDocumentTitle: true, llm.NeedAudio: false, "n": false, "logprobs": false, "cache_control": false,
	})
	missing, dropped := c.Fit(&llm.Request{Stop: []string{"END"}})
	if len(missing) != 0 || len(dropped) != 1 || dropped[0] != "stop" {
		t.Errorf("Fit = %v, %v; want stop dropped", missing, dropped)
	}
	if m, d := c.Fit(&llm.Request{}); m != nil || d != nil {
		t.Errorf("Fit of a plain request = %v, %v", m, d)
	}
}
