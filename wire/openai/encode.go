package openai

import (
	"errors"
	"fmt"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// EncodeRequest returns the JSON body of an OpenAI chat completions request
// for req. The stream argument, not req.Stream, decides whether to stream;
// a streamed request also asks for a final usage chunk
// (stream_options.include_usage). Unset fields are omitted: no tools, no
// tool_choice, max_tokens 0, nil temperature and top_p, no stop sequences,
// no response_format. ToolChoice and ResponseFormat are passed through as
// they are and must be valid JSON. Reasoning becomes reasoning_effort (a
// budget by its llm.Reasoning.EffortLevel).
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
	size := 128 + len(req.Model) + len(req.ToolChoice) + len(req.ResponseFormat)
	for i := range req.Messages {
		size += 48 + len(req.Messages[i].Content)
		for j := range req.Messages[i].Parts {
			p := &req.Messages[i].Parts[j]
			size += 64 + len(p.Text) + len(p.URL) + len(p.Data) + len(p.Title)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"model":`...)
	b = jsonw.String(b, req.Model)
	b = append(b, `,"messages":[`...)
	for i := range req.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendMessage(b, &req.Messages[i]); err != nil {
			return nil, fmt.Errorf("openai: message %d: %w", i, err)
		}
	}
	b = append(b, ']')
	var err error
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range req.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"function","function":{"name":`...)
			b = jsonw.String(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = jsonw.String(b, t.Description)
			}
			if len(t.Parameters) > 0 {
				b = append(b, `,"parameters":`...)
				if b, err = jsonw.Raw(b, t.Parameters); err != nil {
					return nil, encodeError("tools", err)
				}
			}
			if t.Strict {
				b = append(b, `,"strict":true`...)
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if len(req.ToolChoice) > 0 {
		b = append(b, `,"tool_choice":`...)
		if b, err = jsonw.Raw(b, req.ToolChoice); err != nil {
			return nil, encodeError("tool_choice", err)
		}
	}
	if req.MaxTokens != 0 {
		b = append(b, `,"max_tokens":`...)
		b = jsonw.Int(b, req.MaxTokens)
	}
	if req.Temperature != nil {
		b = append(b, `,"temperature":`...)
		if b, err = jsonw.Float(b, *req.Temperature); err != nil {
			return nil, encodeError("temperature", err)
		}
	}
	if r := req.Reasoning; r != nil && (r.Effort != "" || r.Budget > 0) {
		b = append(b, `,"reasoning_effort":`...)
		b = jsonw.String(b, r.EffortLevel())
	}
	if req.TopP != nil {
		b = append(b, `,"top_p":`...)
		if b, err = jsonw.Float(b, *req.TopP); err != nil {
			return nil, encodeError("top_p", err)
		}
	}
	if len(req.Stop) > 0 {
		b = append(b, `,"stop":`...)
		b = jsonw.Strings(b, req.Stop)
	}
	if len(req.ResponseFormat) > 0 {
		b = append(b, `,"response_format":`...)
		if b, err = jsonw.Raw(b, req.ResponseFormat); err != nil {
			return nil, encodeError("response_format", err)
		}
	}
	if stream {
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(b, '}'), nil
}

// encodeError is the error for a field that cannot be written.
func encodeError(field string, err error) error {
	return fmt.Errorf("openai: encoding request: %s: %w", field, err)
}

// appendMessage appends one message of a request: role, content (null for
// an assistant turn that only calls tools), name, tool_calls and
// tool_call_id, in that order.
func appendMessage(b []byte, m *llm.Message) ([]byte, error) {
	var name, toolCallID string
	content := true
	switch m.Role {
	case llm.RoleSystem, llm.RoleUser:
		name = m.Name
	case llm.RoleAssistant:
		name = m.Name
		content = m.Content != "" || len(m.Parts) > 0 || len(m.ToolCalls) == 0
	case llm.RoleTool:
		if m.ToolCallID == "" {
			return b, errors.New("tool message without tool_call_id")
		}
		toolCallID = m.ToolCallID
	default:
		return b, fmt.Errorf("unknown role %q", m.Role)
	}
	if len(m.Parts) > 0 && (m.Role == llm.RoleSystem || m.Role == llm.RoleTool) {
		return b, fmt.Errorf("a %s message with parts: only user and assistant turns carry them", m.Role)
	}
	b = append(b, `{"role":`...)
	b = jsonw.String(b, string(m.Role))
	b = append(b, `,"content":`...)
	switch {
	case len(m.Parts) > 0:
		var err error
		if b, err = appendParts(b, m); err != nil {
			return b, err
		}
	case content:
		b = jsonw.String(b, m.Content)
	default:
		b = append(b, "null"...)
	}
	if name != "" {
		b = append(b, `,"name":`...)
		b = jsonw.String(b, name)
	}
	if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			b = append(b, `{"id":`...)
			b = jsonw.String(b, tc.ID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsonw.String(b, tc.Name)
			b = append(b, `,"arguments":`...)
			b = jsonw.String(b, args)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if toolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = jsonw.String(b, toolCallID)
	}
	return append(b, '}'), nil
}

// audioFormat is input_audio's format of each audio media type it takes.
var audioFormat = map[string]string{"audio/wav": "wav", "audio/mp3": "mp3"}

// defaultFilename is the file name of a document without a Title: OpenAI
// refuses file_data without one.
const defaultFilename = "document.pdf"

// appendParts appends the content of m as a list of parts: Content first
// when not empty, then each of m.Parts.
func appendParts(b []byte, m *llm.Message) ([]byte, error) {
	b = append(b, '[')
	n := 0
	if m.Content != "" {
		b = appendTextPart(b, m.Content)
		n++
	}
	for i := range m.Parts {
		p := &m.Parts[i]
		if n > 0 {
			b = append(b, ',')
		}
		n++
		switch {
		case p.Kind == llm.PartText:
			b = appendTextPart(b, p.Text)
		case p.Kind == llm.PartImage && (p.URL != "" || p.MediaType != ""):
			b = append(b, `{"type":"image_url","image_url":{"url":`...)
			b = appendURL(b, p)
			b = append(b, "}}"...)
		case p.Kind == llm.PartDocument && p.URL == "" && p.Data != "" && p.MediaType != "":
			title := p.Title
			if title == "" {
				title = defaultFilename
			}
			b = append(b, `{"type":"file","file":{"file_data":`...)
			b = appendURL(b, p)
			b = append(b, `,"filename":`...)
			b = jsonw.String(b, title)
			b = append(b, "}}"...)
		case p.Kind == llm.PartAudio && p.URL == "" && audioFormat[p.MediaType] != "":
			b = append(b, `{"type":"input_audio","input_audio":{"data":`...)
			b = jsonw.String(b, p.Data)
			b = append(b, `,"format":`...)
			b = jsonw.String(b, audioFormat[p.MediaType])
			b = append(b, "}}"...)
		default:
			return b, fmt.Errorf("part %d: %s", i, partError(p))
		}
	}
	return append(b, ']'), nil
}

// partError says why p has no chat completions form.
func partError(p *llm.Part) string {
	switch {
	case p.Kind == llm.PartImage:
		return "an inline image without a media type"
	case p.Kind == llm.PartDocument && p.URL != "":
		return "a document by URL has no chat completions form"
	case p.Kind == llm.PartDocument:
		return "a document needs inline data and its media type"
	case p.Kind == llm.PartAudio:
		return "audio must be inline WAV or MP3"
	}
	return fmt.Sprintf("unknown part kind %q", p.Kind)
}

func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"type":"text","text":`...)
	b = jsonw.String(b, text)
	return append(b, '}')
}

// appendURL appends p's URL, or its inline data as a data URL, as a JSON
// string.
func appendURL(b []byte, p *llm.Part) []byte {
	if p.URL != "" {
		return jsonw.String(b, p.URL)
	}
	return jsonw.String(b, dataURL(p))
}

// dataURL is "data:<media type>;base64,<data>".
func dataURL(p *llm.Part) string { return "data:" + p.MediaType + ";base64," + p.Data }
