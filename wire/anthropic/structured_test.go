package anthropic

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
)

func TestStructuredOf(t *testing.T) {
	tools := []llm.Tool{{Name: "f"}}
	tests := []struct {
		rf         string
		tools      []llm.Tool
		ok         bool
		name, want string
	}{
		{`{"type":"json_schema","json_schema":{"name":"weather","schema":{"type":"object","properties":{"c":{"type":"number"}}}}}`, nil, true, "weather", `{"type":"object","properties":{"c":{"type":"number"}}}`},
		{`{"type":"json_object"}`, nil, true, "json_response", `{"type":"object","properties":{}}`},
		{`{"type":"json_schema","json_schema":{"name":"bad name!","schema":{"type":"object"}}}`, nil, true, "json_response", `{"type":"object"}`},
		{`{"type":"json_schema","json_schema":{"name":"x","schema":[1]}}`, nil, true, "x", `{"type":"object","properties":{}}`},
		{`{"type":"text"}`, nil, false, "", ""},
		{`{"type":"json_object"}`, tools, false, "", ""},
		{``, nil, false, "", ""},
		{`not json`, nil, false, "", ""},
	}
	for _, tt := range tests {
		s, ok := structuredOf(&llm.Request{ResponseFormat: json.RawMessage(tt.rf), Tools: tt.tools})
		if ok != tt.ok || ok && (s.name != tt.name || string(s.schema) != tt.want) {
			t.Errorf("structuredOf(%s, %d tools) = %+v %v; want %s %s %v", tt.rf, len(tt.tools), s, ok, tt.name, tt.want, tt.ok)
		}
	}
}

// The encoder sends a JSON schema as a forced tool; the answer's tool call
// comes back as its text.
func TestStructured_EncodeAndAnswer(t *testing.T) {
	req := &llm.Request{Model: "claude", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		ResponseFormat: json.RawMessage(`{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"}}}`)}
	body, err := EncodeRequest(req, false)
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &sent); err != nil || len(sent.Tools) != 1 || sent.Tools[0].Name != "w" ||
		string(sent.Tools[0].InputSchema) != `{"type":"object"}` || string(sent.ToolChoice) != `{"type":"tool","name":"w"}` {
		t.Fatalf("body %s (%v): want the schema as a forced tool", body, err)
	}
	resp := &llm.Response{FinishReason: llm.FinishToolCalls,
		Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t", Name: "w", Arguments: `{"a":1}`}}}}
	s, _ := structuredOf(req)
	s.answer(resp)
	if resp.Message.Content != `{"a":1}` || resp.Message.ToolCalls != nil || resp.FinishReason != llm.FinishStop {
		t.Fatalf("answer = %+v", resp)
	}
}

// fixedChunks is a stream of fixed chunks.
type fixedChunks struct{ cs []llm.Chunk }

func (c *fixedChunks) Next() (llm.Chunk, error) {
	if len(c.cs) == 0 {
		return llm.Chunk{}, io.EOF
	}
	x := c.cs[0]
	c.cs = c.cs[1:]
	return x, nil
}
func (c *fixedChunks) Close() error { return nil }

func TestStructured_StreamComesAsText(t *testing.T) {
	inner := &fixedChunks{cs: []llm.Chunk{
		{Role: llm.RoleAssistant},
		{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "t", Name: "w"}}},
		{ToolCalls: []llm.ToolCallDelta{{Index: 0, Arguments: `{"a":`}}},
		{ToolCalls: []llm.ToolCallDelta{{Index: 0, Arguments: `1}`}}},
		{FinishReason: llm.FinishToolCalls},
	}}
	st := &structuredStream{Stream: inner, s: structured{name: "w"}}
	var text strings.Builder
	var finish llm.FinishReason
	for {
		c, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(c.ToolCalls) > 0 {
			t.Fatalf("a tool call reached the caller: %+v", c)
		}
		text.WriteString(c.Content)
		if c.FinishReason != "" {
			finish = c.FinishReason
		}
	}
	if text.String() != `{"a":1}` || finish != llm.FinishStop {
		t.Fatalf("text %q finish %q", text.String(), finish)
	}
}
