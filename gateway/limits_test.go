package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	sim "github.com/detourhq/detour/simulate"
)

// errorShape checks body is an error in dialect d's shape and returns the
// error object.
func errorShape(t *testing.T, anthropicShape bool, body string) map[string]any {
	t.Helper()
	var v struct {
		Type  string         `json:"type"`
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Error == nil {
		t.Fatalf("body %q is not an error object: %v", body, err)
	}
	keys := []string{"message", "type", "param", "code"}
	if anthropicShape {
		keys = []string{"message", "type"}
		if v.Type != "error" {
			t.Errorf("body %q: type %q, want error", body, v.Type)
		}
	}
	for _, k := range keys {
		if _, ok := v.Error[k]; !ok {
			t.Errorf("body %q lacks error.%s", body, k)
		}
	}
	return v.Error
}

func TestAuth(t *testing.T) {
	ciKey := "ci-client-key-0000000000000002"
	sum := sha256.Sum256([]byte(ciKey))
	f := newFixture(t, setup{gateway: defaultGateway + "    ci: {sha256: " + hex.EncodeToString(sum[:]) + ", routes: [solo]}\n"})
	tests := []struct {
		name   string
		path   string
		body   string
		header []string
		status int
		code   string
	}{
		{"no key", "/v1/chat/completions", chatBody, []string{"Authorization", ""}, 401, "invalid_api_key"},
		{"wrong key", "/v1/chat/completions", chatBody, []string{"Authorization", "Bearer nope"}, 401, "invalid_api_key"},
		{"not bearer", "/v1/chat/completions", chatBody, []string{"Authorization", "Basic " + clientKey}, 401, "invalid_api_key"},
		{"anthropic no key", "/v1/messages", messagesBody, []string{"Authorization", ""}, 401, ""},
		{"anthropic x-api-key", "/v1/messages", messagesBody, []string{"Authorization", "", "X-Api-Key", clientKey}, 200, ""},
		{"hashed key, allowed route", "/v1/chat/completions", strings.Replace(chatBody, "default", "solo", 1),
			[]string{"Authorization", "Bearer " + ciKey}, 200, ""},
		{"hashed key, target of an allowed route", "/v1/chat/completions", strings.Replace(chatBody, "default", "p1/m", 1),
			[]string{"Authorization", "Bearer " + ciKey}, 200, ""},
		{"hashed key, other route", "/v1/chat/completions", chatBody, []string{"Authorization", "Bearer " + ciKey}, 403, "route_not_allowed"},
		{"hashed key, other target", "/v1/chat/completions", strings.Replace(chatBody, "default", "p3/other", 1),
			[]string{"Authorization", "Bearer " + ciKey}, 403, "route_not_allowed"},
		{"hashed key, anthropic", "/v1/messages", messagesBody, []string{"Authorization", "", "X-Api-Key", ciKey}, 403, ""},
		{"unknown model", "/v1/chat/completions", strings.Replace(chatBody, "default", "gpt-9", 1), nil, 404, "model_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.post(tt.path, tt.body, tt.header...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.status == 200 {
				return
			}
			e := errorShape(t, tt.path == "/v1/messages", body)
			if tt.code != "" && e["code"] != tt.code {
				t.Errorf("code %v, want %s", e["code"], tt.code)
			}
		})
	}
	// The models list shows what the key may use.
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+ciKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&list) //nolint:errcheck // checked below
	resp.Body.Close()
	if len(list.Data) != 2 || list.Data[0].ID != "solo" || list.Data[1].ID != "p1/m" {
		t.Errorf("models for ci: %+v", list.Data)
	}
	// The SDK reads it too.
	page, err := f.openai().Models.List(ctx(t))
	if err != nil || len(page.Data) != 5 {
		t.Errorf("SDK models list: %v %+v", err, page)
	}
}

func TestLimits_BodySize(t *testing.T) {
	f := newFixture(t, setup{gateway: defaultGateway + "  max_body: 1KiB\n"})
	big := `{"model":"default","messages":[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]}`
	resp, body := f.post("/v1/chat/completions", big)
	if resp.StatusCode != 413 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if e := errorShape(t, false, body); !strings.Contains(e["message"].(string), "1 KiB") {
		t.Errorf("message %q does not name the limit", e["message"])
	}
	resp, body = f.post("/v1/messages", `{"model":"default","max_tokens":5,"messages":[{"role":"user","content":"`+strings.Repeat("x", 2000)+`"}]}`)
	if resp.StatusCode != 413 || errorShape(t, true, body)["type"] != "request_too_large" {
		t.Errorf("anthropic: %d %s", resp.StatusCode, body)
	}
	// A body without Content-Length is cut at the limit too.
	req, _ := http.NewRequest(http.MethodPost, f.ts.URL+"/v1/chat/completions", struct{ *strings.Reader }{strings.NewReader(big)})
	req.Header.Set("Authorization", "Bearer "+clientKey)
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 413 || r2.ContentLength == 0 {
		t.Errorf("chunked body: %d", r2.StatusCode)
	}
	if n := f.sim.Stats().Total(); n != 0 {
		t.Errorf("%d upstream sends for refused bodies", n)
	}
}

func TestLimits_ConcurrencyPerKey(t *testing.T) {
	f := newFixture(t, setup{
		gateway: "  keys:\n    app: {key_env: DETOUR_TEST_KEY, max_concurrent: 1}\n",
		p1:      sim.Faults(sim.Hang),
	})
	c, cancel := context.WithCancel(ctx(t))
	var wg sync.WaitGroup
	wg.Go(func() {
		f.openai(option.WithMaxRetries(0)).Chat.Completions.New(c, userHi()) //nolint:errcheck // cancelled on purpose
	})
	waitFor(t, "the first request upstream", func() bool { return f.sim.Stats().Total() == 1 })
	resp, body := f.post("/v1/chat/completions", chatBody)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || resp.Header.Get("X-Should-Retry") != "" {
		t.Errorf("second request: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if e := errorShape(t, false, body); e["code"] != "concurrency_limit_exceeded" {
		t.Errorf("code %v", e["code"])
	}
	cancel()
	wg.Wait()
	waitFor(t, "the slot to free", func() bool {
		resp, _ := f.post("/v1/chat/completions", chatBody)
		return resp.StatusCode == 200
	})
}

func TestLimits_RatePerKey(t *testing.T) {
	f := newFixture(t, setup{gateway: "  keys:\n    app: {key_env: DETOUR_TEST_KEY, requests_per_minute: 60, burst: 2}\n"})
	for i := range 2 {
		if resp, body := f.post("/v1/chat/completions", chatBody); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := f.post("/v1/chat/completions", chatBody)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("third request: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	// The SDK retries a local limit: it is a passing condition.
	start := time.Now()
	if _, err := f.openai().Chat.Completions.New(ctx(t), userHi()); err != nil {
		t.Errorf("SDK with retries: %v", err)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Error("the SDK did not wait: was the 429 retryable?")
	}
}

func TestShutdown_DrainsStreamsWithinBound(t *testing.T) {
	t.Run("drains", func(t *testing.T) {
		f := newFixture(t, setup{tweak: func(p *sim.Provider) { p.Latency.PerChunk = 40 * time.Millisecond }})
		base := serve(t, f)
		got := make(chan string, 1)
		go func() { got <- streamText(t, base) }()
		waitFor(t, "the stream to start", func() bool { return f.sim.Stats().Total() == 1 })
		time.Sleep(50 * time.Millisecond)
		if err := f.gw.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if text := <-got; text != p1Answer+" <nil>" {
			t.Errorf("the stream in flight got %q, want the whole answer", text)
		}
		if _, err := http.Get(base + "/healthz"); err == nil {
			t.Error("still accepting connections after Shutdown")
		}
	})
	t.Run("cuts past the bound", func(t *testing.T) {
		f := newFixture(t, setup{gateway: defaultGateway + "  drain_timeout: 100ms\n",
			tweak: func(p *sim.Provider) { p.Latency.PerChunk = 2 * time.Second }})
		base := serve(t, f)
		got := make(chan string, 1)
		go func() { got <- streamText(t, base) }()
		waitFor(t, "the stream to start", func() bool { return f.sim.Stats().Total() == 1 })
		start := time.Now()
		err := f.gw.Shutdown(context.Background())
		if err == nil || time.Since(start) > 2*time.Second {
			t.Errorf("Shutdown: %v after %s, want a drain-timeout error soon after 100ms", err, time.Since(start))
		}
		if text := <-got; !strings.Contains(text, "shutting down") {
			t.Errorf("the cut stream got %q, want an explicit error event", text)
		}
		waitFor(t, "the upstream to see the cancel", func() bool { return f.upstreamCanceled.Load() == 1 })
	})
}

// serve runs f's gateway with Serve on a free loopback port.
func serve(t *testing.T, f *fixture) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go f.gw.Serve(ln)                                         //nolint:errcheck // ErrServerClosed after Shutdown
	t.Cleanup(func() { f.gw.Shutdown(context.Background()) }) //nolint:errcheck // already stopped
	return "http://" + ln.Addr().String()
}

// streamText streams a completion from base and returns its text and the
// stream's error.
func streamText(t *testing.T, base string) string {
	c := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey(clientKey), option.WithMaxRetries(0))
	s := c.Chat.Completions.NewStreaming(context.Background(), userHi())
	var b strings.Builder
	for s.Next() {
		if cs := s.Current().Choices; len(cs) > 0 {
			b.WriteString(cs[0].Delta.Content)
		}
	}
	var apiErr *openai.Error
	if errors.As(s.Err(), &apiErr) {
		return b.String() + " " + apiErr.Message
	}
	return b.String() + " " + errString(s.Err())
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
