package gateway_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// gmFixture is a gateway in front of fake providers on loopback: g1
// (Gemini, models gemini-a and gemini-b), oa (OpenAI-compatible) and an
// (Anthropic), with the routes
//
//	chat   [g1/gemini-a, oa/gpt-x]
//	same   [g1/gemini-a, g1/gemini-b]
//	cross  [g1/gemini-a, an/claude-x]
//
// and one client key. It keeps every body the gateway and the providers
// received, by path.
type gmFixture struct {
	t      *testing.T
	ts     *httptest.Server
	ledger *ledger.Memory

	mu     sync.Mutex
	bodies map[string][][]byte // path -> bodies, in order
}

func newGeminiFixture(t *testing.T, g1 map[string][]sim.Fault, oa []sim.Fault) *gmFixture {
	t.Helper()
	f := &gmFixture{t: t, ledger: &ledger.Memory{}, bodies: map[string][][]byte{}}
	srv, err := sim.NewServer(sim.Provider{Name: "g1", Dialect: sim.DialectGemini, ModelScripts: g1},
		sim.Provider{Name: "oa", Script: oa}, sim.Provider{Name: "an", Dialect: sim.DialectAnthropic})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(f.keep(srv))
	t.Cleanup(func() { up.Close(); srv.Close() })
	cfg, err := config.Parse("detour.yaml", []byte(fmt.Sprintf(`providers:
  g1: {dialect: gemini, base_url: %[1]s/g1/v1beta, key_env: G1_KEY, pool: free}
  oa: {base_url: %[1]s/oa/v1, key_env: OA_KEY, pool: credit}
  an: {dialect: anthropic, base_url: %[1]s/an, key_env: AN_KEY, pool: prepaid}
routes:
  chat: {chain: [g1/gemini-a, oa/gpt-x], budget: {base_backoff: 1ms, max_backoff: 5ms}}
  same: {chain: [g1/gemini-a, g1/gemini-b], budget: {base_backoff: 1ms, max_backoff: 5ms}}
  cross: {chain: [g1/gemini-a, an/claude-x], budget: {base_backoff: 1ms, max_backoff: 5ms}}
gateway:
  keys:
    app: {key_env: DETOUR_TEST_KEY}
`, up.URL)))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"G1_KEY": upstreamKey + "g", "OA_KEY": upstreamKey + "o", "AN_KEY": upstreamKey + "a",
		"DETOUR_TEST_KEY": clientKey}
	gw, err := gateway.New(gateway.Config{File: cfg, Getenv: func(k string) string { return env[k] }, Ledger: f.ledger})
	if err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(f.keep(gw))
	t.Cleanup(f.ts.Close)
	return f
}

// keep records each request body h receives under its path.
func (f *gmFixture) keep(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies[r.URL.Path] = append(f.bodies[r.URL.Path], b)
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	})
}

// body returns the last body received at path.
func (f *gmFixture) body(path string) []byte {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	bs := f.bodies[path]
	if len(bs) == 0 {
		f.t.Fatalf("nothing reached %s; paths: %v", path, keys(f.bodies))
	}
	return bs[len(bs)-1]
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// client returns an official Gen AI client for the gateway, with key.
func (f *gmFixture) client(key string) *genai.Client {
	f.t.Helper()
	c, err := genai.NewClient(ctx(f.t), &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: f.ts.URL, APIVersion: "v1beta"}})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// attempts returns the ledger's records of the request id.
func (f *gmFixture) attempts(id string) []ledger.Record {
	var out []ledger.Record
	for _, r := range f.ledger.Records() {
		if r.RequestID == id {
			out = append(out, r)
		}
	}
	return out
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(t *testing.T, a, b []byte) string {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return cmp.Diff(va, vb)
}

// The official Go SDK asks a route for an answer: it gets the text of the
// Gemini target, the model that answered as modelVersion, and the target
// got the SDK's body byte for byte (JSON-equal), model aside (in the URL).
func TestGeminiSDK_GenerateContentPassesTheBodyThrough(t *testing.T) {
	f := newGeminiFixture(t, nil, nil)
	temp := float32(0.2)
	resp, err := f.client(clientKey).Models.GenerateContent(ctx(t), "chat", genai.Text("Say hi"),
		&genai.GenerateContentConfig{Temperature: &temp, TopK: genai.Ptr[float32](40), SafetySettings: []*genai.SafetySetting{
			{Category: genai.HarmCategoryHarassment, Threshold: genai.HarmBlockThresholdBlockNone}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Text(); !strings.HasPrefix(got, "Hello") {
		t.Errorf("text %q", got)
	}
	if resp.ModelVersion != "gemini-a" {
		t.Errorf("modelVersion %q, want gemini-a", resp.ModelVersion)
	}
	h := resp.SDKHTTPResponse.Headers
	if h.Get("X-Detour-Route") != "chat" || h.Get("X-Detour-Provider") != "g1" || h.Get("X-Detour-Model") != "gemini-a" ||
		h.Get("X-Detour-Degraded") != "false" {
		t.Errorf("headers %v", h)
	}
	sent := f.body("/v1beta/models/chat:generateContent")
	if d := jsonEqual(t, sent, f.body("/g1/v1beta/models/gemini-a:generateContent")); d != "" {
		t.Errorf("the Gemini target got another body (-client +upstream):\n%s", d)
	}
}

// The stream comes as Gemini's alt=sse chunks: joined, their text is the
// answer the same request gets unstreamed.
func TestGeminiSDK_StreamJoinsToTheAnswer(t *testing.T) {
	for _, route := range []string{"chat", "g1/gemini-b"} {
		t.Run(route, func(t *testing.T) {
			f := newGeminiFixture(t, nil, nil)
			c := f.client(clientKey)
			whole, err := c.Models.GenerateContent(ctx(t), route, genai.Text("Tell me a story"), nil)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			n := 0
			for chunk, err := range c.Models.GenerateContentStream(ctx(t), route, genai.Text("Tell me a story"), nil) {
				if err != nil {
					t.Fatal(err)
				}
				text.WriteString(chunk.Text())
				n++
			}
			if text.String() != whole.Text() || n < 2 {
				t.Errorf("stream %q in %d chunks, answer %q", text.String(), n, whole.Text())
			}
		})
	}
}

// A wrong key is the SDK's APIError 401 UNAUTHENTICATED, and nothing is
// sent upstream.
func TestGeminiSDK_WrongKeyIs401(t *testing.T) {
	f := newGeminiFixture(t, nil, nil)
	_, err := f.client("not-the-key").Models.GenerateContent(ctx(t), "chat", genai.Text("hi"), nil)
	var ae genai.APIError
	if !errors.As(err, &ae) || ae.Code != http.StatusUnauthorized || ae.Status != "UNAUTHENTICATED" {
		t.Fatalf("err %v, want an APIError 401 UNAUTHENTICATED", err)
	}
	if len(f.ledger.Records()) != 0 {
		t.Errorf("ledger %+v", f.ledger.Records())
	}
}

// A daily quota on the first target is a wall: the request moves on at
// once and answers; the ledger has one line per attempt and the headers
// say who answered, for a same-provider fallback and for another
// dialect's target (translated both ways).
func TestGeminiSDK_WallFailsOver(t *testing.T) {
	for _, tc := range []struct {
		route, provider, model string
		fault                  sim.Kind
	}{
		{"chat", "oa", "gpt-x", sim.DailyQuota},
		{"cross", "an", "claude-x", sim.DailyQuota},
		{"same", "g1", "gemini-b", sim.ModelNotFound}, // a wall of one model: its provider's others serve
	} {
		t.Run(tc.route, func(t *testing.T) {
			f := newGeminiFixture(t, map[string][]sim.Fault{"gemini-a": {{Kind: tc.fault}, {Kind: tc.fault}}}, nil)
			c := f.client(clientKey)
			resp, err := c.Models.GenerateContent(ctx(t), tc.route, genai.Text("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := "Hello from " + tc.provider + "/" + tc.model
			if !strings.HasPrefix(resp.Text(), want) || resp.ModelVersion == "" || !strings.Contains(resp.ModelVersion, tc.model) {
				t.Errorf("answer %q by %q, want %q", resp.Text(), resp.ModelVersion, want)
			}
			h := resp.SDKHTTPResponse.Headers
			if h.Get("X-Detour-Provider") != tc.provider || h.Get("X-Detour-Model") != tc.model || h.Get("X-Detour-Attempts") != "2" {
				t.Errorf("headers %v", h)
			}
			recs := f.attempts(h.Get("X-Request-Id"))
			if len(recs) != 2 || recs[0].Model != "gemini-a" || recs[0].Kind != "wall" || recs[1].Model != tc.model ||
				recs[1].Status != "ok" {
				t.Errorf("ledger %+v", recs)
			}
			// The stream fails over the same way, before its first byte.
			var text strings.Builder
			for chunk, err := range c.Models.GenerateContentStream(ctx(t), tc.route, genai.Text("hi"), nil) {
				if err != nil {
					t.Fatal(err)
				}
				text.WriteString(chunk.Text())
			}
			if !strings.HasPrefix(text.String(), want) {
				t.Errorf("stream %q", text.String())
			}
		})
	}
}

// A stream cut after its first chunk ends with an error the SDK's iterator
// returns, never with a clean end or another model's text: from a Gemini
// target (its events passed through) and from another dialect's.
func TestGeminiSDK_MidStreamFailureIsAnError(t *testing.T) {
	for _, route := range []string{"same", "oa/gpt-x"} {
		t.Run(route, func(t *testing.T) {
			// Gemini's first event carries text; OpenAI's first is the role.
			f := newGeminiFixture(t, map[string][]sim.Fault{"gemini-a": {{Kind: sim.StreamCut, Chunks: 1}}},
				[]sim.Fault{{Kind: sim.StreamCut, Chunks: 2}})
			var text strings.Builder
			var got error
			for chunk, err := range f.client(clientKey).Models.GenerateContentStream(ctx(t), route, genai.Text("Tell me a story"), nil) {
				if err != nil {
					got = err
					break
				}
				text.WriteString(chunk.Text())
			}
			var ae genai.APIError
			if !errors.As(got, &ae) || ae.Code < 500 || !strings.Contains(ae.Message, "incomplete") {
				t.Fatalf("err %v after %q, want an APIError saying the answer is incomplete", got, text.String())
			}
			if text.Len() == 0 || strings.Contains(text.String(), "gemini-b") {
				t.Errorf("text before the error %q", text.String())
			}
		})
	}
}

// Function calling through another dialect: the declaration reaches the
// OpenAI target as a function tool, the call comes back as a functionCall
// part, and the SDK's functionResponse goes back paired with it.
func TestGeminiSDK_FunctionCallingAcrossDialects(t *testing.T) {
	f := newGeminiFixture(t, nil, nil)
	c := f.client(clientKey)
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "get_weather", Description: "Weather of a city",
		Parameters: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{
			"city": {Type: genai.TypeString}}, Required: []string{"city"}}}}}}}
	user := genai.NewContentFromText("Weather in Paris?", genai.RoleUser)
	resp, err := c.Models.GenerateContent(ctx(t), "oa/gpt-x", []*genai.Content{user}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.FunctionCalls()
	if len(calls) != 1 || calls[0].Name != "get_weather" {
		t.Fatalf("calls %+v in %+v", calls, resp.Candidates[0].Content)
	}
	var up struct {
		Tools []struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(f.body("/oa/v1/chat/completions"), &up); err != nil || len(up.Tools) != 1 ||
		jsonEqual(t, up.Tools[0].Function.Parameters, []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)) != "" {
		t.Fatalf("upstream tools %s (%v)", f.body("/oa/v1/chat/completions"), err)
	}
	model := resp.Candidates[0].Content
	result := genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionResponse("get_weather",
		map[string]any{"output": "sunny"})}, genai.RoleUser)
	if _, err := c.Models.GenerateContent(ctx(t), "oa/gpt-x", []*genai.Content{user, model, result}, cfg); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(f.body("/oa/v1/chat/completions"), &up); err != nil || len(up.Messages) != 3 ||
		len(up.Messages[1].ToolCalls) != 1 || up.Messages[2].Role != "tool" || up.Messages[2].ToolCallID != up.Messages[1].ToolCalls[0].ID {
		t.Errorf("upstream messages %s (%v)", f.body("/oa/v1/chat/completions"), err)
	}
}

// Structured output and thinking reach another dialect translated; a field
// it has no place for (topK) is dropped and named.
func TestGeminiSDK_TranslatedFieldsAndDrops(t *testing.T) {
	f := newGeminiFixture(t, nil, nil)
	resp, err := f.client(clientKey).Models.GenerateContent(ctx(t), "oa/gpt-x", genai.Text("A city as JSON"),
		&genai.GenerateContentConfig{ResponseMIMEType: "application/json", TopK: genai.Ptr[float32](3),
			MaxOutputTokens: 100, StopSequences: []string{"END"},
			ResponseSchema: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{
				"name": {Type: genai.TypeString, Nullable: genai.Ptr(true)}}}})
	if err != nil {
		t.Fatal(err)
	}
	h := resp.SDKHTTPResponse.Headers
	if h.Get("X-Detour-Degraded") != "true" || h.Get("X-Detour-Dropped") != "top_k" {
		t.Errorf("headers %v", h)
	}
	var up struct {
		MaxTokens      int             `json:"max_tokens"`
		Stop           json.RawMessage `json:"stop"`
		ResponseFormat json.RawMessage `json:"response_format"`
	}
	body := f.body("/oa/v1/chat/completions")
	if err := json.Unmarshal(body, &up); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object","properties":{"name":{"type":["string","null"]}}}}}`
	if d := jsonEqual(t, up.ResponseFormat, []byte(want)); d != "" || up.MaxTokens != 100 && !strings.Contains(string(body), `"max_completion_tokens":100`) {
		t.Errorf("upstream %s\n%s", body, d)
	}
}

// The Gemini surface's paths over plain HTTP: a POST to
// /v1/models/...:generateContent is served, never taken for the GET of
// /v1/models/{id}; the key may come as ?key=; a target id may come escaped
// or raw; what detour does not serve is a Google-shaped 404 or 501.
func TestGeminiHTTP_Paths(t *testing.T) {
	f := newGeminiFixture(t, nil, nil)
	const body = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	for _, tc := range []struct {
		name, method, path string
		header             []string
		status             int
		want               string // in the body
	}{
		{"v1 POST", "POST", "/v1/models/chat:generateContent", []string{"x-goog-api-key", clientKey}, 200, `"gemini-a"`},
		{"key in the query", "POST", "/v1beta/models/chat:generateContent?key=" + clientKey, nil, 200, `"candidates"`},
		{"escaped target", "POST", "/v1beta/models/g1%2Fgemini-b:generateContent", []string{"x-goog-api-key", clientKey}, 200, `"gemini-b"`},
		{"raw target", "POST", "/v1beta/models/oa/gpt-x:generateContent", []string{"x-goog-api-key", clientKey}, 200, `Hello from oa/gpt-x`},
		{"no key", "POST", "/v1beta/models/chat:generateContent", nil, 401, `"status":"UNAUTHENTICATED"`},
		{"key of another surface's header", "POST", "/v1beta/models/chat:generateContent", []string{"Authorization", "Bearer " + clientKey}, 200, `"candidates"`},
		{"unknown model", "POST", "/v1beta/models/nope:generateContent", []string{"x-goog-api-key", clientKey}, 404, `"status":"NOT_FOUND"`},
		{"stream without alt=sse", "POST", "/v1beta/models/chat:streamGenerateContent", []string{"x-goog-api-key", clientKey}, 400, `alt=sse`},
		{"countTokens", "POST", "/v1beta/models/chat:countTokens", []string{"x-goog-api-key", clientKey}, 501, `"status":"UNIMPLEMENTED"`},
		{"embedContent under v1 is served: a chat body is refused", "POST", "/v1/models/chat:embedContent", []string{"x-goog-api-key", clientKey}, 400, `"status":"INVALID_ARGUMENT"`},
		{"GET of a method", "GET", "/v1beta/models/chat:generateContent", []string{"x-goog-api-key", clientKey}, 405, `"code":405`},
		{"model list", "GET", "/v1beta/models", []string{"x-goog-api-key", clientKey}, 404, `"status":"NOT_FOUND"`},
		{"the OpenAI model GET stays", "GET", "/v1/models/chat", []string{"Authorization", "Bearer " + clientKey}, 200, `"id":"chat"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, f.ts.URL+tc.path, strings.NewReader(body))
			for i := 0; i+1 < len(tc.header); i += 2 {
				req.Header.Set(tc.header[i], tc.header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) ||
				!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("%d %s %s, want %d with %s", resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.status, tc.want)
			}
			if tc.status >= 400 && tc.status != 405 {
				var e struct {
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
						Status  string `json:"status"`
					} `json:"error"`
				}
				if json.Unmarshal(b, &e) != nil || e.Error.Code != tc.status || e.Error.Message == "" || e.Error.Status == "" {
					t.Errorf("error body %s is not Google's shape", b)
				}
			}
		})
	}
}

// When every candidate is out of quota the SDK gets Google's 429
// RESOURCE_EXHAUSTED, with the detour reason as an ErrorInfo.
func TestGeminiSDK_AllRateLimitedIs429(t *testing.T) {
	quota := []sim.Fault{{Kind: sim.DailyQuota}, {Kind: sim.DailyQuota}}
	f := newGeminiFixture(t, map[string][]sim.Fault{"gemini-a": quota}, quota)
	_, err := f.client(clientKey).Models.GenerateContent(ctx(t), "chat", genai.Text("hi"), nil)
	var ae genai.APIError
	if !errors.As(err, &ae) || ae.Code != http.StatusTooManyRequests || ae.Status != "RESOURCE_EXHAUSTED" ||
		len(ae.Details) != 1 || ae.Details[0]["reason"] != "all_candidates_rate_limited" {
		t.Fatalf("err %#v", err)
	}
}

// Thinking goes to another dialect only where the target says it reasons:
// oa/gpt-x declares nothing, so the request fails closed with Google's 400
// naming thinkingConfig, and nothing is sent.
func TestGeminiSDK_ThinkingSkipsATargetNotDeclaredToReason(t *testing.T) {
	f := newGeminiFixture(t, nil, nil)
	_, err := f.client(clientKey).Models.GenerateContent(ctx(t), "oa/gpt-x", genai.Text("think"),
		&genai.GenerateContentConfig{ThinkingConfig: &genai.ThinkingConfig{ThinkingBudget: genai.Ptr[int32](2048)}})
	var ae genai.APIError
	if !errors.As(err, &ae) || ae.Code != http.StatusBadRequest || ae.Status != "INVALID_ARGUMENT" ||
		!strings.Contains(ae.Message, "thinkingConfig") {
		t.Fatalf("err %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.bodies["/oa/v1/chat/completions"]); n != 0 {
		t.Errorf("%d sends upstream", n)
	}
}

// A request to the Gemini surface that net/http cannot parse is answered
// in Google's shape too (the listener's rewrite reads the path).
func TestGeminiHTTP_UnparseableRequestInGooglesShape(t *testing.T) {
	f := newFixture(t, setup{})
	base := serve(t, f)
	resp := rawExchange(t, base, "POST /v1beta/models/default:generateContent HTTP/1.1\r\nHost: x\r\n"+
		"x-goog-api-key: "+clientKey+"\r\nX-Trace: a\x00b\r\nContent-Length: 2\r\n\r\n{}")[0]
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct {
			Code   int    `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	if resp.StatusCode != 400 || json.Unmarshal(b, &e) != nil || e.Error.Code != 400 || e.Error.Status != "INVALID_ARGUMENT" {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}
