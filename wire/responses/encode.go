package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// EncodeRequest returns the JSON body of a Responses API request for req,
// with store: false (Client.Store sends true). The stream argument, not
// req.Stream, decides whether to stream. Unset fields are omitted.
//
// The system turns that open the conversation become instructions (joined
// by a blank line); a later system turn is an input message of role
// system. User and assistant turns are input messages: text as a string,
// or, with parts, input_text, input_image (a URL or a data URL) and
// input_file (a PDF as file_data with its title as filename, or a
// file_url) parts; an assistant turn carries text only. An assistant's
// ToolCalls become function_call items (an empty Arguments is sent as
// "{}"), a tool turn a function_call_output item. Name is not sent: the
// Responses API has no author names.
//
// Tools become function tools ({type, name, description, parameters,
// strict}); ToolChoice is taken in chat completions' shape ("auto",
// "none", "required", {"type":"function","function":{"name"}}) or the
// Responses one ({"type":"function","name"}). MaxTokens is
// max_output_tokens; ResponseFormat ({"type":"json_object"}, a
// json_schema object, {"type":"text"}) is text.format; Reasoning is
// reasoning.effort (a budget by its llm.Reasoning.EffortLevel). The API
// takes no stop sequences: Stop is refused with an error (Client.Fit says
// so before a send).
func EncodeRequest(req *llm.Request, stream bool) ([]byte, error) {
	return encodeRequest(req, stream, false)
}

func encodeRequest(req *llm.Request, stream, store bool) ([]byte, error) {
	if req == nil {
		return nil, errors.New("responses: nil request")
	}
	if len(req.Stop) > 0 {
		return nil, errors.New("responses: the Responses API takes no stop sequences")
	}
	size := 160 + len(req.Model) + len(req.ToolChoice) + len(req.ResponseFormat)
	for i := range req.Messages {
		size += 64 + len(req.Messages[i].Content)
		for j := range req.Messages[i].Parts {
			p := &req.Messages[i].Parts[j]
			size += 64 + len(p.Text) + len(p.URL) + len(p.Data) + len(p.Title)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"model":`...)
	b = jsonw.String(b, req.Model)
	msgs := req.Messages
	var instructions []string
	for len(msgs) > 0 && msgs[0].Role == llm.RoleSystem {
		if len(msgs[0].Parts) > 0 {
			return nil, errors.New("responses: message 0: a system message with parts: only user and assistant turns carry them")
		}
		instructions = append(instructions, msgs[0].Content)
		msgs = msgs[1:]
	}
	if len(instructions) > 0 {
		b = append(b, `,"instructions":`...)
		b = jsonw.String(b, joinInstructions(instructions))
	}
	b = append(b, `,"input":[`...)
	n := 0
	for i := range msgs {
		var err error
		if b, n, err = appendItems(b, n, &msgs[i]); err != nil {
			return nil, fmt.Errorf("responses: message %d: %w", i+len(req.Messages)-len(msgs), err)
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
			b = append(b, `{"type":"function","name":`...)
			b = jsonw.String(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = jsonw.String(b, t.Description)
			}
			b = append(b, `,"parameters":`...)
			if len(t.Parameters) > 0 {
				if b, err = jsonw.Raw(b, t.Parameters); err != nil {
					return nil, encodeError("tools", err)
				}
			} else {
				b = append(b, `{"type":"object","properties":{}}`...)
			}
			// strict defaults to true in the Responses API (it is false
			// in chat completions): always say which.
			b = append(b, `,"strict":`...)
			if t.Strict {
				b = append(b, "true}"...)
			} else {
				b = append(b, "false}"...)
			}
		}
		b = append(b, ']')
	}
	if len(req.ToolChoice) > 0 {
		tc, err := toolChoice(req.ToolChoice)
		if err != nil {
			return nil, encodeError("tool_choice", err)
		}
		b = append(b, `,"tool_choice":`...)
		b = append(b, tc...)
	}
	if req.MaxTokens != 0 {
		b = append(b, `,"max_output_tokens":`...)
		b = jsonw.Int(b, req.MaxTokens)
	}
	if req.Temperature != nil {
		b = append(b, `,"temperature":`...)
		if b, err = jsonw.Float(b, *req.Temperature); err != nil {
			return nil, encodeError("temperature", err)
		}
	}
	if req.TopP != nil {
		b = append(b, `,"top_p":`...)
		if b, err = jsonw.Float(b, *req.TopP); err != nil {
			return nil, encodeError("top_p", err)
		}
	}
	if len(req.ResponseFormat) > 0 {
		format, err := textFormat(req.ResponseFormat)
		if err != nil {
			return nil, encodeError("response_format", err)
		}
		if format != nil {
			b = append(b, `,"text":{"format":`...)
			b = append(b, format...)
			b = append(b, '}')
		}
	}
	if r := req.Reasoning; r != nil && (r.Effort != "" || r.Budget > 0) {
		b = append(b, `,"reasoning":{"effort":`...)
		b = jsonw.String(b, r.EffortLevel())
		b = append(b, '}')
	}
	if stream {
		b = append(b, `,"stream":true`...)
	}
	if store {
		b = append(b, `,"store":true`...)
	} else {
		b = append(b, `,"store":false`...)
	}
	return append(b, '}'), nil
}

// joinInstructions joins the leading system turns.
func joinInstructions(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	var b bytes.Buffer
	for i, v := range s {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(v)
	}
	return b.String()
}

// encodeError is the error for a field that cannot be written.
func encodeError(field string, err error) error {
	return fmt.Errorf("responses: encoding request: %s: %w", field, err)
}

// appendItems appends the input items of m after the n already written:
// a message (unless it is an assistant turn that only calls tools), then
// one function_call per tool call; a tool turn is a function_call_output.
func appendItems(b []byte, n int, m *llm.Message) ([]byte, int, error) {
	sep := func() {
		if n > 0 {
			b = append(b, ',')
		}
		n++
	}
	switch m.Role {
	case llm.RoleTool:
		if m.ToolCallID == "" {
			return b, n, errors.New("tool message without tool_call_id")
		}
		if len(m.Parts) > 0 {
			return b, n, errors.New("a tool message with parts: only user and assistant turns carry them")
		}
		sep()
		b = append(b, `{"type":"function_call_output","call_id":`...)
		b = jsonw.String(b, m.ToolCallID)
		b = append(b, `,"output":`...)
		b = jsonw.String(b, m.Content)
		return append(b, '}'), n, nil
	case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant:
	default:
		return b, n, fmt.Errorf("unknown role %q", m.Role)
	}
	if len(m.Parts) > 0 && m.Role == llm.RoleSystem {
		return b, n, errors.New("a system message with parts: only user and assistant turns carry them")
	}
	if m.Role != llm.RoleAssistant || m.Content != "" || len(m.Parts) > 0 || len(m.ToolCalls) == 0 {
		sep()
		b = append(b, `{"role":`...)
		b = jsonw.String(b, string(m.Role))
		b = append(b, `,"content":`...)
		if len(m.Parts) > 0 {
			var err error
			if b, err = appendParts(b, m); err != nil {
				return b, n, err
			}
		} else {
			b = jsonw.String(b, m.Content)
		}
		b = append(b, '}')
	}
	if m.Role == llm.RoleAssistant {
		for _, tc := range m.ToolCalls {
			sep()
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			b = append(b, `{"type":"function_call","call_id":`...)
			b = jsonw.String(b, tc.ID)
			b = append(b, `,"name":`...)
			b = jsonw.String(b, tc.Name)
			b = append(b, `,"arguments":`...)
			b = jsonw.String(b, args)
			b = append(b, '}')
		}
	}
	return b, n, nil
}

// defaultFilename is the file name of a document without a Title: the
// API refuses file_data without one.
const defaultFilename = "document.pdf"

// appendParts appends the content of m as a list of parts: Content first
// when not empty, then each of m.Parts. An assistant turn's text is
// output_text (the Responses API's word for what the model wrote); it
// carries nothing else.
func appendParts(b []byte, m *llm.Message) ([]byte, error) {
	textType := "input_text"
	if m.Role == llm.RoleAssistant {
		textType = "output_text"
	}
	b = append(b, '[')
	n := 0
	text := func(s string) {
		b = append(b, `{"type":"`...)
		b = append(b, textType...)
		b = append(b, `","text":`...)
		b = jsonw.String(b, s)
		b = append(b, '}')
	}
	if m.Content != "" {
		text(m.Content)
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
			text(p.Text)
		case m.Role == llm.RoleAssistant:
			return b, fmt.Errorf("part %d: an assistant turn carries text only in the Responses API", i)
		case p.Kind == llm.PartImage && (p.URL != "" || p.MediaType != ""):
			b = append(b, `{"type":"input_image","image_url":`...)
			b = appendURL(b, p)
			b = append(b, `,"detail":"auto"}`...)
		case p.Kind == llm.PartDocument && p.URL != "":
			b = append(b, `{"type":"input_file","file_url":`...)
			b = jsonw.String(b, p.URL)
			b = append(b, '}')
		case p.Kind == llm.PartDocument && p.Data != "" && p.MediaType != "":
			title := p.Title
			if title == "" {
				title = defaultFilename
			}
			b = append(b, `{"type":"input_file","filename":`...)
			b = jsonw.String(b, title)
			b = append(b, `,"file_data":`...)
			b = appendURL(b, p)
			b = append(b, '}')
		default:
			return b, fmt.Errorf("part %d: %s", i, partError(p))
		}
	}
	return append(b, ']'), nil
}

// partError says why p has no Responses form.
func partError(p *llm.Part) string {
	switch p.Kind {
	case llm.PartImage:
		return "an inline image without a media type"
	case llm.PartDocument:
		return "a document needs inline data and its media type, or a URL"
	case llm.PartAudio:
		return "the Responses API takes no audio input"
	}
	return fmt.Sprintf("unknown part kind %q", p.Kind)
}

// appendURL appends p's URL, or its inline data as a data URL, as a JSON
// string.
func appendURL(b []byte, p *llm.Part) []byte {
	if p.URL != "" {
		return jsonw.String(b, p.URL)
	}
	return jsonw.String(b, "data:"+p.MediaType+";base64,"+p.Data)
}

// toolChoice turns a tool_choice in chat completions' shape (or the
// Responses one) into the Responses one.
func toolChoice(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	var word string
	if json.Unmarshal(raw, &word) == nil {
		switch word {
		case "auto", "none", "required":
			return jsonw.String(nil, word), nil
		}
		return nil, fmt.Errorf("%q is not one of auto, none, required", word)
	}
	var obj struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, errors.New("must be a string or an object")
	}
	name := obj.Name
	if obj.Function != nil && obj.Function.Name != "" {
		name = obj.Function.Name
	}
	if obj.Type != "function" || name == "" {
		return nil, fmt.Errorf("%s is not a function by name", raw)
	}
	b := append([]byte(nil), `{"type":"function","name":`...)
	b = jsonw.String(b, name)
	return append(b, '}'), nil
}

// textFormat turns a response_format in chat completions' shape into the
// Responses text.format: nil for plain text.
func textFormat(raw json.RawMessage) ([]byte, error) {
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, errors.New("must be an object {type: text | json_object | json_schema}")
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return []byte(`{"type":"json_object"}`), nil
	case "json_schema":
		js := rf.JSONSchema
		if js == nil || js.Name == "" || len(js.Schema) == 0 {
			return nil, errors.New("a json_schema format needs a name and a schema")
		}
		b := append([]byte(nil), `{"type":"json_schema","name":`...)
		b = jsonw.String(b, js.Name)
		if js.Description != "" {
			b = append(b, `,"description":`...)
			b = jsonw.String(b, js.Description)
		}
		b = append(b, `,"schema":`...)
		var err error
		if b, err = jsonw.Raw(b, js.Schema); err != nil {
			return nil, err
		}
		if js.Strict != nil {
			b = append(b, `,"strict":`...)
			if *js.Strict {
				b = append(b, "true"...)
			} else {
				b = append(b, "false"...)
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("type %q is not one of text, json_object, json_schema", rf.Type)
}
