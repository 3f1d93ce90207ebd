package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

func ptr[T any](v T) *T { return &v }

func TestEncodeRequest_Golden(t *testing.T) {
	weather := json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`)
	tests := []struct {
		name   string
		req    *llm.Request
		stream bool
	}{
		{
			name: "minimal",
			req: &llm.Request{Model: "claude-haiku-4-5",
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hi"}}},
		},
		{
			name:   "minimal_stream",
			req:    &llm.Request{Model: "claude-haiku-4-5", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hi"}}},
			stream: true,
		},
		{
			name: "request_stream_field_ignored",
			req:  &llm.Request{Model: "claude-haiku-4-5", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Stream: true},
		},
		{
			// Two system prompts (one in the middle), a Name that has no
			// Anthropic field, temperature above Anthropic's 1.0, a
			// response_format that is dropped.
			name: "all_parameters",
			req: &llm.Request{
				Model: "claude-sonnet-4-5",
				Messages: []llm.Message{
					{Role: llm.RoleSystem, Content: "You are terse. Use <b> & <i>."},
					{Role: llm.RoleUser, Content: "Weather in Paris?", Name: "ana"},
					{Role: llm.RoleSystem, Content: "Answer in French."},
					{Role: llm.RoleSystem, Content: ""},
				},
				Tools:          []llm.Tool{{Name: "get_weather", Description: "Current weather", Parameters: weather}, {Name: "now"}},
				ToolChoice:     json.RawMessage(`{"type":"function","function":{"name":"get_weather"}}`),
				MaxTokens:      256,
				Temperature:    ptr(1.5),
				TopP:           ptr(0.9),
				Stop:           []string{"\n\nHuman:", "END"},
				ResponseFormat: json.RawMessage(`{"type":"json_object"}`),
			},
		},
		{
			// Parallel calls (one without arguments), their results in one
			// user turn with the next user text after them, then a text +
			// call turn and an empty result.
			name: "tool_round_trip",
			req: &llm.Request{
				Model: "claude-haiku-4-5",
				Messages: []llm.Message{
					{Role: llm.RoleSystem, Content: "Use the tools."},
					{Role: llm.RoleUser, Content: "Weather in Paris and the time?"},
					{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
						{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: `{ "location": "Paris" }`},
						{ID: "toolu_01B", Name: "now"},
					}},
					{Role: llm.RoleTool, ToolCallID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Content: `{"temp_c":18}`},
					{Role: llm.RoleTool, ToolCallID: "toolu_01B", Content: "14:02"},
					{Role: llm.RoleUser, Content: "And London?"},
					{Role: llm.RoleAssistant, Content: "Checking London.", ToolCalls: []llm.ToolCall{
						{ID: "toolu_01C", Name: "get_weather", Arguments: `{"location":"London"}`},
					}},
					{Role: llm.RoleTool, ToolCallID: "toolu_01C", Content: ""},
				},
				Tools:      []llm.Tool{{Name: "get_weather", Parameters: weather}, {Name: "now", Description: "Local time", Parameters: json.RawMessage("null")}},
				ToolChoice: json.RawMessage(`"required"`),
			},
			stream: true,
		},
		{
			// Same-role runs merged; a user text before a tool result in
			// one turn is put after it; empty texts dropped beside other
			// blocks; an all-empty turn kept as "".
			name: "merged_turns",
			req: &llm.Request{Model: "claude-haiku-4-5", Messages: []llm.Message{
				{Role: llm.RoleUser, Content: "first"},
				{Role: llm.RoleUser, Content: ""},
				{Role: llm.RoleUser, Content: "second"},
				{Role: llm.RoleAssistant, Content: "a"},
				{Role: llm.RoleAssistant, Content: "", ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "f", Arguments: "{}"}}},
				{Role: llm.RoleUser, Content: "interjection"},
				{Role: llm.RoleTool, ToolCallID: "toolu_1", Content: "done"},
				{Role: llm.RoleAssistant},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EncodeRequest(tt.req, tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			wiretest.Golden(t, tt.name, got)
		})
	}
}

func TestEncodeRequest_ToolChoice(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"auto"`, `{"type":"auto"}`},
		{`"required"`, `{"type":"any"}`},
		{`"none"`, `{"type":"none"}`},
		{`{"type":"function","function":{"name":"get_weather"}}`, `{"type":"tool","name":"get_weather"}`},
		{`{"type": "any"}`, `{"type":"any"}`},
		{`{"type":"tool","name":"f","disable_parallel_tool_use":true}`, `{"type":"tool","name":"f","disable_parallel_tool_use":true}`},
		{`null`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			b, err := EncodeRequest(&llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}},
				Tools: []llm.Tool{{Name: "f"}}, ToolChoice: json.RawMessage(tt.in)}, false)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				ToolChoice json.RawMessage `json:"tool_choice"`
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if string(got.ToolChoice) != tt.want {
				t.Errorf("tool_choice = %s, want %s", got.ToolChoice, tt.want)
			}
		})
	}
}

func TestEncodeRequest_DefaultMaxTokensAndTemperature(t *testing.T) {
	for _, tt := range []struct {
		req  *llm.Request
		want string
	}{
		{&llm.Request{MaxTokens: 0}, `"max_tokens":4096`},
		{&llm.Request{MaxTokens: -3}, `"max_tokens":4096`},
		{&llm.Request{MaxTokens: 7}, `"max_tokens":7`},
		{&llm.Request{Temperature: ptr(0.0)}, `"temperature":0`},
		{&llm.Request{Temperature: ptr(0.7)}, `"temperature":0.7`},
		{&llm.Request{Temperature: ptr(2.0)}, `"temperature":1`},
	} {
		tt.req.Messages = []llm.Message{{Role: llm.RoleUser, Content: "x"}}
		b, err := EncodeRequest(tt.req, false)
		if err != nil || !strings.Contains(string(b), tt.want) {
			t.Errorf("EncodeRequest = %s, %v; want it to contain %s", b, err, tt.want)
		}
	}
}

func TestEncodeRequest_Errors(t *testing.T) {
	user := []llm.Message{{Role: llm.RoleUser, Content: "x"}}
	call := func(args string) *llm.Request {
		return &llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t", Name: "f", Arguments: args}}}}}
	}
	tests := []struct {
		name, want string
		req        *llm.Request
	}{
		{"nil request", "nil request", nil},
		{"tool message without id", "without tool_call_id", &llm.Request{Messages: []llm.Message{{Role: llm.RoleTool, Content: "x"}}}},
		{"unknown role", "unknown role", &llm.Request{Messages: []llm.Message{{Role: "developer!", Content: "x"}}}},
		{"invalid arguments JSON", "not valid JSON", call(`{"location": "Par`)},
		{"arguments not an object", "not a JSON object", call(`["Paris"]`)},
		{"invalid tool_choice JSON", "tool_choice", &llm.Request{Messages: user, ToolChoice: json.RawMessage(`{auto`)}},
		{"unknown tool_choice string", "unsupported tool_choice", &llm.Request{Messages: user, ToolChoice: json.RawMessage(`"sometimes"`)}},
		{"unknown tool_choice object", "unsupported tool_choice", &llm.Request{Messages: user, ToolChoice: json.RawMessage(`{"type":"allowed_tools"}`)}},
		{"invalid parameters JSON", "parameters are not valid JSON", &llm.Request{Messages: user, Tools: []llm.Tool{{Name: "f", Parameters: json.RawMessage(`{`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := EncodeRequest(tt.req, false)
			if err == nil {
				t.Fatalf("EncodeRequest = %s, want an error", b)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "anthropic: ") {
				t.Errorf("err = %q, want %q in it", err, tt.want)
			}
		})
	}
}
