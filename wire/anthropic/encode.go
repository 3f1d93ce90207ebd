package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// DefaultMaxTokens is the max_tokens sent when llm.Request.MaxTokens is 0:
// the Messages API requires the field, and 4096 is within the output cap of
// every current Claude model.
const DefaultMaxTokens = 4096

// maxTemperature is the highest temperature the Messages API accepts.
const maxTemperature = 1.0

// messagesRequest is the body of POST /v1/messages, in the field order
// Anthropic documents.
type messagesRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	System        json.RawMessage `json:"system,omitempty"`
	Messages      []turn          `json:"messages"`
	Tools         []tool          `json:"tools,omitempty"`
	ToolChoice    json.RawMessage `json:"tool_choice,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Thinking      *thinking       `json:"thinking,omitempty"`
}

// thinking turns on extended thinking within a budget of tokens.
type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// minThinkingBudget is the smallest budget_tokens the Messages API takes.
const minThinkingBudget = 1024

// turn is one message of a request: a role and its content, a string for
// a turn of a single text block, else a []block.
type turn struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
	// blocks are the turn's blocks while turns are merged.
	blocks []block
}

// block is a request content block: text, image, document, tool_use or
// tool_result.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	Source    *source         `json:"source,omitempty"`
	Title     string          `json:"title,omitempty"`
}

// source is where an image or a document block's content is: base64
// (media_type and data), url, or text (a plain-text document's data).
type source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// tool is one entry of "tools": a client tool with its JSON Schema.
type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// emptySchema is the input_schema of a tool without parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// EncodeRequest returns the JSON body of a Messages API request for req.
// The stream argument, not req.Stream, decides whether to stream.
//
// The translation from detour's OpenAI-shaped request:
//
//   - RoleSystem messages, wherever they are, are lifted into the top-level
//     "system": a string for one, an array of text blocks for several
//     (empty ones are dropped);
//   - the other messages become turns; consecutive turns of the same role
//     are merged into one turn of several content blocks, since the API
//     wants user and assistant to alternate. RoleTool messages are user
//     turns of tool_result blocks ({tool_use_id, content}); within a user
//     turn, tool_result blocks come first, as the API requires. A turn whose
//     only block is text is sent as a plain string; an empty text beside
//     other blocks is dropped; a turn with nothing at all is sent as "" and
//     left to the API to judge;
//   - an assistant's ToolCalls become tool_use blocks whose input is the
//     parsed JSON of Arguments ("" counts as {}); Arguments that are not a
//     JSON object are an error;
//   - Tools become {name, description, input_schema} (nil Parameters is
//     {"type":"object","properties":{}}); ToolChoice maps from OpenAI's
//     shape: "auto" to {"type":"auto"}, "required" to {"type":"any"}, "none"
//     to {"type":"none"}, {"type":"function","function":{"name":X}} to
//     {"type":"tool","name":X}; Anthropic's own shapes pass through; anything
//     else is an error;
//   - max_tokens is req.MaxTokens, or DefaultMaxTokens when that is 0 (the
//     API requires it); Stop becomes stop_sequences; TopP passes through;
//     Temperature passes through, capped at 1.0 (OpenAI's range goes to 2,
//     Anthropic's stops at 1: a request valid elsewhere must not fail
//     closed here as invalid);
//   - Reasoning becomes thinking {type: enabled, budget_tokens} (an effort
//     by its llm.Reasoning.BudgetTokens, at least 1,024); when max_tokens
//     is not above the budget the budget is added to it, as Anthropic
//     counts thinking within max_tokens; temperature, and a top_p under
//     0.95, are then left out: thinking takes neither (Client.Fit);
//   - Name (an author name) has no Anthropic equivalent and is not sent;
//   - ResponseFormat (json_schema, json_object) without tools becomes a
//     tool whose input_schema is the schema, forced with tool_choice, the
//     way Anthropic documents structured output; the Client turns that
//     tool's input back into the answer's text (structured.go). With tools
//     of the request's own it is not sent (the gateway skips Anthropic
//     targets for that combination); {"type":"text"} means nothing.
//
// A message's Parts become blocks in order after its Content: text, an
// image {type: image, source: {type: base64, media_type, data} or {type:
// url, url}}, a document {type: document, source: ..., title} whose
// source is base64 (inline data), url, or text (a plain-text document).
// Audio has no form here and is an error, as are parts on a system or
// tool message (the system prompt and a tool_result are text here).
func EncodeRequest(req *llm.Request, stream bool) ([]byte, error) {
	if req == nil {
		return nil, errors.New("anthropic: nil request")
	}
	body := messagesRequest{
		Model:         req.Model,
		MaxTokens:     req.MaxTokens,
		Messages:      []turn{},
		StopSequences: req.Stop,
		Temperature:   req.Temperature,
		TopP:          req.TopP,
		Stream:        stream,
	}
	if body.MaxTokens <= 0 {
		body.MaxTokens = DefaultMaxTokens
	}
	if t := req.Temperature; t != nil && *t > maxTemperature {
		capped := maxTemperature
		body.Temperature = &capped
	}
	if r := req.Reasoning; !r.Off() {
		budget := max(r.BudgetTokens(), minThinkingBudget)
		body.Thinking = &thinking{Type: "enabled", BudgetTokens: budget}
		if body.MaxTokens <= budget {
			body.MaxTokens += budget // the budget counts within max_tokens: the answer keeps its own
		}
		// Thinking takes no temperature and a top_p of 0.95 or more only
		// (Client.Fit reports them dropped).
		body.Temperature = nil
		if p := body.TopP; p != nil && *p < 0.95 {
			body.TopP = nil
		}
	}
	var system []string
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role == llm.RoleSystem {
			if len(m.Parts) > 0 {
				return nil, fmt.Errorf("anthropic: message %d: a system message with parts: the system prompt is text", i)
			}
			if m.Content != "" {
				system = append(system, m.Content)
			}
			continue
		}
		role, blocks, err := encodeMessage(m)
		if err != nil {
			return nil, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
		if n := len(body.Messages); n > 0 && body.Messages[n-1].Role == role {
			body.Messages[n-1].blocks = append(body.Messages[n-1].blocks, blocks...)
		} else {
			body.Messages = append(body.Messages, turn{Role: role, blocks: blocks})
		}
	}
	for i := range body.Messages {
		t := &body.Messages[i]
		t.blocks = tidy(t.blocks)
		if len(t.blocks) == 1 && t.blocks[0].Type == "text" {
			t.Content = t.blocks[0].Text
		} else {
			t.Content = t.blocks
		}
	}
	var err error
	if body.System, err = encodeSystem(system); err != nil {
		return nil, err
	}
	for i, t := range req.Tools {
		schema := t.Parameters
		if len(bytes.TrimSpace(schema)) == 0 || string(bytes.TrimSpace(schema)) == "null" {
			schema = emptySchema
		} else if !json.Valid(schema) {
			return nil, fmt.Errorf("anthropic: tool %d (%s): parameters are not valid JSON", i, t.Name)
		}
		body.Tools = append(body.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if body.ToolChoice, err = encodeToolChoice(req.ToolChoice); err != nil {
		return nil, err
	}
	if st, ok := structuredOf(req); ok {
		// Structured output: a tool whose input is the schema, forced.
		body.Tools = append(body.Tools, tool{Name: st.name, InputSchema: st.schema,
			Description: "Give the answer as this tool's input: JSON that follows its schema."})
		body.ToolChoice = jsonToolChoice(st.name)
	}
	// No HTML escaping: prompts go out byte for byte ("<" stays "<").
	out, err := body.appendJSON(make([]byte, 0, 256+len(body.System)))
	if err != nil {
		return nil, fmt.Errorf("anthropic: encoding request: %w", err)
	}
	return out, nil
}

// encodeMessage returns the role and content blocks of one non-system
// message.
func encodeMessage(m *llm.Message) (string, []block, error) {
	switch m.Role {
	case llm.RoleUser:
		blocks, err := contentBlocks(m)
		return "user", blocks, err
	case llm.RoleAssistant:
		blocks, err := contentBlocks(m)
		if err != nil {
			return "", nil, err
		}
		for j, tc := range m.ToolCalls {
			input, err := toolInput(tc.Arguments)
			if err != nil {
				return "", nil, fmt.Errorf("tool call %d (%s): %w", j, tc.Name, err)
			}
			blocks = append(blocks, block{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
		}
		return "assistant", blocks, nil
	case llm.RoleTool:
		if m.ToolCallID == "" {
			return "", nil, errors.New("tool message without tool_call_id")
		}
		if len(m.Parts) > 0 {
			return "", nil, errors.New("a tool message with parts: a tool_result is text here")
		}
		return "user", []block{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content}}, nil
	}
	return "", nil, fmt.Errorf("unknown role %q", m.Role)
}

// contentBlocks returns the blocks of m's content: a text block of Content
// (dropped later when empty beside other blocks), then one per part.
func contentBlocks(m *llm.Message) ([]block, error) {
	blocks := make([]block, 1, 1+len(m.Parts))
	blocks[0] = block{Type: "text", Text: m.Content}
	for i := range m.Parts {
		p := &m.Parts[i]
		b := block{Type: string(p.Kind)}
		switch {
		case p.Kind == llm.PartText:
			b.Text = p.Text
		case p.Kind == llm.PartAudio:
			return nil, fmt.Errorf("part %d: audio has no Messages API form", i)
		case p.Kind != llm.PartImage && p.Kind != llm.PartDocument:
			return nil, fmt.Errorf("part %d: unknown part kind %q", i, p.Kind)
		case p.URL != "":
			b.Source = &source{Type: "url", URL: p.URL}
		case p.Kind == llm.PartDocument && p.MediaType == "text/plain" && p.Data == "":
			b.Source = &source{Type: "text", MediaType: p.MediaType, Data: p.Text}
		case p.MediaType == "":
			return nil, fmt.Errorf("part %d: inline %s data without a media type", i, p.Kind)
		default:
			b.Source = &source{Type: "base64", MediaType: p.MediaType, Data: p.Data}
		}
		if p.Kind == llm.PartDocument {
			b.Title = p.Title
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// toolInput parses a tool call's Arguments into the JSON object Anthropic
// wants as input; "" (and whitespace) is {}.
func toolInput(args string) (json.RawMessage, error) {
	a := bytes.TrimSpace([]byte(args))
	if len(a) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(a) {
		return nil, fmt.Errorf("arguments are not valid JSON: %.80q", args)
	}
	if a[0] != '{' {
		return nil, fmt.Errorf("arguments are not a JSON object: %.80q", args)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, a); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// tidy drops empty text blocks from a turn that has other content and puts
// tool_result blocks first.
func tidy(c []block) []block {
	out := make([]block, 0, len(c))
	for _, b := range c {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	for _, b := range c {
		if b.Type != "tool_result" && !(b.Type == "text" && b.Text == "") {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		// Nothing but empty text: one empty text, sent as "".
		return []block{{Type: "text"}}
	}
	return out
}

// encodeSystem returns the "system" field for the lifted system prompts.
func encodeSystem(system []string) (json.RawMessage, error) {
	var v any
	switch len(system) {
	case 0:
		return nil, nil
	case 1:
		v = system[0]
	default:
		blocks := make([]block, len(system))
		for i, s := range system {
			blocks[i] = block{Type: "text", Text: s}
		}
		v = blocks
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("anthropic: encoding system prompt: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonToolChoice is the tool_choice that forces the tool name.
func jsonToolChoice(name string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}{"tool", name})
	return b
}

// encodeToolChoice maps an OpenAI-shaped tool_choice to Anthropic's.
func encodeToolChoice(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto":
			return json.RawMessage(`{"type":"auto"}`), nil
		case "required", "any":
			return json.RawMessage(`{"type":"any"}`), nil
		case "none":
			return json.RawMessage(`{"type":"none"}`), nil
		}
		return nil, fmt.Errorf("anthropic: unsupported tool_choice %q", s)
	}
	var obj struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("anthropic: tool_choice is not a string or an object: %w", err)
	}
	switch {
	case obj.Type == "function" && obj.Function != nil && obj.Function.Name != "":
		return json.Marshal(struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}{"tool", obj.Function.Name})
	case obj.Type == "tool" && obj.Name != "":
		// Anthropic's own shape, possibly with disable_parallel_tool_use.
		return compact(raw)
	case obj.Type == "auto" || obj.Type == "any" || obj.Type == "none":
		return compact(raw)
	}
	return nil, fmt.Errorf("anthropic: unsupported tool_choice %s", strings.Join(strings.Fields(string(raw)), " "))
}

// compact returns raw without insignificant white space.
func compact(raw json.RawMessage) (json.RawMessage, error) { return jsonw.Raw(nil, raw) }
