package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
)

// BenchmarkGateway measures the gateway's own cost per request in memory
// (fake provider through its in-memory transport, no sockets), streamed
// and not. The load benchmark against a reverse proxy lives elsewhere.
func BenchmarkGateway(b *testing.B) {
	for _, tc := range []struct{ name, body string }{
		{"complete", chatBody},
		{"stream", `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			gw := memGateway(b)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(tc.body))
				gw.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code, rec.Body)
				}
			}
		})
	}
}

// cannedTransport answers every request with the same recorded body, at
// once and on the calling goroutine: what is measured is detour's own work.
type cannedTransport struct{ body []byte }

func (t cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // drained as a server would
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(t.body)),
		ContentLength: int64(len(t.body)), Request: r}, nil
}

// BenchmarkGateway_PassThrough is the load benchmark's plain request
// (make bench-gateway: an OpenAI chat completion with a 1 KiB message)
// through the same-dialect path, its upstream a canned answer of the
// simulator's (testdata/bench-answer.json): the gateway's own work per
// request, parse, route, send, decode and write, with no other process's.
func BenchmarkGateway_PassThrough(b *testing.B) {
	answer, err := os.ReadFile("testdata/bench-answer.json")
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Parse("detour.yaml", []byte(`providers:
  up: {base_url: http://up.invalid/v1, key_env: ""}
routes:
  bench-model: {chain: [up/bench-model]}
`))
	if err != nil {
		b.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{File: cfg, HTTPClient: &http.Client{Transport: cannedTransport{answer}}})
	if err != nil {
		b.Fatal(err)
	}
	body := `{"model":"bench-model","messages":[{"role":"user","content":"` + strings.Repeat("lorem ipsum ", 85) + `"}]}`
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		gw.ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Body.Len() != len(answer) {
			b.Fatal(rec.Code, rec.Body)
		}
	}
}
