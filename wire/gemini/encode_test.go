package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

func ptr[T any](v T) *T { return &v }

func TestEncodeRequest_Golden(t *testing.T) {
	weather := json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"location":{"type":"string","description":"City"},"unit":{"type":["string","null"],"enum":["celsius","fahrenheit"]}},"required":["location"],"additionalProperties":false}`)
	tests := []struct {
		name string
		req  *llm.Request
	}{
		{
			name: "minimal",
			req: &llm.Request{Model: "gemini-2.5-flash",
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hi"}}},
		},
		{
			name: "all_parameters",
			req: &llm.Request{
				Model: "models/gemini-2.5-pro",
				Messages: []llm.Message{
					{Role: llm.RoleSystem, Content: "You are terse. Use <b> & <i>."},
					{Role: llm.RoleSystem, Content: "Answer in French."},
					{Role: llm.RoleUser, Content: "Weather in Paris?", Name: "ana"},
				},
				Tools:          []llm.Tool{{Name: "get_weather", Description: "Current weather", Parameters: weather}, {Name: "now"}},
				ToolChoice:     json.RawMessage(`{"type":"function","function":{"name":"get_weather"}}`),
				MaxTokens:      256,
				Temperature:    ptr(0.0),
				TopP:           ptr(0.9),
				Stop:           []string{"\n\n", "END"},
				ResponseFormat: json.RawMessage(`{"type":"json_object"}`),
				Stream:         true,
			},
		},
		{
			// Consecutive turns of one role merge; tool results become user
			// turns merged with the user's next words; names come from the
			// calls' ids, else Message.Name.
			name: "tool_round_trip",
			req: &llm.Request{
				Model: "gemini-2.5-flash",
				Messages: []llm.Message{
					{Role: llm.RoleUser, Content: "Weather in Paris"},
					{Role: llm.RoleUser, Content: "and the time?"},
					{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
						{ID: "call_PieqNSej6kM9hgYbcQdbZSaC", Name: "get_weather", Arguments: `{"location": "Paris"}`},
						{ID: "call_9xQ2Lm4RtYbWc7ZkHs1NvPqE", Name: "now"},
					}},
					{Role: llm.RoleTool, ToolCallID: "call_PieqNSej6kM9hgYbcQdbZSaC", Content: `{"temp_c":18}`},
					{Role: llm.RoleTool, ToolCallID: "call_9xQ2Lm4RtYbWc7ZkHs1NvPqE", Content: "14:02"},
					{Role: llm.RoleAssistant, Content: "Checking once more.", ToolCalls: []llm.ToolCall{
						{ID: "call_3", Name: "now", Arguments: "{}"},
					}},
					{Role: llm.RoleTool, ToolCallID: "unknown-id", Name: "now", Content: "[1, 2]"},
					{Role: llm.RoleUser, Content: "Thanks!"},
				},
				Tools:      []llm.Tool{{Name: "get_weather", Parameters: weather}, {Name: "now", Description: "Local time", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
				ToolChoice: json.RawMessage(`"auto"`),
			},
		},
		{
			// Gemini 3 rejects replayed calls without a thought signature.
			name: "gemini3_signature",
			req: &llm.Request{
				Model: "gemini-3-pro-preview",
				Messages: []llm.Message{
					{Role: llm.RoleUser, Content: "Paris and Rome?"},
					{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
						{ID: "a", Name: "get_weather", Arguments: `{"location":"Paris"}`},
						{ID: "b", Name: "get_weather", Arguments: `{"location":"Rome"}`},
					}},
					{Role: llm.RoleTool, ToolCallID: "a", Content: `{"temp_c":18}`},
					{Role: llm.RoleTool, ToolCallID: "b", Content: `{"temp_c":24}`},
				},
				ToolChoice: json.RawMessage(`"required"`),
			},
		},
		{
			name: "json_schema",
			req: &llm.Request{
				Model:    "gemini-2.5-flash",
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "A fruit?"}},
				ResponseFormat: json.RawMessage(`{"type":"json_schema","json_schema":{"name":"fruit","strict":true,"schema":{
					"type":"object","additionalProperties":false,
					"properties":{"name":{"type":"string","format":"email","minLength":1},"ripe":{"anyOf":[{"type":"boolean"},{"type":"null"}]},
						"tags":{"type":"array","items":{"$ref":"#/$defs/tag"},"uniqueItems":true}},
					"required":["name","ripe","missing"],
					"$defs":{"tag":{"type":"string","const":"sweet"}}}}}`),
				ToolChoice: json.RawMessage(`"none"`),
			},
		},
		{
			name: "empty_turns",
			req: &llm.Request{Model: "m", Messages: []llm.Message{
				{Role: llm.RoleSystem}, {Role: llm.RoleUser, Content: ""}, {Role: llm.RoleAssistant}, {Role: llm.RoleUser, Content: "x"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EncodeRequest(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			wiretest.Golden(t, tt.name, got)
		})
	}
}

func TestEncodeRequest_Errors(t *testing.T) {
	user := llm.Message{Role: llm.RoleUser, Content: "x"}
	tests := []struct {
		name string
		req  *llm.Request
		want string
	}{
		{"nil request", nil, "nil request"},
		{"unknown role", &llm.Request{Messages: []llm.Message{{Role: "developer!", Content: "x"}}}, `unknown role "developer!"`},
		{"arguments not JSON", &llm.Request{Messages: []llm.Message{user, {Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":`}}}}}, `tool call "c1" (f): arguments are not a JSON object`},
		{"arguments an array", &llm.Request{Messages: []llm.Message{user, {Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Arguments: `[1]`}}}}}, "arguments are not a JSON object"},
		{"arguments null", &llm.Request{Messages: []llm.Message{user, {Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Arguments: `null`}}}}}, "arguments are null"},
		{"call without name", &llm.Request{Messages: []llm.Message{user, {Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "c1"}}}}}, "has no name"},
		{"tool result without name", &llm.Request{Messages: []llm.Message{user, {Role: llm.RoleTool, ToolCallID: "c9", Content: "1"}}},
			`tool result for call "c9"`},
		{"unknown tool_choice", &llm.Request{Messages: []llm.Message{user}, ToolChoice: json.RawMessage(`"sometimes"`)}, "tool_choice"},
		{"invalid tool_choice JSON", &llm.Request{Messages: []llm.Message{user}, ToolChoice: json.RawMessage(`{auto`)}, "tool_choice"},
		{"unknown response_format", &llm.Request{Messages: []llm.Message{user}, ResponseFormat: json.RawMessage(`{"type":"xml"}`)}, "response_format"},
		{"invalid response_format JSON", &llm.Request{Messages: []llm.Message{user}, ResponseFormat: json.RawMessage(`nope`)}, "response_format"},
		{"invalid parameters JSON", &llm.Request{Messages: []llm.Message{user}, Tools: []llm.Tool{{Name: "f", Parameters: json.RawMessage(`{`)}}}, `tool "f"`},
		{"parameters not an object", &llm.Request{Messages: []llm.Message{user}, Tools: []llm.Tool{{Name: "f", Parameters: json.RawMessage(`[]`)}}}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := EncodeRequest(tt.req)
			if err == nil {
				t.Fatalf("EncodeRequest = %s, want an error", b)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "gemini: ") {
				t.Errorf("err = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestEncodeRequest_ToolChoice(t *testing.T) {
	tests := []struct {
		choice string
		want   string
	}{
		{`"auto"`, `{"mode":"AUTO"}`},
		{`"none"`, `{"mode":"NONE"}`},
		{`"required"`, `{"mode":"ANY"}`},
		{`{"type":"function","function":{"name":"f"}}`, `{"mode":"ANY","allowedFunctionNames":["f"]}`},
		{`{"type":"tool","name":"f"}`, `{"mode":"ANY","allowedFunctionNames":["f"]}`},
		{`{"type":"any"}`, `{"mode":"ANY"}`},
		{`null`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.choice, func(t *testing.T) {
			b, err := EncodeRequest(&llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, ToolChoice: json.RawMessage(tt.choice)})
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				ToolConfig *struct {
					FunctionCallingConfig json.RawMessage `json:"functionCallingConfig"`
				} `json:"toolConfig"`
			}
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatal(err)
			}
			got := ""
			if body.ToolConfig != nil {
				got = string(body.ToolConfig.FunctionCallingConfig)
			}
			if got != tt.want {
				t.Errorf("functionCallingConfig = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestWantsSignature(t *testing.T) {
	for model, want := range map[string]bool{
		"gemini-3-pro-preview": true, "models/gemini-3.1-flash": true, "gemini-flash-latest": true,
		"gemini-2.5-flash": false, "models/gemini-2.0-flash": false, "gemini-1.5-pro": false,
		"gemma-3-27b-it": false, "": false, "tunedModels/x": false,
	} {
		if got := wantsSignature(model); got != want {
			t.Errorf("wantsSignature(%q) = %v, want %v", model, got, want)
		}
	}
}
