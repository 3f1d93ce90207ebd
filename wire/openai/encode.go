package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/detourhq/detour/llm"
)

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

// EncodeRequest returns the JSON body of an OpenAI chat completions request
// for req. The stream argument, not req.Stream, decides whether to stream;
// a streamed request also asks for a final usage chunk
// (stream_options.include_usage). Unset fields are omitted: no tools, no
// tool_choice, max_tokens 0, nil temperature and top_p, no stop sequences,
// no response_format. ToolChoice and ResponseFormat are passed through as
// they are and must be valid JSON.
//
// Messages map one to one: system, user and assistant turns carry their
// content (an assistant turn with tool calls and no text sends
// "content": null), an assistant's ToolCalls become
// [{id, type:"function", function:{name, arguments}}], and a tool turn
// carries tool_call_id. Name is sent as the author name on system, user
// and assistant turns; on a tool turn it is not sent (OpenAI has no such
// field there). An empty Arguments is sent as "{}".
func EncodeRequest(req *llm.Request, stream bool) ([]byte, error) {
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
		m, err := encodeMessage(&req.Messages[i])
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

func encodeMessage(m *llm.Message) (chatMessage, error) {
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
