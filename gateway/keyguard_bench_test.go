package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	sim "github.com/detourhq/detour/simulate"
)

// BenchmarkGateway_AnswerKeys is BenchmarkGateway with the keys a real
// gateway holds (three providers', a client key, the admin and metrics
// keys) and an answer of 40 words, streamed as 40 chunks: what keeping
// the keys out of answers costs per answer and per chunk, when the answer
// holds none.
func BenchmarkGateway_AnswerKeys(b *testing.B) {
	text := strings.TrimSpace(strings.Repeat("the quick brown fox jumps over the lazy dog ", 5)[:220])
	srv, err := sim.NewServer(sim.Provider{Name: "p1", Answer: func(sim.Question) sim.Reply { return sim.Reply{Text: text} }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	cfg, err := config.Parse("detour.yaml", []byte(`providers:
  p1: {base_url: `+sim.MemoryURL+`/p1/v1, key_env: P1_KEY}
  p2: {base_url: `+sim.MemoryURL+`/p2/v1, key_env: P2_KEY}
  p3: {dialect: anthropic, base_url: `+sim.MemoryURL+`/p3, key_env: P3_KEY}
routes:
  default: {chain: [p1/m, p2/m, p3/m], budget: {max_attempts: 1}}
gateway:
  admin_key_env: ADMIN_KEY
  metrics_key_env: METRICS_KEY
  keys:
    app: {key_env: APP_KEY}
`))
	if err != nil {
		b.Fatal(err)
	}
	env := map[string]string{"P1_KEY": "sk-proj-" + strings.Repeat("Qm7xV2pL9sKd", 13), "P2_KEY": "sk-or-v1-" + strings.Repeat("0a1b2c3d", 8),
		"P3_KEY": "sk-ant-api03-" + strings.Repeat("x7Q-k9Z_", 11), "APP_KEY": clientKey,
		"ADMIN_KEY": "admin-" + strings.Repeat("a1", 16), "METRICS_KEY": "metrics-" + strings.Repeat("m2", 16)}
	gw, err := gateway.New(gateway.Config{File: cfg, HTTPClient: &http.Client{Transport: srv.Transport()},
		Getenv: func(k string) string { return env[k] }})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, body string }{
		{"complete", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`},
		{"stream", `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(tc.body))
				req.Header.Set("Authorization", "Bearer "+clientKey)
				gw.ServeHTTP(rec, req)
				if rec.Code != 200 || !strings.Contains(rec.Body.String(), "lazy") {
					b.Fatal(rec.Code, rec.Body)
				}
			}
		})
	}
}
