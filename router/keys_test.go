package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/wire/openai"
)

// Rule 12, end to end: an upstream that echoes whole keys in its errors,
// the one detour sent and another (a proxy's own upstream key), never gets
// them into the ledger, the hop events or the error the caller sees.
func TestRouter_KeysEchoedByUpstreamNeverLeak(t *testing.T) {
	const sent = "sk-proj-Abc123Def456Ghi789Jkl012"
	const other = "sk-or-v1-0123456789abcdef0123456789abcdef"
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + key + ` (upstream ` + other + `)","code":"invalid_api_key"}}`))
	}))
	t.Cleanup(upstream.Close)
	client := &openai.Client{BaseURL: upstream.URL + "/v1", APIKey: sent}
	route := &router.Route{Name: "r", Chain: []router.Target{{Provider: "p1", Model: "m", Client: client}}}
	book := &ledger.Memory{}
	var hops []router.Hop
	r := &router.Router{Ledger: book, OnFailover: func(h router.Hop) { hops = append(hops, h) }}
	_, err := r.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err == nil {
		t.Fatal("want the 401 as an error")
	}
	b, _ := json.Marshal(book.Records())
	hb, _ := json.Marshal(hops)
	for what, s := range map[string]string{"ledger": string(b), "hops": string(hb), "error": err.Error()} {
		for _, key := range []string{sent, other} {
			if strings.Contains(s, key) || strings.Contains(s, key[8:]) {
				t.Errorf("%s contains a key (%s...): %s", what, key[:8], s)
			}
		}
	}
}
