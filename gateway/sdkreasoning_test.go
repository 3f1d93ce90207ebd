package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// modelUpstream answers every dialect's path, failing the models named in
// down with that dialect's overload error, and keeps the body each model
// was sent.
type modelUpstream struct {
	down map[string]bool
	mu   sync.Mutex
	got  map[string]map[string]any // model -> body
}

func (u *modelUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	model, _ := body["model"].(string)
	u.mu.Lock()
	u.got[model] = body
	u.mu.Unlock()
	anthropicPath := strings.HasPrefix(r.URL.Path, "/upa/")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case u.down[model] && anthropicPath:
		w.WriteHeader(529)
		fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	case u.down[model]:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"The server is overloaded.","type":"server_error","param":null,"code":null}}`)
	case anthropicPath:
		w.Write(surfaces[1].answer) //nolint:errcheck // a test upstream
	default:
		w.Write(surfaces[0].answer) //nolint:errcheck // a test upstream
	}
}

func (u *modelUpstream) sent(t *testing.T, model string) map[string]any {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	b, ok := u.got[model]
	if !ok {
		t.Fatalf("%s was sent nothing", model)
	}
	return b
}

// Reasoning from the official SDKs survives the fallbacks users set up:
// an OpenAI client's reasoning_effort reaches an Anthropic fallback that
// reasons as a thinking budget (temperature named as dropped, the answer
// degraded); an Anthropic client's thinking reaches a second model of the
// same provider as sent, and an OpenAI-dialect fallback as an effort.
func TestSDK_ReasoningSurvivesFallbacks(t *testing.T) {
	up := &modelUpstream{down: map[string]bool{"o4-mini": true, "claude-a": true}, got: map[string]map[string]any{}}
	ts, _ := yamlGateway(t, up, `providers:
  upr:  {dialect: openai, base_url: %[1]s/up/v1, key_env: UP_KEY, offers: [reasoning]}
  upar: {dialect: anthropic, base_url: %[1]s/upa, key_env: UP_KEY, offers: [reasoning]}
routes:
  think:      {chain: [upr/o4-mini, upar/claude-sonnet], budget: {max_per_target: 1}}
  same:       {chain: [upar/claude-a, upar/claude-b], budget: {max_per_target: 1}}
  to-openai:  {chain: [upar/claude-a, upr/gpt-5], budget: {max_per_target: 1}}
`)

	oc := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	var resp *http.Response
	comp, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "think", ReasoningEffort: shared.ReasoningEffortHigh, Temperature: openai.Float(0.3),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Prove it.")},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if comp.Choices[0].Message.Content == "" || resp.Header.Get("X-Detour-Model") != "claude-sonnet" {
		t.Fatalf("answer %+v from %q: want the Anthropic fallback's", comp.Choices, resp.Header.Get("X-Detour-Model"))
	}
	if resp.Header.Get("X-Detour-Dropped") != "temperature" || resp.Header.Get("X-Detour-Degraded") != "true" {
		t.Errorf("dropped %q degraded %q: want temperature named and the answer degraded",
			resp.Header.Get("X-Detour-Dropped"), resp.Header.Get("X-Detour-Degraded"))
	}
	th, _ := up.sent(t, "claude-sonnet")["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != float64(24576) || up.sent(t, "claude-sonnet")["temperature"] != nil {
		t.Errorf("the Anthropic fallback got %v: want thinking with 24,576 tokens and no temperature", up.sent(t, "claude-sonnet"))
	}

	ac := anthropic.NewClient(anthropicopt.WithBaseURL(ts.URL), anthropicopt.WithAPIKey("unused"), anthropicopt.WithMaxRetries(0))
	for _, route := range []string{"same", "to-openai"} {
		_, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{
			Model: anthropic.Model(route), MaxTokens: 8000, Thinking: anthropic.ThinkingConfigParamOfEnabled(5000),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Prove it."))},
		})
		if err != nil {
			t.Fatalf("%s: %v", route, err)
		}
	}
	if th, _ := up.sent(t, "claude-b")["thinking"].(map[string]any); th["type"] != "enabled" || th["budget_tokens"] != float64(5000) {
		t.Errorf("the same provider's second model got thinking %v: want it as the client sent it", th)
	}
	if got := up.sent(t, "gpt-5")["reasoning_effort"]; got != "medium" {
		t.Errorf("the OpenAI-dialect fallback got reasoning_effort %v, want medium for a 5,000-token budget", got)
	}
}
