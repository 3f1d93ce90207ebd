package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	sim "github.com/detourhq/detour/simulate"
)

// A request said to have side effects (x-detour-non-idempotent: true)
// whose connection was reset after the send is never sent again, on every
// chat surface: one upstream send, and the client learns the outcome is
// unknown with a 503 it is told not to retry. Without the header the same
// request is sent again and answered, as before.
func TestGateway_NonIdempotentHeaderStopsTheResendAfterAReset(t *testing.T) {
	for _, sf := range []struct{ surface, path, body string }{
		{"openai", "/v1/chat/completions", chatBody},
		{"openai streamed", "/v1/chat/completions", `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"responses", "/v1/responses", `{"model":"default","input":"hi"}`},
		{"anthropic", "/v1/messages", messagesBody},
		{"gemini", "/v1beta/models/default:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
	} {
		for _, tt := range []struct {
			name   string
			header string
			sends  int
			status int
		}{
			{"with the header", "true", 1, http.StatusServiceUnavailable},
			{"without it", "", 2, http.StatusOK},
		} {
			t.Run(sf.surface+" "+tt.name, func(t *testing.T) {
				f := newFixture(t, setup{p1: []sim.Fault{{Kind: sim.Reset}}})
				resp, got := f.post(sf.path, sf.body, "X-Detour-Non-Idempotent", tt.header)
				if n := f.sim.Stats().Total(); n != tt.sends || resp.StatusCode != tt.status {
					t.Fatalf("%d upstream sends, status %d; want %d and %d\n%s", n, resp.StatusCode, tt.sends, tt.status, got)
				}
				if tt.header == "" {
					return
				}
				if !strings.Contains(got, "not idempotent") || resp.Header.Get("X-Should-Retry") != "false" {
					t.Fatalf("x-should-retry %q, body %s; want false and a message that the request is not idempotent",
						resp.Header.Get("X-Should-Retry"), got)
				}
				if l := f.ledger.Records(); len(l) != 1 || l[0].Phase != "unknown" {
					t.Fatalf("ledger %+v, want one attempt of phase unknown", l)
				}
			})
		}
	}
}

func TestGateway_NonIdempotentHeaderTakesTrueOrFalse(t *testing.T) {
	f := newFixture(t, setup{})
	for _, v := range []string{"false", "0", "no", "yes"} {
		if resp, body := f.post("/v1/chat/completions", chatBody, "X-Detour-Non-Idempotent", v); resp.StatusCode != http.StatusOK {
			t.Fatalf("%q: %d %s", v, resp.StatusCode, body)
		}
	}
	resp, body := f.post("/v1/chat/completions", chatBody, "X-Detour-Non-Idempotent", "maybe")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `header x-detour-non-idempotent takes true or false, not \"maybe\"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
