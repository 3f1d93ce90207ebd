package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// chatReq is what the fake providers read from a chat completions request.
type chatReq struct {
	model        string
	stream       bool
	includeUsage bool
	obfuscate    bool // stream_options.include_obfuscation is not false
	maxTokens    int  // max_completion_tokens or max_tokens; 0 when absent
	promptTokens int
	// prefixTokens and prefixKey are the tokens and a hash of the prompt
	// but its last message (tools included): what a prompt cache keys on.
	prefixTokens int
	prefixKey    uint64
	// cached is how many prompt tokens the cache served (promptcache.go).
	cached   int
	tool     *toolPick // the call to answer with; nil for a text answer
	lastRole string    // the last message's role (Record.LastRole)
	// question returns the system prompt and the last user message's text
	// (Question.System, Question.Prompt); nil reads as "". Called only for a
	// scripted Provider.Answer: other requests never decode the texts.
	question func() (system, prompt string)
}

// toolPick is the one tool call an answer makes.
type toolPick struct {
	name, args string
}

// reqError is a request the provider rejects with a 400 (or 404) of its own.
type reqError struct {
	status           int
	kind             Kind
	msg, param, code string // OpenAI: the error's message, param and code
	details          []any  // Gemini: the google.rpc.Status details
	model            string // the model asked for, when the request named one
}

// reply renders the rejection in the provider's dialect.
func (e *reqError) reply(c errCtx) reply {
	switch c.dialect {
	case DialectAnthropic:
		return anthropicReply(c, e.status, "invalid_request_error", e.msg, nil)
	case DialectGemini:
		return geminiReply(c, e.status, e.msg, grpcStatus(e.status), e.details)
	}
	return genericError(c, e.status, e.msg, e.param, e.code)
}

// wireRequest is the subset of the OpenAI request body that is read.
type wireRequest struct {
	Model         *string         `json:"model"`
	Messages      json.RawMessage `json:"messages"`
	Stream        *bool           `json:"stream"`
	StreamOptions *struct {
		IncludeUsage       *bool `json:"include_usage"`
		IncludeObfuscation *bool `json:"include_obfuscation"`
	} `json:"stream_options"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	Tools               []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

type wireMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// parseChat reads a chat completions body, validating it the way OpenAI does
// for the few fields the simulator needs.
func parseChat(body []byte) (*chatReq, *reqError) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, &reqError{status: 400, kind: BadRequest,
				msg:   fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", te.Field, jsonKind(te.Type), article(te.Value)),
				param: te.Field, code: "invalid_type"}
		}
		return nil, &reqError{status: 400, kind: BadRequest,
			msg: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"}
	}
	if w.Model == nil || *w.Model == "" {
		return nil, &reqError{status: 400, kind: BadRequest, msg: "you must provide a model parameter"}
	}
	r := &chatReq{model: *w.Model, obfuscate: true}
	if len(w.Messages) == 0 || string(w.Messages) == "null" {
		return nil, &reqError{status: 400, kind: BadRequest, model: r.model,
			msg: "Missing required parameter: 'messages'.", param: "messages", code: "missing_required_parameter"}
	}
	var msgs []wireMessage
	if err := json.Unmarshal(w.Messages, &msgs); err != nil {
		return nil, &reqError{status: 400, kind: BadRequest, model: r.model,
			msg: "Invalid type for 'messages': expected an array of objects.", param: "messages", code: "invalid_type"}
	}
	if len(msgs) == 0 {
		return nil, &reqError{status: 400, kind: BadRequest, model: r.model,
			msg: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", param: "messages", code: "empty_array"}
	}
	if w.Stream != nil {
		r.stream = *w.Stream
	}
	if o := w.StreamOptions; o != nil {
		r.includeUsage = o.IncludeUsage != nil && *o.IncludeUsage
		r.obfuscate = o.IncludeObfuscation == nil || *o.IncludeObfuscation
	}
	if w.MaxCompletionTokens != nil {
		r.maxTokens = *w.MaxCompletionTokens
	} else if w.MaxTokens != nil {
		r.maxTokens = *w.MaxTokens
	}

	chars := 0
	for _, m := range msgs {
		chars += contentChars(m.Content)
		for _, tc := range m.ToolCalls {
			chars += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	toolChars := 0
	for _, t := range w.Tools {
		toolChars += len(t.Function.Name) + len(t.Function.Parameters)
	}
	// Roughly four characters a token, plus the few tokens of framing each
	// message costs (the captured OpenAI "Say hello. Use only one word." is 15).
	r.promptTokens = (chars+3)/4 + 3*len(msgs) + 3 + toolChars/4
	r.prefixTokens, r.prefixKey = cachePrefix(&w, msgs, toolChars)
	r.lastRole = msgs[len(msgs)-1].Role
	r.tool = pickTool(w)
	r.question = func() (system, prompt string) {
		var sys []string
		for _, m := range msgs {
			if m.Role == "system" || m.Role == "developer" {
				if s := blockText(m.Content); s != "" {
					sys = append(sys, s)
				}
			}
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "user" {
				prompt = blockText(msgs[i].Content)
				break
			}
		}
		return strings.Join(sys, "\n"), prompt
	}
	return r, nil
}

// contentChars counts the text characters of a message content, which is a
// string, an array of parts, or null.
func contentChars(raw json.RawMessage) int {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return utf8.RuneCountInString(s)
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		n := 0
		for _, p := range parts {
			n += utf8.RuneCountInString(p.Text)
		}
		return n
	}
	return 0
}

// pickTool chooses the tool the answer calls: the one tool_choice names, else
// the first offered; none when tool_choice is "none" or no tool is offered.
func pickTool(w wireRequest) *toolPick {
	if len(w.Tools) == 0 {
		return nil
	}
	var choice string
	if json.Unmarshal(w.ToolChoice, &choice) == nil && choice == "none" {
		return nil
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	json.Unmarshal(w.ToolChoice, &named) //nolint:errcheck // a string choice names no function
	decls := make([]toolDecl, len(w.Tools))
	for i, t := range w.Tools {
		decls[i] = toolDecl{t.Function.Name, t.Function.Parameters}
	}
	return chooseTool(decls, named.Function.Name)
}

// toolDecl is a tool offered by a request of any dialect: its name and the
// JSON schema of its arguments.
type toolDecl struct {
	name   string
	schema json.RawMessage
}

// chooseTool picks the declared tool called name, else the first one; nil
// when none is declared.
func chooseTool(decls []toolDecl, name string) *toolPick {
	if len(decls) == 0 {
		return nil
	}
	idx := 0
	for i, d := range decls {
		if name != "" && d.name == name {
			idx = i
		}
	}
	return &toolPick{name: decls[idx].name, args: toolArgs(decls[idx].schema)}
}

// toolArgs builds arguments that satisfy the required properties of a JSON
// schema with simple values, as compact JSON text.
func toolArgs(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Required) == 0 {
		return "{}"
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range s.Required {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshal(name)
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(sampleValue(s.Properties[name].Type))
	}
	b.WriteByte('}')
	return b.String()
}

func sampleValue(typ json.RawMessage) string {
	var t string
	if json.Unmarshal(typ, &t) != nil {
		var ts []string
		if json.Unmarshal(typ, &ts) == nil && len(ts) > 0 {
			t = ts[0]
		}
	}
	switch strings.ToLower(t) { // Gemini's schemas spell types in capitals
	case "number", "integer":
		return "1"
	case "boolean":
		return "true"
	case "array":
		return "[]"
	case "object":
		return "{}"
	case "null":
		return "null"
	}
	return `"simulated"`
}

// jsonKind says what JSON a Go type expects, in OpenAI's words.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		return "an array"
	}
	return "an object"
}

func article(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "":
		return "a value"
	}
	return "a " + v
}
