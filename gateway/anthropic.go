package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// The Anthropic surface: POST /v1/messages in Anthropic's Messages format,
// translated to llm.Request; answers and stream chunks translated back
// (message_start first, content_block_*, message_delta with usage,
// message_stop; every event named by an `event:` line matching its type).

type anRequest struct {
	Model         string          `json:"model"`
	Models        []string        `json:"models"`
	Messages      []anMessage     `json:"messages"`
	System        json.RawMessage `json:"system"`
	MaxTokens     *int            `json:"max_tokens"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	Stream        *bool           `json:"stream"`
	Tools         []anTool        `json:"tools"`
	ToolChoice    *anToolChoice   `json:"tool_choice"`
}

type anToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type anMessage struct {
	Role    string         `json:"role"`
	Content anContentField `json:"content"`
}

// anContentField is a message's content as read: a string's text, or the
// JSON of anything else (a list of blocks, or a value detour refuses).
type anContentField struct {
	Text string
	Str  bool            // the content is a JSON string, held in Text
	Raw  json.RawMessage // set when it is anything else, null included
}

// UnmarshalJSON reads a content value of a valid JSON document.
func (c *anContentField) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		c.Str = true
		return json.Unmarshal(b, &c.Text)
	}
	c.Raw = append(json.RawMessage(nil), b...)
	return nil
}

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *anSource       `json:"source"`
	Title     string          `json:"title"`
}

type anTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// parseAnthropic reads a Messages body into cr; a body it cannot use is a
// 400 invalid_request_error naming the field. anthropic-version is not
// checked: SDKs send dates no list could hold.
func parseAnthropic(body []byte, cr *chatRequest) *apiError {
	var in anRequest
	if !parseANRequestFast(string(body), &in) {
		in = anRequest{}
		if ae := decodeJSON(body, &in); ae != nil {
			return ae
		}
	}
	if ae := checkModels(in.Model, in.Models); ae != nil {
		return ae
	}
	req := &llm.Request{Temperature: in.Temperature, TopP: in.TopP, Stop: in.StopSequences}
	cr.req, cr.model, cr.models = req, in.Model, in.Models
	if in.Stream != nil {
		cr.stream = *in.Stream
	}
	req.Stream = cr.stream
	switch {
	case in.MaxTokens == nil:
		return badRequest("max_tokens", "max_tokens: Field required")
	case *in.MaxTokens < 1:
		return badRequest("max_tokens", "max_tokens: must be at least 1, not %d", *in.MaxTokens)
	}
	req.MaxTokens = *in.MaxTokens
	if len(in.Messages) == 0 {
		return badRequest("messages", "messages: at least one message is required")
	}
	if s := present(in.System); s != nil {
		text, ae := anText(s, "system")
		if ae != nil {
			return ae
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: text})
	}
	for i := range in.Messages {
		var ae *apiError
		if req.Messages, ae = in.Messages[i].canonical(req.Messages, i); ae != nil {
			return ae
		}
	}
	for i, t := range in.Tools {
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool (web search, ...): a need, not a canonical tool
		}
		if t.Name == "" {
			return badRequest(fmt.Sprintf("tools[%d].name", i), "tools[%d].name: Field required", i)
		}
		req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: present(t.InputSchema)})
	}
	if tc := in.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "":
			req.ToolChoice = json.RawMessage(`"auto"`)
		case "any":
			req.ToolChoice = json.RawMessage(`"required"`)
		case "none":
			req.ToolChoice = json.RawMessage(`"none"`)
		case "tool":
			if tc.Name == "" {
				return badRequest("tool_choice.name", "tool_choice.name: Field required for type tool")
			}
			b := jsonw.String([]byte(`{"type":"function","function":{"name":`), tc.Name)
			req.ToolChoice = append(b, "}}"...)
		default:
			return badRequest("tool_choice.type", "tool_choice.type %q is not one of auto, any, tool, none", tc.Type)
		}
	}
	return nil
}

// blockParam names content block j of message i in an error.
func blockParam(i, j int) string { return msgParam(i) + ".content[" + strconv.Itoa(j) + "]" }

// canonical appends message i in llm's shape to out: tool results become
// tool messages (first, as OpenAI wants them right after the call), the
// rest one user or assistant message.
func (m *anMessage) canonical(out []llm.Message, i int) ([]llm.Message, *apiError) {
	var role llm.Role
	switch m.Role {
	case "user":
		role = llm.RoleUser
	case "assistant":
		role = llm.RoleAssistant
	case "system":
		role = llm.RoleSystem
	default:
		return out, badRequest(msgParam(i)+".role", "%s.role: must be user, assistant or system, not %q", msgParam(i), m.Role)
	}
	if m.Content.Str {
		return append(out, llm.Message{Role: role, Content: m.Content.Text}), nil
	}
	raw := m.Content.Raw
	var blocks []anBlock
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &blocks) != nil {
		return out, badRequest(msgParam(i)+".content", "%s.content must be a string or a list of content blocks", msgParam(i))
	}
	msg := llm.Message{Role: role}
	var text strings.Builder
	for j := range blocks {
		if _, ok := anMediaPart(blocks[j].Type, blocks[j].Source, ""); ok {
			// An image or a document: the text around it stays in
			// order, as parts.
			msg.Parts = make([]llm.Part, 0, len(blocks))
			break
		}
	}
	for j, b := range blocks {
		switch b.Type {
		case "text":
			if msg.Parts != nil {
				msg.Parts = append(msg.Parts, llm.Part{Kind: llm.PartText, Text: b.Text})
				break
			}
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(b.Text)
		case "image", "document":
			if p, ok := anMediaPart(b.Type, b.Source, b.Title); ok {
				msg.Parts = append(msg.Parts, p)
			}
			// Else a source detour does not translate (a file id,
			// custom content): it reaches a target of this dialect raw;
			// another dialect's is skipped for it (needs).
		case "tool_use":
			if role != llm.RoleAssistant || b.ID == "" || b.Name == "" {
				return out, badRequest(blockParam(i, j), "%s: a tool_use block belongs to an assistant message and needs an id and a name", blockParam(i, j))
			}
			args := "{}"
			if in := present(b.Input); in != nil {
				args = string(appendCompact(nil, in))
			}
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		case "tool_result":
			if role != llm.RoleUser || b.ToolUseID == "" {
				return out, badRequest(blockParam(i, j), "%s: a tool_result block belongs to a user message and needs a tool_use_id", blockParam(i, j))
			}
			content := ""
			if c := present(b.Content); c != nil {
				var ae *apiError
				if content, ae = anText(c, blockParam(i, j)+".content"); ae != nil {
					return out, ae
				}
			}
			if b.IsError {
				content = "Error: " + content
			}
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: b.ToolUseID, Content: content})
		default:
			// Thinking, a server tool's block: it reaches a target of
			// this dialect raw; another dialect's is skipped for it
			// (needs), never sent it half.
		}
	}
	msg.Content = text.String()
	if msg.Content != "" || len(msg.Parts) > 0 || len(msg.ToolCalls) > 0 || len(blocks) == 0 {
		out = append(out, msg)
	}
	return out, nil
}

// anText reads a string or a list of text blocks (system, tool_result
// content), joined by newlines.
func anText(raw json.RawMessage, param string) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badRequest(param, "%s is not a valid string", param)
		}
		return s, nil
	}
	var blocks []anBlock
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &blocks) != nil {
		return "", badRequest(param, "%s must be a string or a list of text blocks", param)
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" {
			continue // an image in a tool result, ...: a need (needs)
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// anthropicStop returns the stop_reason of f.
func anthropicStop(f llm.FinishReason) string {
	switch f {
	case llm.FinishLength:
		return "max_tokens"
	case llm.FinishToolCalls:
		return "tool_use"
	case llm.FinishContentFilter:
		return "refusal"
	}
	return "end_turn"
}

// appendAnthropicMessage appends the message object of resp.
func appendAnthropicMessage(b []byte, c *call, resp *llm.Response) []byte {
	b = append(b, `{"id":"msg_`...)
	b = append(b, c.id...)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = jsonw.String(b, answerModel(resp.Model, c))
	b = append(b, `,"content":[`...)
	m := &resp.Message
	n := 0
	if m.Content != "" {
		b = append(b, `{"type":"text","text":`...)
		b = jsonw.String(b, m.Content)
		b = append(b, '}')
		n++
	}
	for _, tc := range m.ToolCalls {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"tool_use","id":`...)
		b = jsonw.String(b, tc.ID)
		b = append(b, `,"name":`...)
		b = jsonw.String(b, tc.Name)
		b = append(b, `,"input":`...)
		b = appendJSONObject(b, tc.Arguments)
		b = append(b, '}')
		n++
	}
	b = append(b, `],"stop_reason":`...)
	b = jsonw.String(b, anthropicStop(resp.FinishReason))
	b = append(b, `,"stop_sequence":null,"usage":`...)
	b = appendAnthropicUsage(b, resp.Usage)
	return append(b, "}\n"...)
}

// appendAnthropicUsage appends u in Anthropic's words: input_tokens are
// the prompt tokens the cache neither served nor stored, counted apart in
// cache_read_input_tokens and cache_creation_input_tokens.
func appendAnthropicUsage(b []byte, u llm.Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, max(0, u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens))
	if u.CacheWriteTokens > 0 {
		b = append(b, `,"cache_creation_input_tokens":`...)
		b = appendInt(b, u.CacheWriteTokens)
	}
	if u.CacheReadTokens > 0 {
		b = append(b, `,"cache_read_input_tokens":`...)
		b = appendInt(b, u.CacheReadTokens)
	}
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, u.OutputTokens)
	return append(b, '}')
}

// anStream writes Anthropic's stream events from llm chunks.
type anStream struct {
	c       *call
	started bool
	// open is the kind of the open content block: 0 none, 't' text, 'u'
	// tool_use; block is its index, tool the upstream index of its call.
	open  byte
	block int
	tool  int
	stop  llm.FinishReason
	u     llm.Usage
}

func (a *anStream) usage() llm.Usage { return a.u }

// event appends "event: typ\ndata: " ; the caller appends the JSON and
// "\n\n".
func event(b []byte, typ string) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	return append(b, "\ndata: "...)
}

func (a *anStream) start(b []byte, model string) []byte {
	if a.started {
		return b
	}
	a.started = true
	b = event(b, "message_start")
	b = append(b, `{"type":"message_start","message":{"id":"msg_`...)
	b = append(b, a.c.id...)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = jsonw.String(b, answerModel(model, a.c))
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`...)
	return append(b, "\n\n"...)
}

// closeBlock ends the open content block, if any.
func (a *anStream) closeBlock(b []byte) []byte {
	if a.open == 0 {
		return b
	}
	b = event(b, "content_block_stop")
	b = append(b, `{"type":"content_block_stop","index":`...)
	b = appendInt(b, a.block)
	b = append(b, "}\n\n"...)
	a.open = 0
	a.block++
	return b
}

func (a *anStream) chunk(b []byte, ch llm.Chunk) []byte {
	if ch.Usage != nil {
		a.u = *ch.Usage
	}
	if ch.FinishReason != "" && a.stop == "" {
		a.stop = ch.FinishReason
	}
	if ch.Content == "" && len(ch.ToolCalls) == 0 {
		return b
	}
	b = a.start(b, ch.Model)
	if ch.Content != "" {
		if a.open != 't' {
			b = a.closeBlock(b)
			b = event(b, "content_block_start")
			b = append(b, `{"type":"content_block_start","index":`...)
			b = appendInt(b, a.block)
			b = append(b, `,"content_block":{"type":"text","text":""}}`+"\n\n"...)
			a.open = 't'
		}
		b = event(b, "content_block_delta")
		b = append(b, `{"type":"content_block_delta","index":`...)
		b = appendInt(b, a.block)
		b = append(b, `,"delta":{"type":"text_delta","text":`...)
		b = jsonw.String(b, ch.Content)
		b = append(b, "}}\n\n"...)
	}
	for _, tc := range ch.ToolCalls {
		if a.open != 'u' || tc.Index != a.tool || tc.ID != "" {
			b = a.closeBlock(b)
			b = event(b, "content_block_start")
			b = append(b, `{"type":"content_block_start","index":`...)
			b = appendInt(b, a.block)
			b = append(b, `,"content_block":{"type":"tool_use","id":`...)
			b = jsonw.String(b, tc.ID)
			b = append(b, `,"name":`...)
			b = jsonw.String(b, tc.Name)
			b = append(b, `,"input":{}}}`+"\n\n"...)
			a.open, a.tool = 'u', tc.Index
		}
		if tc.Arguments == "" {
			continue
		}
		b = event(b, "content_block_delta")
		b = append(b, `{"type":"content_block_delta","index":`...)
		b = appendInt(b, a.block)
		b = append(b, `,"delta":{"type":"input_json_delta","partial_json":`...)
		b = jsonw.String(b, tc.Arguments)
		b = append(b, "}}\n\n"...)
	}
	return b
}

// end appends the close of a complete answer: the open block's stop,
// message_delta with the stop reason and usage, message_stop.
func (a *anStream) end(b []byte) []byte {
	b = a.start(b, "")
	b = a.closeBlock(b)
	b = event(b, "message_delta")
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":`...)
	b = jsonw.String(b, anthropicStop(a.stop))
	b = append(b, `,"stop_sequence":null},"usage":`...)
	b = appendAnthropicUsage(b, a.u)
	b = append(b, "}\n\n"...)
	b = event(b, "message_stop")
	return append(b, `{"type":"message_stop"}`+"\n\n"...)
}

// fail appends the error event.
func (a *anStream) fail(b []byte, e *apiError) []byte {
	b = event(b, "error")
	b = appendAnthropicError(b, e, a.c.id)
	return append(b, "\n\n"...)
}
