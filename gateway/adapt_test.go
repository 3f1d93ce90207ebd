package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	sim "github.com/detourhq/detour/simulate"
)

// A long history through the official SDK, the primary failing and the
// fallback a smaller model at the same provider: with routes.NAME.adapt
// the fallback gets the last turns only, and the answer says it was
// adapted (degraded, x-detour-dropped); nothing overflows.
func TestAdapt_LongHistoryToASmallerFallback(t *testing.T) {
	srv, err := sim.NewServer(sim.Provider{Name: "p1", Script: []sim.Fault{{Kind: sim.ServerError}}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	sent := map[string]int{} // model -> messages it received
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		sent[body.Model] = len(body.Messages)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		srv.ServeHTTP(w, r)
	})
	ts, book := yamlGateway(t, up, `providers:
  p1: {dialect: openai, base_url: %[1]s/p1/v1, key_env: UP_KEY}
targets:
  p1/small: {context: 600}
routes:
  long:
    chain: [p1/m, p1/small]
    budget: {max_per_target: 1}
    adapt: {keep_last_turns: 2}
gateway:
  keys:
    app: {key_env: APP_KEY}
`)
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse.")}
	for i := range 12 {
		msgs = append(msgs, openai.UserMessage(fmt.Sprintf("turn %d: %s", i, strings.Repeat("some earlier detail worth a few tokens. ", 10))),
			openai.AssistantMessage("noted"))
	}
	msgs = append(msgs, openai.UserMessage("so what now?"))
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey(clientKey), option.WithMaxRetries(0))
	var raw *http.Response
	got, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: "long", MaxTokens: openai.Int(64), Messages: msgs},
		option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "Hello from p1/small." || raw.Header.Get("X-Detour-Degraded") != "true" ||
		!strings.Contains(raw.Header.Get("X-Detour-Dropped"), "context adapted") {
		t.Fatalf("answer %q, headers %v", got.Choices[0].Message.Content, raw.Header)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent["m"] != len(msgs) || sent["small"] == 0 || sent["small"] >= len(msgs) {
		t.Fatalf("messages received: primary %d, fallback %d; want the whole %d, then fewer", sent["m"], sent["small"], len(msgs))
	}
	recs := book.Records()
	if len(recs) != 2 || recs[1].Status != "ok" || !strings.Contains(strings.Join(recs[1].Dropped, ","), "context adapted") {
		t.Fatalf("ledger %+v", recs)
	}
}
