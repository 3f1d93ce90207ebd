package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
