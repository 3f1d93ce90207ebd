// Package wire_test checks that the four dialects give one canonical shape.
package wire_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/llm"
	sim "github.com/detourhq/detour/simulate"
)

// shape is a canonical response with the provider-specific parts (ids,
// which provider's name is in the text) taken out.
type shape struct {
	Text         string
	ToolCalls    []call
	FinishReason llm.FinishReason
	HasUsage     bool
	Model        string
}

type call struct {
	Name string
	Args map[string]any
}

func shapeOf(t *testing.T, provider string, r *llm.Response) shape {
	t.Helper()
	s := shape{Text: strings.ReplaceAll(r.Message.Content, provider, "P"), FinishReason: r.FinishReason,
		HasUsage: r.Usage.InputTokens > 0 && r.Usage.OutputTokens > 0, Model: r.Model}
	for _, tc := range r.Message.ToolCalls {
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
			t.Fatalf("%s: tool arguments are not a JSON object: %q", provider, tc.Arguments)
		}
		if tc.ID == "" {
			t.Errorf("%s: tool call without an id", provider)
		}
		s.ToolCalls = append(s.ToolCalls, call{tc.Name, args})
	}
	return s
}

// TestDialects_SameCanonicalShape sends the same canonical requests to an
// OpenAI-compatible, an Anthropic, a Gemini and a Responses API provider
// (simulate, speaking each wire format byte for byte over loopback) and
// checks that the four answers have one shape, whole and streamed.
func TestDialects_SameCanonicalShape(t *testing.T) {
	const model = "m-1"
	dialects := []sim.Dialect{sim.DialectOpenAI, sim.DialectAnthropic, sim.DialectGemini, sim.DialectResponses}
	var provs []sim.Provider
	for _, d := range dialects {
		provs = append(provs, sim.Provider{Name: "p-" + string(d), Models: []string{model}, Dialect: d})
	}
	srv, err := sim.Start(provs...)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	weather := llm.Tool{Name: "get_weather", Description: "Weather for a city",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	requests := map[string]*llm.Request{
		"text": {MaxTokens: 64, Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "Be brief."},
			{Role: llm.RoleUser, Content: "Say hello."},
		}},
		"tool call": {MaxTokens: 64, Tools: []llm.Tool{weather}, Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "Weather in Paris?"},
		}},
		"tool result turn": {MaxTokens: 64, Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "Weather in Paris?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Name: "get_weather", Content: `{"temp_c":21}`},
		}},
	}
	for name, req := range requests {
		t.Run(name, func(t *testing.T) {
			var want *shape
			for _, d := range dialects {
				p := "p-" + string(d)
				cl := config.NewClient(config.Dialect(d), srv.BaseURL(p), "test-key-123456", nil, nil)
				r := req.Clone()
				r.Model = model
				whole, err := cl.Complete(context.Background(), r)
				if err != nil {
					t.Fatalf("%s Complete: %v", d, err)
				}
				st, err := cl.Stream(context.Background(), r)
				if err != nil {
					t.Fatalf("%s Stream: %v", d, err)
				}
				streamed, err := llm.Assemble(st)
				if err != nil {
					t.Fatalf("%s stream: %v", d, err)
				}
				ws, ss := shapeOf(t, p, whole), shapeOf(t, p, streamed)
				if diff := cmp.Diff(ws, ss); diff != "" {
					t.Errorf("%s: whole and streamed answers differ (-whole +streamed):\n%s", d, diff)
				}
				if want == nil {
					want = &ws
					switch {
					case req.Tools != nil && (len(ws.ToolCalls) != 1 || ws.ToolCalls[0].Name != "get_weather" || ws.FinishReason != llm.FinishToolCalls):
						t.Fatalf("%s: want one get_weather call ending in tool_calls, got %+v", d, ws)
					case req.Tools == nil && (ws.Text != "Hello from P/m-1." || ws.FinishReason != llm.FinishStop || !ws.HasUsage):
						t.Fatalf("%s: want the text answer with usage ending in stop, got %+v", d, ws)
					}
					continue
				}
				if diff := cmp.Diff(*want, ws); diff != "" {
					t.Errorf("%s differs from %s (-%s +%s):\n%s", d, dialects[0], dialects[0], d, diff)
				}
			}
		})
	}
}
