package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// The OpenAI surface: POST /v1/chat/completions in, chat.completion and
// chat.completion.chunk out, as the official SDKs read them (CLIENTS.md §4).

// oaRequest is the part of a chat completions request detour reads; other
// fields (user, seed, metadata, ...) are accepted and ignored.
type oaRequest struct {
	Model               string           `json:"model"`
	Models              []string         `json:"models"`
	Messages            []oaMessage      `json:"messages"`
	Tools               []oaTool         `json:"tools"`
	ToolChoice          json.RawMessage  `json:"tool_choice"`
	MaxTokens           *int             `json:"max_tokens"`
	MaxCompletionTokens *int             `json:"max_completion_tokens"`
	Temperature         *float64         `json:"temperature"`
	TopP                *float64         `json:"top_p"`
	Stop                json.RawMessage  `json:"stop"`
	ResponseFormat      json.RawMessage  `json:"response_format"`
	Stream              *bool            `json:"stream"`
	StreamOptions       *oaStreamOptions `json:"stream_options"`
	N                   *int             `json:"n"`
}

type oaStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaMessage struct {
	Role       string         `json:"role"`
	Content    oaContentField `json:"content"`
	Name       string         `json:"name"`
	ToolCalls  []oaToolCall   `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
}

type oaToolCall struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Function oaFunctionCall `json:"function"`
}

type oaFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaTool struct {
	Type     string         `json:"type"`
	Function *oaFunctionDef `json:"function"`
}

type oaFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// oaPart is one part of an array content.
type oaPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text"`
	Refusal    string      `json:"refusal"`
	ImageURL   *oaImageURL `json:"image_url"`
	File       *oaFile     `json:"file"`
	InputAudio *oaAudio    `json:"input_audio"`
}

// parseOpenAI reads a chat completions body into cr; a body it cannot use
// is a 400 naming the offending field.
func parseOpenAI(body []byte, cr *chatRequest) *apiError {
	var in oaRequest
	if !parseOARequestFast(string(body), &in) {
		in = oaRequest{}
		if ae := decodeJSON(body, &in); ae != nil {
			return ae
		}
	}
	if ae := checkModels(in.Model, in.Models); ae != nil {
		return ae
	}
	req := &llm.Request{Temperature: in.Temperature, TopP: in.TopP}
	cr.req, cr.model, cr.models = req, in.Model, in.Models
	if in.Stream != nil {
		cr.stream = *in.Stream
	}
	cr.includeUsage = cr.stream && in.StreamOptions != nil && in.StreamOptions.IncludeUsage
	// n > 1 reaches a target of this dialect raw; another dialect's
	// target is skipped for it (needs).
	switch mt := firstInt(in.MaxCompletionTokens, in.MaxTokens); {
	case mt == nil:
	case *mt < 1:
		return badRequest("max_tokens", "max_tokens must be at least 1, not %d", *mt)
	default:
		req.MaxTokens = *mt
	}
	if len(in.Messages) == 0 {
		return badRequest("messages", "messages is required: a non-empty list of {role, content}")
	}
	req.Messages = make([]llm.Message, 0, len(in.Messages))
	for i := range in.Messages {
		m, ae := in.Messages[i].canonical(i)
		if ae != nil {
			return ae
		}
		if m.Role != "" {
			req.Messages = append(req.Messages, m)
		}
	}
	for i, t := range in.Tools {
		if t.Type != "" && t.Type != "function" {
			continue // a tool of another type (custom, web search): a need, not a canonical tool
		}
		if t.Function == nil || t.Function.Name == "" {
			return badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d] must be {type: function, function: {name, parameters}}", i)
		}
		req.Tools = append(req.Tools, llm.Tool{Name: t.Function.Name, Description: t.Function.Description,
			Parameters: present(t.Function.Parameters)})
	}
	req.ToolChoice = present(in.ToolChoice)
	req.ResponseFormat = present(in.ResponseFormat)
	stop, ae := stopList(in.Stop, "stop")
	req.Stop = stop
	req.Stream = cr.stream
	return ae
}

// msgParam names message i in an error: messages[i]. Built only when a
// message is refused, so a valid request formats no names.
func msgParam(i int) string { return "messages[" + strconv.Itoa(i) + "]" }

// canonical turns message i into llm's shape.
func (m *oaMessage) canonical(i int) (llm.Message, *apiError) {
	out := llm.Message{Name: m.Name}
	switch m.Role {
	case "system", "developer":
		out.Role = llm.RoleSystem
	case "user":
		out.Role = llm.RoleUser
	case "assistant":
		out.Role = llm.RoleAssistant
	case "tool":
		out.Role = llm.RoleTool
		if m.ToolCallID == "" {
			return out, badRequest(msgParam(i)+".tool_call_id", "%s.tool_call_id is required on a tool message", msgParam(i))
		}
		out.ToolCallID, out.Name = m.ToolCallID, ""
	case "function":
		// Legacy function calling: it reaches a target of this dialect
		// raw; another dialect's is skipped for it (needs). No canonical
		// message (Role stays empty).
		return llm.Message{}, nil
	case "":
		return out, badRequest(msgParam(i)+".role", "%s.role is required", msgParam(i))
	default:
		return out, badRequest(msgParam(i)+".role", "%s.role %q is not one of system, developer, user, assistant, tool, function", msgParam(i), m.Role)
	}
	text, parts, ae := oaContent(m.Content, i)
	if ae != nil {
		return out, ae
	}
	out.Content, out.Parts = text, parts
	if len(m.ToolCalls) > 0 && out.Role != llm.RoleAssistant {
		return out, badRequest(msgParam(i)+".tool_calls", "only assistant messages carry tool_calls")
	}
	for j, tc := range m.ToolCalls {
		if tc.ID == "" || tc.Function.Name == "" {
			return out, badRequest(fmt.Sprintf("%s.tool_calls[%d]", msgParam(i), j), "a tool call needs an id and function.name")
		}
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out, nil
}

// oaContentField is a message's content as read: a string's text, or
// the JSON of anything else (a list of parts, or a value detour refuses)
// for oaContent to read. null leaves both empty.
type oaContentField struct {
	Text string
	Raw  json.RawMessage // set when the content is not a string or null
}

// UnmarshalJSON reads a content value of a valid JSON document.
func (c *oaContentField) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &c.Text)
	case string(b) == "null":
		return nil
	}
	c.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// oaContent reads message i's content: a string, null, or an array of
// parts. Text parts alone are joined by newlines into the text; with an
// image, a PDF or audio among them, the parts are returned in order
// instead (llm.Message.Parts). Parts detour cannot translate (a file by
// id, ...) are left out: they reach a target of this dialect raw, and
// another dialect's is skipped for them (needs).
func oaContent(c oaContentField, i int) (string, []llm.Part, *apiError) {
	raw := c.Raw
	if len(raw) == 0 {
		return c.Text, nil, nil
	}
	param := msgParam(i) + ".content"
	var parts []oaPart
	if raw[0] != '[' || json.Unmarshal(raw, &parts) != nil {
		return "", nil, badRequest(param, "%s must be a string or a list of {type: text, text}", param)
	}
	media := false
	for j := range parts {
		if _, ok := oaMediaPart(&parts[j]); ok {
			media = true
			break
		}
	}
	if media {
		out := make([]llm.Part, 0, len(parts))
		for j := range parts {
			if p, ok := oaMediaPart(&parts[j]); ok {
				out = append(out, p)
			} else if text, ok := oaText(&parts[j]); ok {
				out = append(out, llm.Part{Kind: llm.PartText, Text: text})
			}
		}
		return "", out, nil
	}
	var b strings.Builder
	for j := range parts {
		text, ok := oaText(&parts[j])
		if !ok {
			continue
		}
		if b.Len() > 0 && j > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(text)
	}
	return b.String(), nil, nil
}

// oaText returns the text of a text or refusal part.
func oaText(p *oaPart) (string, bool) {
	switch p.Type {
	case "text", "input_text":
		return p.Text, true
	case "refusal":
		return p.Refusal, true
	}
	return "", false
}

// oaMediaPart returns an image_url, file or input_audio part detour
// translates.
func oaMediaPart(p *oaPart) (llm.Part, bool) {
	switch p.Type {
	case "image_url":
		return oaImagePart(p.ImageURL)
	case "file":
		return oaFilePart(p.File)
	case "input_audio":
		return oaAudioPart(p.InputAudio)
	}
	return llm.Part{}, false
}

// decodeJSON decodes body into v, turning every failure into a 400 that
// names the field when it can.
func decodeJSON(body []byte, v any) *apiError {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return badRequest("", "the request body must be a JSON object")
	}
	err := json.Unmarshal(body, v)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		return badRequest(te.Field, "%s: expected %s, got JSON %s", te.Field, goTypeName(te.Type.String()), te.Value)
	case errors.As(err, &se):
		return badRequest("", "the request body is not valid JSON (at byte %d): %v", se.Offset, se)
	}
	return badRequest("", "the request body is not valid: %v", err)
}

// goTypeName names a Go type as JSON would.
func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case t == "string":
		return "a string"
	case t == "bool", t == "*bool":
		return "true or false"
	case strings.Contains(t, "int") || strings.Contains(t, "float"):
		return "a number"
	}
	return "an object"
}

// checkModels checks the model names a request gives.
func checkModels(model string, models []string) *apiError {
	if badModelName(model) {
		return badRequest("model", "model is not a valid model name")
	}
	for i, m := range models {
		switch {
		case m == "":
			return badRequest(fmt.Sprintf("models[%d]", i), "models[%d] is empty", i)
		case badModelName(m):
			return badRequest(fmt.Sprintf("models[%d]", i), "models[%d] is not a valid model name", i)
		}
	}
	return nil
}

// badModelName reports a model name over 256 bytes or with control
// characters.
func badModelName(m string) bool {
	return len(m) > 256 || strings.ContainsFunc(m, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// firstInt returns the first non-nil of ps.
func firstInt(ps ...*int) *int {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// present returns raw, or nil for an absent or null value.
func present(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	return raw
}

// stopList reads stop sequences: a string, a list of strings, or null.
func stopList(raw json.RawMessage, param string) ([]string, *apiError) {
	raw = present(raw)
	if raw == nil {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list, nil
	}
	return nil, badRequest(param, "%s must be a string or a list of strings", param)
}

// openAIFinish returns the finish_reason of f ("stop" when unset).
func openAIFinish(f llm.FinishReason) string {
	if f == "" {
		return string(llm.FinishStop)
	}
	return string(f)
}

// appendOpenAICompletion appends the chat.completion object of resp.
func appendOpenAICompletion(b []byte, c *call, resp *llm.Response) []byte {
	b = append(b, `{"id":"chatcmpl-`...)
	b = append(b, c.id...)
	b = append(b, `","object":"chat.completion","created":`...)
	b = appendInt(b, int(c.start.Unix()))
	b = append(b, `,"model":`...)
	b = jsonw.String(b, answerModel(resp.Model, c))
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	m := &resp.Message
	if m.Content == "" && len(m.ToolCalls) > 0 {
		b = append(b, "null"...)
	} else {
		b = jsonw.String(b, m.Content)
	}
	b = append(b, `,"refusal":null`...)
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsonw.String(b, tc.ID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsonw.String(b, tc.Name)
			b = append(b, `,"arguments":`...)
			b = jsonw.String(b, orEmptyObject(tc.Arguments))
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	b = jsonw.String(b, openAIFinish(resp.FinishReason))
	b = append(b, `}],"usage":`...)
	b = appendOpenAIUsage(b, resp.Usage)
	return append(b, "}\n"...)
}

// appendOpenAIUsage appends u in OpenAI's words: the prompt counts the
// cached tokens too, and prompt_tokens_details.cached_tokens says how many
// the cache served.
func appendOpenAIUsage(b []byte, u llm.Usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, u.InputTokens)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, u.OutputTokens)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, u.InputTokens+u.OutputTokens)
	if u.CacheReadTokens > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = appendInt(b, u.CacheReadTokens)
		b = append(b, '}')
	}
	return append(b, '}')
}

// orEmptyObject returns args, or "{}" when empty.
func orEmptyObject(args string) string {
	if args == "" {
		return "{}"
	}
	return args
}

// answerModel returns the model that answered: as the provider named it,
// else the target's model.
func answerModel(reported string, c *call) string {
	if reported != "" {
		return reported
	}
	if c.answered != nil {
		return c.answered.Model
	}
	return c.cr.model
}

// oaStream writes chat.completion.chunk events: the role in the first
// delta, an integer index, finish_reason on the last choice, a usage chunk
// with "choices": [] only when include_usage was asked, then [DONE]. No
// chunk ever carries an "error" key (openai-go would abort the stream).
type oaStream struct {
	c        *call
	prefix   []byte // `data: {"id":...,"model":...,` shared by every chunk
	roleSent bool
	finished bool
	u        llm.Usage
}

func (o *oaStream) usage() llm.Usage { return o.u }

func (o *oaStream) open(b []byte, model string) []byte {
	if o.prefix == nil {
		p := append([]byte(nil), `data: {"id":"chatcmpl-`...)
		p = append(p, o.c.id...)
		p = append(p, `","object":"chat.completion.chunk","created":`...)
		p = appendInt(p, int(o.c.start.Unix()))
		p = append(p, `,"model":`...)
		p = jsonw.String(p, answerModel(model, o.c))
		o.prefix = append(p, ',')
	}
	return append(b, o.prefix...)
}

// chunk appends the event of ch; nothing for a chunk without output.
func (o *oaStream) chunk(b []byte, ch llm.Chunk) []byte {
	if ch.Usage != nil {
		o.u = *ch.Usage
	}
	finish := ch.FinishReason != "" && !o.finished
	if ch.Content == "" && len(ch.ToolCalls) == 0 && !finish && (o.roleSent || ch.Role == "") {
		return b
	}
	b = o.open(b, ch.Model)
	b = append(b, `"choices":[{"index":0,"delta":{`...)
	sep := false
	if !o.roleSent {
		b = append(b, `"role":"assistant"`...)
		o.roleSent, sep = true, true
	}
	if ch.Content != "" {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"content":`...)
		b = jsonw.String(b, ch.Content)
		sep = true
	}
	if len(ch.ToolCalls) > 0 {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"tool_calls":[`...)
		for i, tc := range ch.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = appendInt(b, tc.Index)
			if tc.ID != "" {
				b = append(b, `,"id":`...)
				b = jsonw.String(b, tc.ID)
				b = append(b, `,"type":"function"`...)
			}
			b = append(b, `,"function":{`...)
			if tc.Name != "" {
				b = append(b, `"name":`...)
				b = jsonw.String(b, tc.Name)
				b = append(b, ',')
			}
			b = append(b, `"arguments":`...)
			b = jsonw.String(b, tc.Arguments)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"finish_reason":`...)
	if finish {
		o.finished = true
		b = jsonw.String(b, openAIFinish(ch.FinishReason))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, "}]"...)
	if o.c.cr.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

// end appends the close of a complete answer.
func (o *oaStream) end(b []byte) []byte {
	if !o.finished {
		b = o.chunk(b, llm.Chunk{FinishReason: llm.FinishStop})
	}
	if o.c.cr.includeUsage {
		b = o.open(b, "")
		b = append(b, `"choices":[],"usage":`...)
		b = appendOpenAIUsage(b, o.u)
		b = append(b, "}\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

// fail appends the error event: {"error":{...}} and nothing after it.
func (o *oaStream) fail(b []byte, e *apiError) []byte {
	b = append(b, "data: "...)
	b = appendOpenAIError(b, e)
	return append(b, "\n\n"...)
}
