package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/detourhq/detour/ledger"
)

// reasoningGateway serves targets of the three dialects, each once
// declared to reason (offers: [reasoning]) and once not.
func reasoningGateway(t *testing.T, up http.Handler) (*httptest.Server, *ledger.Memory) {
	t.Helper()
	return yamlGateway(t, up, `providers:
  up:   {dialect: openai, base_url: %[1]s/up/v1, key_env: UP_KEY}
  upr:  {dialect: openai, base_url: %[1]s/up/v1, key_env: UP_KEY, offers: [reasoning, tools]}
  upa:  {dialect: anthropic, base_url: %[1]s/upa, key_env: UP_KEY}
  upar: {dialect: anthropic, base_url: %[1]s/upa, key_env: UP_KEY, offers: [reasoning, tools]}
  gemr: {dialect: gemini, base_url: %[1]s/gem/v1beta, key_env: UP_KEY, offers: [reasoning]}
`)
}

// A client's reasoning_effort or thinking reaches a target of another
// dialect that reasons in that dialect's words, with what Anthropic's
// thinking cannot take beside it named as dropped; a target not known to
// reason, or one that cannot have it with the rest, is skipped.
func TestReasoning_TranslatedToTargetsThatReason(t *testing.T) {
	const (
		oaPath = "/v1/chat/completions"
		anPath = "/v1/messages"
		hi     = `{"role":"user","content":"Prove there are infinitely many primes."}`
	)
	cases := []struct {
		name, path, body string
		status           int
		sent             []string // JSON fragments the upstream body must hold
		notSent          []string
		dropped          string // x-detour-dropped
		reason           string // the skip reason holds it
	}{
		{name: "effort to Anthropic", path: oaPath, status: 200,
			body:    `{"model":"upar/m","reasoning_effort":"high","temperature":0.3,"max_tokens":1000,"messages":[` + hi + `]}`,
			sent:    []string{`"thinking":{"type":"enabled","budget_tokens":24576}`, `"max_tokens":25576`},
			notSent: []string{`"temperature"`, `"reasoning_effort"`}, dropped: "temperature"},
		{name: "effort to Gemini", path: oaPath, status: 200,
			body: `{"model":"gemr/m","reasoning_effort":"low","messages":[` + hi + `]}`,
			sent: []string{`"thinkingConfig":{"thinkingBudget":2048}`}},
		{name: "budget to OpenAI", path: anPath, status: 200,
			body: `{"model":"upr/m","max_tokens":8000,"thinking":{"type":"enabled","budget_tokens":5000},"messages":[` + hi + `]}`,
			sent: []string{`"reasoning_effort":"medium"`}, notSent: []string{`"thinking"`}},
		{name: "budget to Gemini", path: anPath, status: 200,
			body: `{"model":"gemr/m","max_tokens":8000,"thinking":{"type":"enabled","budget_tokens":5000},"messages":[` + hi + `]}`,
			sent: []string{`"thinkingBudget":5000`}},
		{name: "thinking off asks nothing", path: anPath, status: 200,
			body:    `{"model":"up/m","max_tokens":100,"thinking":{"type":"disabled"},"messages":[` + hi + `]}`,
			notSent: []string{`"reasoning_effort"`}},
		{name: "not known to reason", path: anPath, status: 400,
			body:   `{"model":"up/m","max_tokens":8000,"thinking":{"type":"enabled","budget_tokens":5000},"messages":[` + hi + `]}`,
			reason: "thinking"},
		{name: "known not to reason", path: oaPath, status: 400,
			body:   `{"model":"upa/m","reasoning_effort":"low","messages":[` + hi + `]}`,
			reason: "reasoning_effort"},
		{name: "thinking and a forced tool", path: oaPath, status: 400,
			body:   `{"model":"upar/m","reasoning_effort":"low","tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"messages":[` + hi + `]}`,
			reason: "reasoning with a forced tool"},
		{name: "a word no table has", path: oaPath, status: 400,
			body:   `{"model":"upar/m","reasoning_effort":"ultra","messages":[` + hi + `]}`,
			reason: "reasoning_effort (ultra)"},
	}
	up := &dialectUpstream{}
	ts, book := reasoningGateway(t, up)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up.mu.Lock()
			up.last = nil
			up.mu.Unlock()
			before := len(book.Records())
			resp, out := postResp(t, ts, tc.path, []byte(tc.body))
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, out)
			}
			up.mu.Lock()
			sent := string(up.last)
			up.mu.Unlock()
			for _, f := range tc.sent {
				if !strings.Contains(sent, f) {
					t.Errorf("the upstream body lacks %s:\n%s", f, sent)
				}
			}
			for _, f := range tc.notSent {
				if strings.Contains(sent, f) {
					t.Errorf("the upstream body holds %s:\n%s", f, sent)
				}
			}
			if got := resp.Header.Get("X-Detour-Dropped"); got != tc.dropped {
				t.Errorf("x-detour-dropped %q, want %q", got, tc.dropped)
			}
			if tc.status != 400 {
				return
			}
			recs := book.Records()[before:]
			if len(recs) != 1 || recs[0].Status != ledger.StatusSkippedContract || !strings.Contains(recs[0].Reason, tc.reason) {
				t.Fatalf("want one skipped_contract naming %q, got %+v", tc.reason, recs)
			}
			if sent != "" {
				t.Errorf("a skipped target was sent a body: %s", sent)
			}
		})
	}
}
