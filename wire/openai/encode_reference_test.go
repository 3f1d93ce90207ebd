package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// chatMessage is one message of a request. Content is nil for an
// assistant turn that only calls tools ("content": null, as OpenAI itself
// returns it), a *string for a text turn, a []chatPart for one with parts.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// chatPart is one part of a list content: text, image_url or file.
type chatPart struct {
	Type     string        `json:"type"`
	Text     *string       `json:"text,omitempty"`
	ImageURL *chatImageURL `json:"image_url,omitempty"`
	File     *chatFile     `json:"file,omitempty"`
	Audio    *chatAudio    `json:"input_audio,omitempty"`
}

type chatAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

type chatImageURL struct {
	URL string `json:"url"`
}

type chatFile struct {
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
}

// partsReference is the list content of m.
func partsReference(m *llm.Message) ([]chatPart, error) {
	text := func(s string) chatPart { return chatPart{Type: "text", Text: &s} }
	var out []chatPart
	if m.Content != "" {
		out = append(out, text(m.Content))
	}
	for i, p := range m.Parts {
		url := p.URL
		if url == "" {
			url = "data:" + p.MediaType + ";base64," + p.Data
		}
		switch {
		case p.Kind == llm.PartText:
			out = append(out, text(p.Text))
		case p.Kind == llm.PartImage && (p.URL != "" || p.MediaType != ""):
			out = append(out, chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: url}})
		case p.Kind == llm.PartDocument && p.URL == "" && p.Data != "" && p.MediaType != "":
			name := p.Title
			if name == "" {
				name = "document.pdf"
			}
			out = append(out, chatPart{Type: "file", File: &chatFile{FileData: url, Filename: name}})
		case p.Kind == llm.PartAudio && p.URL == "" && (p.MediaType == "audio/wav" || p.MediaType == "audio/mp3"):
			out = append(out, chatPart{Type: "input_audio", Audio: &chatAudio{Data: p.Data, Format: strings.TrimPrefix(p.MediaType, "audio/")}})
		default:
			return nil, fmt.Errorf("part %d has no form", i)
		}
	}
	return out, nil
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
	Strict      bool            `json:"strict,omitempty"`
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
				Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict,
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
	var cv any = &content
	if len(m.Parts) > 0 && (m.Role == llm.RoleSystem || m.Role == llm.RoleTool) {
		return out, errors.New("parts on a system or tool message")
	}
	if len(m.Parts) > 0 {
		parts, err := partsReference(m)
		if err != nil {
			return out, err
		}
		cv = parts
	}
	switch m.Role {
	case llm.RoleSystem, llm.RoleUser:
		out.Content, out.Name = cv, m.Name
	case llm.RoleAssistant:
		out.Name = m.Name
		if content != "" || len(m.Parts) > 0 || len(m.ToolCalls) == 0 {
			out.Content = cv
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
		out.Content, out.ToolCallID = cv, m.ToolCallID
	default:
		return out, fmt.Errorf("unknown role %q", m.Role)
	}
	return out, nil
}

// FuzzEncodeRequestMatchesReference holds EncodeRequest to the
// encoding/json encoder byte for byte, errors included.
func FuzzEncodeRequestMatchesReference(f *testing.F) {
	f.Add("gpt", "sys", "hello <b>&\u2028\x00\xff", "call_1", "{\"a\":1}", byte(0), 0.7, 64, "END", []byte(`"auto"`), []byte(`{"type":"object"}`), true, byte(0))
	f.Add("", "", "", "", "", byte(7), 1e-7, -1, "", []byte(nil), []byte(` [ 1 ] `), false, byte(0xff))
	f.Add("m", "a\tb", "x", "", "", byte(3), 1e21, 0, "\n", []byte(`{bad`), []byte(nil), true, byte(0x1f))
	f.Add("m", "image/png", "iVBORw0KGgo=", "", "https://x.test/a.png", byte(1), 0.0, 0, "a.pdf", []byte(nil), []byte(nil), false, byte(0x0f))
	f.Fuzz(func(t *testing.T, model, system, text, callID, args string, shape byte, temp float64, maxTokens int,
		stop string, toolChoice, params []byte, stream bool, parts byte) {
		req := &llm.Request{Model: model, MaxTokens: maxTokens, ToolChoice: toolChoice}
		roles := []llm.Role{llm.RoleSystem, llm.RoleUser, llm.RoleAssistant, llm.RoleTool, "bogus"}
		req.Messages = append(req.Messages, llm.Message{Role: roles[int(shape)%len(roles)], Content: system, Name: text, ToolCallID: callID})
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: text,
			Parts: fuzzParts(parts, text, args, system, stop)})
		if shape&4 != 0 && shape&2 != 0 {
			req.Messages[0].Parts = req.Messages[1].Parts
		}
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

// fuzzParts returns the parts sel picks (its low bits): text, an image by
// URL or inline, a document inline or by URL, each from the fuzzer's
// strings (empty ones included, which some encoders refuse).
func fuzzParts(sel byte, text, url, mediaType, title string) []llm.Part {
	var out []llm.Part
	if sel&1 != 0 {
		out = append(out, llm.Part{Kind: llm.PartText, Text: text})
	}
	if sel&2 != 0 {
		out = append(out, llm.Part{Kind: llm.PartImage, URL: url})
	}
	if sel&4 != 0 {
		out = append(out, llm.Part{Kind: llm.PartImage, Data: text, MediaType: mediaType})
	}
	if sel&8 != 0 {
		out = append(out, llm.Part{Kind: llm.PartDocument, Data: text, MediaType: mediaType, Title: title})
	}
	if sel&16 != 0 {
		out = append(out, llm.Part{Kind: llm.PartDocument, URL: url, Title: title})
	}
	if sel&32 != 0 {
		out = append(out, llm.Part{Kind: llm.PartDocument, Text: text, MediaType: "text/plain", Title: title})
	}
	if sel&64 != 0 {
		out = append(out, llm.Part{Kind: "video", URL: url})
	}
	if sel&128 != 0 {
		out = append(out, llm.Part{Kind: llm.PartAudio, Data: text, MediaType: mediaType})
	}
	return out
}
