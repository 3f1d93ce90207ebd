package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sim "github.com/detourhq/detour/simulate"
)

func TestKeys_NeverReachResponsesMetricsOrLogs(t *testing.T) {
	// p1 expects another key: it answers 401 "Incorrect API key provided:
	// sk-***...ef1" (OpenAI's masked echo of the key detour sent).
	f := newFixture(t, withMetricsKey(setup{tweak: func(p *sim.Provider) {
		if p.Name == "p1" {
			p.Key = "the-key-p1-expects"
		}
	}}))
	var seen []string
	record := func(what string, resp *http.Response, body string) {
		h, _ := json.Marshal(resp.Header)
		seen = append(seen, what+": "+string(h)+" "+body)
	}
	resp, body := f.post("/v1/chat/completions", strings.Replace(chatBody, "default", "solo", 1))
	// A rejected upstream key is detour's to fix, not the client's: 503
	// (router.Unavailable), never the client's 401 nor a 429 to wait out.
	if resp.StatusCode != 503 || !strings.Contains(body, "p1/m") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	record("openai 503", resp, body)
	resp, body = f.post("/v1/messages", strings.Replace(messagesBody, "default", "solo", 1))
	record("anthropic 503", resp, body)
	resp, body = f.post("/v1/chat/completions", `{"model":"solo","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	record("stream 503", resp, body)
	resp, body = f.post("/v1/chat/completions", chatBody) // p1 parked: p2 answers
	record("answer", resp, body)
	resp, body = f.get("/v1/models")
	record("models", resp, body)
	resp, body = getMetrics(t, f.ts.URL+"/metrics", metricsKey)
	if resp.StatusCode != 200 || !strings.Contains(body, "detour_attempts_total") {
		t.Fatalf("metrics scrape: %d %.200s", resp.StatusCode, body)
	}
	record("metrics", resp, body)
	seen = append(seen, "logs: "+f.logs.String())
	for _, s := range seen {
		for _, leak := range []string{upstreamKey, "SECRET", "****", clientKey} {
			if strings.Contains(s, leak) {
				t.Errorf("%q leaked in %s", leak, s)
			}
		}
	}
	for _, r := range f.ledger.Records() {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), upstreamKey) || strings.Contains(string(b), clientKey) {
			t.Errorf("a key in the ledger: %s", b)
		}
	}
	if n := f.sim.Stats().Served("p1", "", sim.Unauthorized); n == 0 {
		t.Error("p1 never refused the key: the test proves nothing")
	}
}
