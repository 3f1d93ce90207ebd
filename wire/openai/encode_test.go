package openai

import (
	"encoding/json"
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
			req: &llm.Request{Model: "llama-3.3-70b-versatile",
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hi"}}},
		},
		{
			name:   "minimal_stream",
			req:    &llm.Request{Model: "gpt-4.1-mini", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hi"}}, Stream: false},
			stream: true,
		},
		{
			name: "request_stream_field_ignored",
			req:  &llm.Request{Model: "gpt-4.1-mini", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Stream: true},
		},
		{
			name: "all_parameters",
			req: &llm.Request{
				Model: "deepseek-chat",
				Messages: []llm.Message{
					{Role: llm.RoleSystem, Content: "You are terse. Use <b> & <i>."},
					{Role: llm.RoleUser, Content: "Weather in Paris?", Name: "ana"},
				},
				Tools:          []llm.Tool{{Name: "get_weather", Description: "Current weather", Parameters: weather}, {Name: "now"}},
				ToolChoice:     json.RawMessage(`{"type":"function","function":{"name":"get_weather"}}`),
				MaxTokens:      256,
				Temperature:    ptr(0.0),
				TopP:           ptr(0.9),
				Stop:           []string{"\n\n", "END"},
				ResponseFormat: json.RawMessage(`{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"}}}`),
			},
		},
		{
			name: "tool_round_trip",
			req: &llm.Request{
				Model: "gpt-4.1-nano",
				Messages: []llm.Message{
					{Role: llm.RoleUser, Content: "Weather in Paris and the time?"},
					{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
						{ID: "call_PieqNSej6kM9hgYbcQdbZSaC", Name: "get_weather", Arguments: `{"location":"Paris"}`},
						{ID: "call_9xQ2Lm4RtYbWc7ZkHs1NvPqE", Name: "now"},
					}},
					{Role: llm.RoleTool, ToolCallID: "call_PieqNSej6kM9hgYbcQdbZSaC", Name: "get_weather", Content: `{"temp_c":18}`},
					{Role: llm.RoleTool, ToolCallID: "call_9xQ2Lm4RtYbWc7ZkHs1NvPqE", Content: "14:02"},
					{Role: llm.RoleAssistant, Content: "Checking once more.", ToolCalls: []llm.ToolCall{
						{ID: "call_3", Name: "now", Arguments: "{}"},
					}},
					{Role: llm.RoleTool, ToolCallID: "call_3", Content: ""},
				},
				Tools:      []llm.Tool{{Name: "get_weather", Parameters: weather}, {Name: "now", Description: "Local time"}},
				ToolChoice: json.RawMessage(`"auto"`),
			},
			stream: true,
		},
		{
			name: "empty_turns",
			req: &llm.Request{Model: "m", Messages: []llm.Message{
				{Role: llm.RoleUser, Content: ""}, {Role: llm.RoleAssistant}}},
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

func TestEncodeRequest_Errors(t *testing.T) {
	tests := []struct {
		name string
		req  *llm.Request
	}{
		{"nil request", nil},
		{"tool message without id", &llm.Request{Messages: []llm.Message{{Role: llm.RoleTool, Content: "x"}}}},
		{"unknown role", &llm.Request{Messages: []llm.Message{{Role: "developer!", Content: "x"}}}},
		{"invalid tool_choice JSON", &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser}}, ToolChoice: json.RawMessage(`{auto`)}},
		{"invalid response_format JSON", &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser}}, ResponseFormat: json.RawMessage(`nope`)}},
		{"invalid parameters JSON", &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser}}, Tools: []llm.Tool{{Name: "f", Parameters: json.RawMessage(`{`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := EncodeRequest(tt.req, false); err == nil {
				t.Fatalf("EncodeRequest = %s, want an error", b)
			}
		})
	}
}
