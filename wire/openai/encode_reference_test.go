package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/detourhq/detour/llm"
)

// This file keeps the first EncodeRequest, built on encoding/json and
// structs in OpenAI's field order, as the reference the hand encoder is
// fuzzed against (FuzzEncodeRequestMatchesReference).

// chatRequest is the body of POST /chat/completions, in the field order
// OpenAI documents.
type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []chatMessage   `json:"messages"`
	Tools          []chatTool      `json:"tools,omitempty"`
	ToolChoice     json.RawMessage `json:"tool_choice,omitempty"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	TopP           *float64        `json:"top_p,omitempty"`
	Stop           []string        `json:"stop,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	Stream         bool            `json:"stream,omitempty"`
	StreamOptions  *streamOptions  `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message of a request. Content is a pointer so that an
// assistant turn that only calls tools sends "content": null, as OpenAI
// itself returns it, while other turns always send a string.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatFunctionCall `json:"function"`
}

type chatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// encodeRequestReference is the encoding/json EncodeRequest.
func encodeRequestReference(req *llm.Request, stream bool) ([]byte, error) {
	if req == nil {
		return nil, errors.New("openai: nil request")
	}
	body := chatRequest{
		Model:          req.Model,
		Messages:       make([]chatMessage, 0, len(req.Messages)),
		ToolChoice:     req.ToolChoice,
		MaxTokens:      req.MaxTokens,
		Temperature:    req.Temperature,
		TopP:           req.TopP,
		Stop:           req.Stop,
		ResponseFormat: req.ResponseFormat,
		Stream:         stream,
	}
	if stream {
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	for i := range req.Messages {
		m, err := encodeMessageReference(&req.Messages[i])
		if err != nil {
			return nil, fmt.Errorf("openai: message %d: %w", i, err)
		}
		body.Messages = append(body.Messages, m)
	}
	if len(req.Tools) > 0 {
		body.Tools = make([]chatTool, len(req.Tools))
		for i, t := range req.Tools {
			body.Tools[i] = chatTool{Type: "function", Function: chatFunction{
				Name: t.Name, Description: t.Description, Parameters: t.Parameters,
			}}
		}
	}
	// No HTML escaping: prompts go out byte for byte ("<" stays "<").
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&body); err != nil {
		return nil, fmt.Errorf("openai: encoding request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func encodeMessageReference(m *llm.Message) (chatMessage, error) {
	out := chatMessage{Role: string(m.Role)}
	content := m.Content
	switch m.Role {
	case llm.RoleSystem, llm.RoleUser:
		out.Content, out.Name = &content, m.Name
	case llm.RoleAssistant:
		out.Name = m.Name
		if content != "" || len(m.ToolCalls) == 0 {
			out.Content = &content
		}
		if len(m.ToolCalls) > 0 {
			out.ToolCalls = make([]chatToolCall, len(m.ToolCalls))
			for i, tc := range m.ToolCalls {
				args := tc.Arguments
				if args == "" {
					args = "{}"
				}
				out.ToolCalls[i] = chatToolCall{ID: tc.ID, Type: "function",
					Function: chatFunctionCall{Name: tc.Name, Arguments: args}}
			}
		}
	case llm.RoleTool:
		if m.ToolCallID == "" {
			return out, errors.New("tool message without tool_call_id")
		}
		out.Content, out.ToolCallID = &content, m.ToolCallID
	default:
		return out, fmt.Errorf("unknown role %q", m.Role)
	}
	return out, nil
}

// FuzzEncodeRequestMatchesReference holds EncodeRequest to the
// encoding/json encoder byte for byte, errors included.
func FuzzEncodeRequestMatchesReference(f *testing.F) {
	f.Add("gpt", "sys", "hello <b>&\u2028\x00\xff", "call_1", "{\"a\":1}", byte(0), 0.7, 64, "END", []byte(`"auto"`), []byte(`{"type":"object"}`), true)
	f.Add("", "", "", "", "", byte(7), 1e-7, -1, "", []byte(nil), []byte(` [ 1 ] `), false)
	f.Add("m", "a\tb", "x", "", "", byte(3), 1e21, 0, "\n", []byte(`{bad`), []byte(nil), true)
	f.Fuzz(func(t *testing.T, model, system, text, callID, args string, shape byte, temp float64, maxTokens int,
		stop string, toolChoice, params []byte, stream bool) {
		req := &llm.Request{Model: model, MaxTokens: maxTokens, ToolChoice: toolChoice}
		roles := []llm.Role{llm.RoleSystem, llm.RoleUser, llm.RoleAssistant, llm.RoleTool, "bogus"}
		req.Messages = append(req.Messages, llm.Message{Role: roles[int(shape)%len(roles)], Content: system, Name: text, ToolCallID: callID})
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: text})
		if shape&8 != 0 {
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: system,
				ToolCalls: []llm.ToolCall{{ID: callID, Name: model, Arguments: args}, {ID: "c2", Name: "f"}}})
		}
		if shape&16 != 0 {
			req.Temperature, req.TopP = &temp, &temp
		}
		if shape&32 != 0 {
			req.Stop = []string{stop, text}
		}
		if shape&64 != 0 {
			req.Tools = []llm.Tool{{Name: model, Description: system, Parameters: params}, {Name: "g"}}
		}
		if shape&128 != 0 {
			req.ResponseFormat = params
		}
		want, werr := encodeRequestReference(req, stream)
		got, gerr := EncodeRequest(req, stream)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("error %v, reference %v", gerr, werr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("EncodeRequest:\n%s\nreference:\n%s", got, want)
		}
	})
}
