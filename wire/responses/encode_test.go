package responses_test

import (
	"encoding/json"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
	"github.com/detourhq/detour/wire/responses"
)

func fptr(f float64) *float64 { return &f }

// The request translation, as golden files under testdata/encode (go test
// -update rewrites them). The field names follow the Responses API
// reference (https://platform.openai.com/docs/api-reference/responses/create)
// as openai-go's ResponseNewParams serialises them: instructions, input
// items (easy input messages, function_call, function_call_output),
// function tools with strict said, tool_choice {type, name},
// max_output_tokens, text.format, reasoning.effort, store.
func TestEncodeRequest_Golden(t *testing.T) {
	weather := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)
	for _, tc := range []struct {
		name   string
		req    *llm.Request
		stream bool
	}{
		{name: "minimal", req: &llm.Request{Model: "gpt-5-mini", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hello."}}}},
		{name: "minimal_stream", stream: true, req: &llm.Request{Model: "gpt-5-mini", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hello."}}}},
		{name: "all_parameters", req: &llm.Request{
			Model: "gpt-5",
			Messages: []llm.Message{
				{Role: llm.RoleSystem, Content: "Be brief."},
				{Role: llm.RoleSystem, Content: "Answer in English."},
				{Role: llm.RoleUser, Content: "What is the weather?", Name: "ann"},
				{Role: llm.RoleAssistant, Content: "Let me look.", ToolCalls: []llm.ToolCall{
					{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "call_2", Name: "now"}}},
				{Role: llm.RoleTool, ToolCallID: "call_1", Name: "get_weather", Content: "sunny"},
				{Role: llm.RoleTool, ToolCallID: "call_2", Content: "noon"},
				{Role: llm.RoleSystem, Content: "Mind the units."},
				{Role: llm.RoleUser, Content: "Thanks."},
			},
			Tools: []llm.Tool{{Name: "get_weather", Description: "Weather of a city", Parameters: weather, Strict: true},
				{Name: "now"}},
			ToolChoice:  json.RawMessage(`{"type":"function","function":{"name":"get_weather"}}`),
			MaxTokens:   300,
			Temperature: fptr(0.2),
			TopP:        fptr(0.9),
			Reasoning:   &llm.Reasoning{Budget: 9000},
			ResponseFormat: json.RawMessage(`{"type":"json_schema","json_schema":{"name":"weather","description":"a forecast",` +
				`"schema":{"type":"object","properties":{"sky":{"type":"string"}},"required":["sky"],"additionalProperties":false},"strict":true}}`),
		}},
		{name: "json_object_and_effort", req: &llm.Request{Model: "o4-mini", Messages: []llm.Message{{Role: llm.RoleUser, Content: "JSON please"}},
			ResponseFormat: json.RawMessage(`{"type":"json_object"}`), Reasoning: &llm.Reasoning{Effort: "high"}, ToolChoice: json.RawMessage(`"required"`)}},
		{name: "parts", req: &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "Compare these.", Parts: []llm.Part{
				{Kind: llm.PartImage, URL: "https://example.test/a.png"},
				{Kind: llm.PartImage, Data: "iVBORw0KGgo=", MediaType: "image/png"},
				{Kind: llm.PartText, Text: "and the report:"},
				{Kind: llm.PartDocument, Data: "JVBERi0xLjQ=", MediaType: "application/pdf", Title: "report.pdf"},
				{Kind: llm.PartDocument, Data: "JVBERi0xLjQ=", MediaType: "application/pdf"},
				{Kind: llm.PartDocument, URL: "https://example.test/b.pdf"},
			}},
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "One moment."}}},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := responses.EncodeRequest(tc.req, tc.stream)
			if err != nil {
				t.Fatal(err)
			}
			wiretest.Golden(t, tc.name, b)
		})
	}
}

// What the Responses API has no form for is refused, never left out.
func TestEncodeRequest_Refuses(t *testing.T) {
	encode := func(req *llm.Request) ([]byte, error) { return responses.EncodeRequest(req, false) }
	wiretest.WantEncodeError(t, encode, llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartAudio, Data: "UklG", MediaType: "audio/wav"}}}, "no audio")
	wiretest.WantEncodeError(t, encode, llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartImage, URL: "https://x.test/a.png"}}}, "text only")
	wiretest.WantEncodeError(t, encode, llm.Message{Role: llm.RoleTool, Content: "x"}, "tool_call_id")
	wiretest.WantEncodeError(t, encode, llm.Message{Role: "critic", Content: "x"}, "unknown role")
	for _, req := range []*llm.Request{
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Stop: []string{"END"}},
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, ToolChoice: json.RawMessage(`"sometimes"`)},
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, ResponseFormat: json.RawMessage(`{"type":"yaml"}`)},
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, ResponseFormat: json.RawMessage(`{"type":"json_schema","json_schema":{"name":"x"}}`)},
		nil,
	} {
		if b, err := responses.EncodeRequest(req, false); err == nil {
			t.Errorf("EncodeRequest(%+v) = %s, want an error", req, b)
		}
	}
	if b, err := responses.EncodeRequest(&llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}},
		ResponseFormat: json.RawMessage(`{"type":"text"}`)}, false); err != nil || string(b) != `{"model":"","input":[{"role":"user","content":"x"}],"store":false}` {
		t.Errorf("a text format = %s, %v; want no text field", b, err)
	}
}
