package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServer_EndpointsAndErrors(t *testing.T) {
	f := newFixture(t, setup{})
	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{http.MethodGet, "/healthz", 200, `"ok"`},
		{http.MethodGet, "/readyz", 200, `"ready"`},
		{http.MethodGet, "/v1/chat/completions", 405, `"type":"invalid_request_error"`},
		{http.MethodGet, "/v1/messages", 405, `"type":"error"`},
		{http.MethodPost, "/v1/embeddings", 404, `"code":"unknown_url"`},
		{http.MethodGet, "/v1/models/p2/m", 200, `"owned_by":"p2"`},
		{http.MethodGet, "/v1/models/nope", 404, `"code":"model_not_found"`},
		{http.MethodGet, "/metrics", 200, "detour_requests_total"},
	} {
		req, _ := http.NewRequest(tc.method, f.ts.URL+tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+clientKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, b)
		}
	}
	// Anthropic clients get Anthropic's list shape.
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/v1/models", nil)
	req.Header.Set("X-Api-Key", clientKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"has_more":false`) || !strings.Contains(string(b), `"type":"model"`) {
		t.Errorf("anthropic models: %s", b)
	}
	var an struct {
		Data []struct {
			CreatedAt time.Time `json:"created_at"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &an); err != nil || len(an.Data) == 0 || time.Since(an.Data[0].CreatedAt) > time.Hour {
		t.Errorf("anthropic models created_at: %v %s", err, b)
	}
	// OpenAI clients: created is when the gateway loaded its routes, not 0.
	_, ob := f.get("/v1/models")
	var oa struct {
		Data []struct {
			Created int64 `json:"created"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(ob), &oa); err != nil || len(oa.Data) == 0 ||
		time.Since(time.Unix(oa.Data[0].Created, 0)) > time.Hour {
		t.Errorf("openai models created: %v %s", err, ob)
	}
	// Draining: not ready, and new requests are refused with a retryable 503.
	if err := f.gw.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp, _ := f.get("/readyz"); resp.StatusCode != 503 {
		t.Errorf("readyz while draining: %d", resp.StatusCode)
	}
	if resp, body := f.post("/v1/chat/completions", chatBody); resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("request while draining: %d %s", resp.StatusCode, body)
	}
}
