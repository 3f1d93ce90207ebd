package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/detourhq/detour/llm"
)

// Format is the shape of a batch file's lines, in and out. A file has one
// format, decided by its first valid line.
type Format string

// The formats of a batch file.
const (
	// Native lines are detour's own: {"id", "route", "messages" or
	// "prompt", ...} in, {"id", "status", "answer", ...} out.
	Native Format = "native"
	// OpenAI lines are OpenAI's Batch API: {"custom_id", "method", "url",
	// "body"} in, {"id", "custom_id", "response", "error"} out.
	OpenAI Format = "openai"
)

// article names f with its article: "a native", "an OpenAI batch".
func (f Format) article() string {
	if f == OpenAI {
		return "an OpenAI batch"
	}
	return "a " + string(f)
}

// Item is one request of a batch file.
type Item struct {
	// Line is the item's line number in its file, from 1.
	Line int
	// ID names the item: a native line's id, an OpenAI line's custom_id.
	ID string
	// Route is the route or provider/model target the line names (an
	// OpenAI line's body.model); empty means the run's default.
	Route string
	// NonIdempotent says the request has side effects: once sent, an
	// attempt whose outcome is unknown (a reset or a timeout after the
	// send) is never sent again (router.Options.NonIdempotent). The
	// line's non_idempotent field sets it; without one it is set when the
	// request carries tools, whose calls may act on the world.
	NonIdempotent bool
	// Request is what to send. An OpenAI line's request carries its body
	// raw (llm.Request.Raw), so a target of OpenAI's dialect gets it as
	// written; what a target of another dialect would have to carry
	// beyond detour's fields is in Request.Needs.
	Request *llm.Request
}

// InputError is a line that is no valid item: its number, the id it named
// if any, and what is wrong.
type InputError struct {
	Line int
	ID   string
	Msg  string
}

// Error returns "line N: what is wrong".
func (e *InputError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// KindInvalidInput is the error kind of a line that is no valid item (a
// native line's error.kind, an OpenAI line's error.code).
const KindInvalidInput = "invalid_input"

// ParseLine reads line n of a batch file whose format is f, or of a file
// whose format is not known yet when f is empty (the line's shape decides:
// a line with custom_id, method, url or body is OpenAI's). It returns the
// item and the line's format; a line that is no valid item returns an
// *InputError, and a line of the other format than f is one.
func ParseLine(line []byte, n int, f Format) (Item, Format, error) {
	bad := func(id, format string, a ...any) (Item, Format, error) {
		return Item{}, f, &InputError{Line: n, ID: id, Msg: fmt.Sprintf(format, a...)}
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil || keys == nil {
		return bad("", "not a JSON object: %s", jsonWhy(err))
	}
	got := Native
	for _, k := range []string{"custom_id", "method", "url", "body"} {
		if _, ok := keys[k]; ok {
			got = OpenAI
		}
	}
	if f != "" && got != f {
		id := lineID(keys, got)
		return bad(id, "%s line in %s file (the file's first valid line decides its format; a file holds one)", got.article(), f.article())
	}
	var it Item
	var err error
	if got == OpenAI {
		it, err = parseOpenAI(line, keys)
	} else {
		it, err = parseNative(line)
	}
	if err != nil {
		return bad(lineID(keys, got), "%s", err.Error())
	}
	it.Line = n
	return it, got, nil
}

// lineID returns the id a line names, for an error about it; "" when it
// names none that reads.
func lineID(keys map[string]json.RawMessage, f Format) string {
	k := "id"
	if f == OpenAI {
		k = "custom_id"
	}
	id, _ := readID(keys[k])
	return id
}

// readID reads an id: a string, or a number kept as its text.
func readID(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("missing")
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
	} else {
		var num json.Number
		if err := json.Unmarshal(raw, &num); err != nil {
			return "", errors.New("not a string or a number")
		}
		s = num.String()
	}
	switch {
	case s == "":
		return "", errors.New("empty")
	case len(s) > 512:
		return "", errors.New("longer than 512 bytes")
	}
	return s, nil
}

// nativeLine is a native input line.
type nativeLine struct {
	ID             json.RawMessage `json:"id"`
	Route          string          `json:"route"`
	Target         string          `json:"target"`
	Messages       []chatMessage   `json:"messages"`
	Prompt         *string         `json:"prompt"`
	System         string          `json:"system"`
	MaxTokens      *int            `json:"max_tokens"`
	Temperature    *float64        `json:"temperature"`
	TopP           *float64        `json:"top_p"`
	Stop           json.RawMessage `json:"stop"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Tools          []chatTool      `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	NonIdempotent  *bool           `json:"non_idempotent"`
}

func parseNative(line []byte) (Item, error) {
	var in nativeLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Item{}, errors.New(jsonWhy(err))
	}
	id, err := readID(in.ID)
	if err != nil {
		return Item{}, fmt.Errorf("id: %v (every line needs an id, unique in the file)", err)
	}
	it := Item{ID: id, Route: in.Route}
	if in.Route != "" && in.Target != "" {
		return it, errors.New("give route or target, not both")
	}
	if in.Target != "" {
		if !strings.Contains(in.Target, "/") {
			return it, fmt.Errorf("target %q is not provider/model", in.Target)
		}
		it.Route = in.Target
	}
	req := &llm.Request{Temperature: in.Temperature, TopP: in.TopP}
	switch {
	case in.Prompt != nil && len(in.Messages) > 0:
		return it, errors.New("give messages or prompt, not both")
	case in.Prompt != nil:
		if strings.TrimSpace(*in.Prompt) == "" {
			return it, errors.New("prompt is empty")
		}
		if in.System != "" {
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: in.System})
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: *in.Prompt})
	case len(in.Messages) > 0:
		if in.System != "" {
			return it, errors.New("system goes with prompt; with messages, write a system message")
		}
		if req.Messages, err = canonicalMessages(in.Messages); err != nil {
			return it, err
		}
	default:
		return it, errors.New("no request: give messages (OpenAI chat shape) or prompt")
	}
	if err := fillOptions(req, in.MaxTokens, in.Stop, in.ResponseFormat, in.Tools, in.ToolChoice); err != nil {
		return it, err
	}
	it.Request, it.NonIdempotent = req, nonIdempotent(in.NonIdempotent, req)
	return it, nil
}

// nonIdempotent is a line's non_idempotent field, or when it has none
// whether its request carries tools.
func nonIdempotent(field *bool, req *llm.Request) bool {
	if field != nil {
		return *field
	}
	return len(req.Tools) > 0
}

// openAILine is an OpenAI Batch API input line, and detour's
// non_idempotent beside its fields (the body goes to providers as
// written: nothing of detour's belongs in it).
type openAILine struct {
	CustomID      json.RawMessage `json:"custom_id"`
	Method        string          `json:"method"`
	URL           string          `json:"url"`
	Body          json.RawMessage `json:"body"`
	NonIdempotent *bool           `json:"non_idempotent"`
}

// openAIFields are the fields of an OpenAI batch line detour reads.
var openAIFields = []string{"custom_id", "method", "url", "body", "non_idempotent"}

// chatBody is the part of a chat completions body detour reads.
type chatBody struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Tools               []chatTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Stop                json.RawMessage `json:"stop"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	Stream              *bool           `json:"stream"`
	N                   *int            `json:"n"`
}

// covered are the body fields chatBody holds; any other (seed, logprobs,
// user, a field detour never heard of) is a need by its name: a target of
// OpenAI's dialect gets it raw, one of another dialect must carry it, may
// drop it when that is safe (the answer then says so), or is skipped.
var covered = []string{"model", "messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens",
	"temperature", "top_p", "stop", "response_format", "stream", "stream_options", "n"}

func parseOpenAI(line []byte, keys map[string]json.RawMessage) (Item, error) {
	for k := range keys {
		if !slices.Contains(openAIFields, k) {
			return Item{}, fmt.Errorf("unknown field %q (an OpenAI batch line has custom_id, method, url, body, and detour's non_idempotent)", k)
		}
	}
	var in openAILine
	if err := json.Unmarshal(line, &in); err != nil {
		return Item{}, errors.New(jsonWhy(err))
	}
	id, err := readID(in.CustomID)
	if err != nil {
		return Item{}, fmt.Errorf("custom_id: %v (every line needs one, unique in the file)", err)
	}
	it := Item{ID: id}
	if in.Method != "POST" {
		return it, fmt.Errorf("method %q: only POST is supported", in.Method)
	}
	if in.URL != "/v1/chat/completions" && in.URL != "/chat/completions" {
		return it, fmt.Errorf("url %q: only /v1/chat/completions is supported", in.URL)
	}
	body := bytes.TrimSpace(in.Body)
	if len(body) == 0 || body[0] != '{' {
		return it, errors.New("body must be a chat completions request object")
	}
	var b chatBody
	if err := json.Unmarshal(body, &b); err != nil {
		return it, fmt.Errorf("body: %s", jsonWhy(err))
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(body, &fields) // an object: read above
	if b.Stream != nil && *b.Stream {
		return it, errors.New("body.stream: a batch line cannot stream; leave stream out")
	}
	if len(b.Messages) == 0 {
		return it, errors.New("body.messages is required: a non-empty list of {role, content}")
	}
	it.Route = b.Model
	req := &llm.Request{Temperature: b.Temperature, TopP: b.TopP}
	if req.Messages, err = canonicalMessages(b.Messages); err != nil {
		return it, fmt.Errorf("body.%v", err)
	}
	mt := b.MaxCompletionTokens
	if mt == nil {
		mt = b.MaxTokens
	}
	if err := fillOptions(req, mt, b.Stop, b.ResponseFormat, b.Tools, b.ToolChoice); err != nil {
		return it, fmt.Errorf("body.%v", err)
	}
	for k, v := range fields {
		if !slices.Contains(covered, k) && string(bytes.TrimSpace(v)) != "null" {
			req.Needs = append(req.Needs, k)
		}
	}
	if b.N != nil && *b.N > 1 {
		req.Needs = append(req.Needs, "n")
	}
	slices.Sort(req.Needs)
	req.Raw = &llm.Raw{Dialect: "openai", Body: append([]byte(nil), body...)}
	it.Request, it.NonIdempotent = req, nonIdempotent(in.NonIdempotent, req)
	return it, nil
}

// chatMessage is a message in OpenAI's chat shape.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatTool is a tool in OpenAI's shape ({type: function, function: {...}})
// or detour's flat one ({name, description, parameters}).
type chatTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// canonicalMessages turns chat messages into llm's; an error names the
// offending message as messages[i].
func canonicalMessages(in []chatMessage) ([]llm.Message, error) {
	out := make([]llm.Message, 0, len(in))
	for i, m := range in {
		at := "messages[" + strconv.Itoa(i) + "]"
		msg := llm.Message{Name: m.Name}
		switch m.Role {
		case "system", "developer":
			msg.Role = llm.RoleSystem
		case "user":
			msg.Role = llm.RoleUser
		case "assistant":
			msg.Role = llm.RoleAssistant
		case "tool":
			msg.Role, msg.Name = llm.RoleTool, ""
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("%s.tool_call_id is required on a tool message", at)
			}
			msg.ToolCallID = m.ToolCallID
		case "":
			return nil, fmt.Errorf("%s.role is required", at)
		default:
			return nil, fmt.Errorf("%s.role %q is not one of system, developer, user, assistant, tool", at, m.Role)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("%s.content: %v", at, err)
		}
		msg.Content = text
		if len(m.ToolCalls) > 0 && msg.Role != llm.RoleAssistant {
			return nil, fmt.Errorf("%s.tool_calls: only assistant messages carry tool calls", at)
		}
		for j, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Function.Name == "" {
				return nil, fmt.Errorf("%s.tool_calls[%d]: a tool call needs an id and function.name", at, j)
			}
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		if msg.Content == "" && len(msg.ToolCalls) == 0 && msg.Role != llm.RoleAssistant {
			return nil, fmt.Errorf("%s.content is empty", at)
		}
		out = append(out, msg)
	}
	return out, nil
}

// contentText reads a message's content: a string, null, or a list of
// text parts (joined by newlines). Images, files and audio are refused:
// batch carries text.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if raw[0] != '[' || json.Unmarshal(raw, &parts) != nil {
		return "", errors.New("must be a string or a list of {type: text, text}")
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		if p.Type != "text" && p.Type != "input_text" {
			return "", fmt.Errorf("part %d is %q: detour batch sends text only (images, files and audio go through the gateway)", j, p.Type)
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// fillOptions sets the request options both formats share.
func fillOptions(req *llm.Request, maxTokens *int, stop, responseFormat json.RawMessage, tools []chatTool, toolChoice json.RawMessage) error {
	if maxTokens != nil {
		if *maxTokens < 1 {
			return fmt.Errorf("max_tokens must be at least 1, not %d", *maxTokens)
		}
		req.MaxTokens = *maxTokens
	}
	if s := bytes.TrimSpace(stop); len(s) > 0 && string(s) != "null" {
		var one string
		if json.Unmarshal(s, &one) == nil {
			req.Stop = []string{one}
		} else if json.Unmarshal(s, &req.Stop) != nil {
			return errors.New("stop must be a string or a list of strings")
		}
	}
	req.ResponseFormat = present(responseFormat)
	req.ToolChoice = present(toolChoice)
	for i, t := range tools {
		tool := llm.Tool{Name: t.Name, Description: t.Description, Parameters: present(t.Parameters)}
		if t.Function != nil {
			tool = llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: present(t.Function.Parameters)}
		}
		if (t.Type != "" && t.Type != "function") || tool.Name == "" {
			return fmt.Errorf("tools[%d] must be {type: function, function: {name, parameters}}", i)
		}
		req.Tools = append(req.Tools, tool)
	}
	return nil
}

// present returns raw, or nil for an absent or null value.
func present(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	return t
}

// jsonWhy says in a few words why encoding/json refused a line.
func jsonWhy(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return "null"
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te) && te.Field != "":
		return fmt.Sprintf("%s: expected %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
