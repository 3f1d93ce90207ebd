package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Anthropic's Messages API as recorded in https://github.com/maruel/genai
// (providers/anthropic/testdata/TestClient/Scoreboard/claude-haiku-4-5-20251001/
// GenSync-Text.yaml, GenStream-Text.yaml, GenSync-Tools-SquareRoot-1.yaml,
// GenStream-Tools-SquareRoot-1.yaml, commit
// 600fce781688f0c38e58e60ad7968ef8e668886b): a compact body without a
// trailing newline whose "model" comes first; streams whose every event has
// an `event:` line naming its data's "type"; a `{"type": "ping"}` (with its
// space) after the first content_block_start; and runs of spaces before the
// closing brace of most events' data, reproduced here deterministically.

// anthropicRequestID returns a request id shaped like Anthropic's
// ("req_011C" + 20 base62 characters, e.g. req_011CXtrhKkzZ6tTYqoKB67G8).
func anthropicRequestID(seq uint64) string {
	return "req_011C" + token(seq^0x616e7468, 20, base62)
}

// serveAnthropic serves rest, the path after /{name}/, for an Anthropic provider.
func (s *Server) serveAnthropic(ctx context.Context, w http.ResponseWriter, r *http.Request, t *target, seq uint64, rest string, ec errCtx) {
	ec.requestID = anthropicRequestID(seq)
	if m, ok := strings.CutPrefix(rest, "v1/models/"); ok && r.Method == http.MethodGet {
		s.read(t)
		if ec.key, ec.keyGiven = anthropicKey(r); t.Key != "" && (!ec.keyGiven || ec.key != t.Key) {
			ec.f = Fault{Kind: Unauthorized}
			s.sendError(ctx, w, t, ec.reply(), nil)
			return
		}
		writeAnthropicModel(w, t, m, ec)
		return
	}
	if rest != "v1/messages" {
		// reconstructed: Anthropic's envelope with the HTTP status text.
		writeReply(w, anthropicReply(ec, 404, "not_found_error", "Not Found", nil), nil)
		return
	}
	if r.Method != http.MethodPost {
		writeReply(w, anthropicReply(ec, 405, "invalid_request_error", "Method Not Allowed", nil), nil)
		return
	}
	ec.key, ec.keyGiven = anthropicKey(r)
	if t.Key != "" && (!ec.keyGiven || ec.key != t.Key) {
		ec.f = Fault{Kind: Unauthorized}
		s.record(t, Record{Kind: Unauthorized})
		s.sendError(ctx, w, t, ec.reply(), nil)
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		// The real API refuses a request without the header; any value is
		// accepted (CLIENTS.md section 5). Message as reported by gateway
		// authors hitting it, e.g. "400 anthropic-version: header is required".
		s.reject(ctx, w, t, ec, &reqError{status: 400, kind: BadRequest, msg: "anthropic-version: header is required"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return // the client is gone
	}
	req, rerr := parseMessages(body)
	if rerr != nil {
		if req != nil {
			ec.stream = req.stream
		}
		s.reject(ctx, w, t, ec, rerr)
		return
	}
	s.serve(ctx, w, t, req, seq, ec)
}

// anthropicKey returns the key of an x-api-key header, else of an
// "Authorization: Bearer" one (what the current SDKs send, CLIENTS.md section 5).
func anthropicKey(r *http.Request) (string, bool) {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k, true
	}
	return bearer(r)
}

// anthropicRequest is the subset of a Messages API body that is read.
type anthropicRequest struct {
	Model     *string         `json:"model"`
	Messages  json.RawMessage `json:"messages"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Stream    *bool           `json:"stream"`
	Tools     []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
}

// parseMessages reads a Messages API body, validating it the way Anthropic
// does for the fields the simulator needs. The messages are pydantic's, as
// the real API words them ("max_tokens: Field required"). On a rejection
// the returned request, when not nil, carries what was read (stream).
func parseMessages(body []byte) (*chatReq, *reqError) {
	var w anthropicRequest
	if err := json.Unmarshal(body, &w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// reconstructed: pydantic's wording for a wrong type.
			return nil, &reqError{status: 400, kind: BadRequest, msg: te.Field + ": Input should be a valid " + pydanticKind(te.Type.Kind().String())}
		}
		return nil, &reqError{status: 400, kind: BadRequest, msg: "The request body is not valid JSON: " + jsonSyntaxWhere(body, err)}
	}
	r := &chatReq{}
	if w.Stream != nil {
		r.stream = *w.Stream
	}
	if w.Model == nil {
		return r, &reqError{status: 400, kind: BadRequest, msg: "model: Field required"}
	}
	r.model = *w.Model
	if len(w.Messages) == 0 || string(w.Messages) == "null" {
		return r, &reqError{status: 400, kind: BadRequest, model: r.model, msg: "messages: Field required"}
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(w.Messages, &msgs) != nil {
		return r, &reqError{status: 400, kind: BadRequest, model: r.model, msg: "messages: Input should be a valid list"}
	}
	if w.MaxTokens == nil {
		return r, &reqError{status: 400, kind: BadRequest, model: r.model, msg: "max_tokens: Field required"}
	}
	r.maxTokens = *w.MaxTokens
	if len(msgs) == 0 {
		return r, &reqError{status: 400, kind: BadRequest, model: r.model, msg: "messages: at least one message is required"}
	}
	r.lastRole = msgs[len(msgs)-1].Role
	r.question = func() (system, prompt string) {
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "user" {
				prompt = blockText(msgs[i].Content)
				break
			}
		}
		return blockText(w.System), prompt
	}

	chars := anthropicChars(w.System)
	for _, m := range msgs {
		chars += anthropicChars(m.Content)
	}
	decls := make([]toolDecl, len(w.Tools))
	toolChars := 0
	for i, t := range w.Tools {
		decls[i] = toolDecl{t.Name, t.InputSchema}
		toolChars += len(t.Name) + len(t.InputSchema)
	}
	// About four characters a token, the few tokens of framing each message
	// costs (the captured "Say hello. Use only one word." is 15) and the
	// tool-use system prompt Anthropic adds when tools are offered (the
	// captured one-tool request counts 712).
	r.promptTokens = (chars+3)/4 + 3*len(msgs) + 4
	if len(w.Tools) > 0 {
		r.promptTokens += 300 + toolChars/4
	}
	if c := w.ToolChoice; c == nil || c.Type != "none" {
		name := ""
		if c != nil && c.Type == "tool" {
			name = c.Name
		}
		r.tool = chooseTool(decls, name)
	}
	return r, nil
}

// anthropicChars counts the text of a system prompt or message content: a
// string, or blocks of text, tool_use input and tool_result content.
func anthropicChars(raw json.RawMessage) int {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return utf8.RuneCountInString(s)
	}
	var blocks []struct {
		Text    string          `json:"text"`
		Input   json.RawMessage `json:"input"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return 0
	}
	n := 0
	for _, b := range blocks {
		n += utf8.RuneCountInString(b.Text) + len(b.Input)
		if len(b.Content) > 0 {
			n += anthropicChars(b.Content)
		}
	}
	return n
}

// pydanticKind names a Go kind the way pydantic's "Input should be a valid
// ..." messages do.
func pydanticKind(kind string) string {
	switch kind {
	case "bool":
		return "boolean"
	case "string":
		return "string"
	case "slice":
		return "list"
	case "struct", "map", "ptr":
		return "dictionary"
	case "float64", "float32":
		return "number"
	}
	return "integer"
}

// jsonSyntaxWhere describes a JSON syntax error the way Anthropic reports
// one ("unexpected character: line 8 column 316 (char 466)", seen in
// https://github.com/promptfoo/promptfoo/issues/4489).
func jsonSyntaxWhere(body []byte, err error) string {
	what, at := "unexpected character", len(body)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		at = int(se.Offset) - 1
		if strings.Contains(se.Error(), "unexpected end") {
			what, at = "unexpected end of data", len(body)
		}
	}
	at = min(max(at, 0), len(body))
	line := 1 + bytes.Count(body[:at], []byte("\n"))
	col := at - bytes.LastIndexByte(body[:at], '\n')
	return fmt.Sprintf("%s: line %d column %d (char %d)", what, line, col, at)
}

// anthropicUsage is a Messages API usage object; fields left at their zero
// value are absent where the recordings lack them (message_delta).
type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation,omitempty"`
	OutputTokens int    `json:"output_tokens"`
	ServiceTier  string `json:"service_tier,omitempty"`
	InferenceGeo string `json:"inference_geo,omitempty"`
}

// anthropicBlock is one content block: text or tool_use.
type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// anthropicMessage is the message object, whole or as message_start carries it.
type anthropicMessage struct {
	Model        string           `json:"model"`
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Content      []anthropicBlock `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

// anthropicStop is the stop_reason of the answer.
func (a *answer) anthropicStop() string {
	switch a.finish {
	case "tool_calls":
		return "tool_use"
	case "content_filter":
		return "refusal" // 200 with stop_reason "refusal" (anthropic-sdk-go message.go)
	case "length":
		return "max_tokens"
	}
	return "end_turn"
}

func (a *answer) anthropicIDs() (msgID, toolID string) {
	return "msg_01" + token(a.seed^0x6d7367, 22, base62), "toolu_01" + token(a.seed^0x746f6f6c, 22, base62)
}

func (a *answer) anthropicUsage(output int, full bool) anthropicUsage {
	u := anthropicUsage{InputTokens: a.prompt, OutputTokens: output}
	if full {
		u.CacheCreation = &struct {
			Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
			Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
		}{}
		u.ServiceTier, u.InferenceGeo = "standard", "not_available"
	}
	return u
}

// anthropicBlocks is the content of the whole message.
func (a *answer) anthropicBlocks() []anthropicBlock {
	_, toolID := a.anthropicIDs()
	switch {
	case a.tool != nil:
		return []anthropicBlock{{Type: "tool_use", ID: toolID, Name: a.tool.name, Input: json.RawMessage(a.tool.args)}}
	case a.finish == "content_filter":
		return []anthropicBlock{}
	}
	text := a.text
	return []anthropicBlock{{Type: "text", Text: &text}}
}

// anthropicWire encodes the answer in the Messages API.
func (a *answer) anthropicWire(ec errCtx, stream bool) wireAnswer {
	wa := wireAnswer{
		header:       headerOf("Request-Id", ec.requestID),
		bodyType:     "application/json",
		streamHeader: headerOf("Content-Type", "text/event-stream; charset=utf-8", "Cache-Control", "no-cache"),
		errorFrame:   func(data []byte) []byte { return namedFrame("error", data) },
		// The mid-stream error of Anthropic's streaming docs and SDK fixtures.
		defaultErrorData: []byte(`{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`),
	}
	msgID, _ := a.anthropicIDs()
	stop := a.anthropicStop()
	if !stream {
		wa.body, _ = marshal(anthropicMessage{Model: a.model, ID: msgID, Type: "message", Role: "assistant",
			Content: a.anthropicBlocks(), StopReason: &stop, Usage: a.anthropicUsage(a.completion, true)})
		return wa
	}

	n := 0
	eventData := func(v any) []byte {
		b, _ := marshal(v)
		n++
		return a.pad(b, n)
	}
	event := func(name string, v any) []byte { return namedFrame(name, eventData(v)) }
	type block struct {
		Type         string         `json:"type"`
		Index        int            `json:"index"`
		ContentBlock anthropicBlock `json:"content_block"`
	}
	type delta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta struct {
			Type        string  `json:"type"`
			Text        *string `json:"text,omitempty"`
			PartialJSON *string `json:"partial_json,omitempty"`
		} `json:"delta"`
	}
	start := anthropicMessage{Model: a.model, ID: msgID, Type: "message", Role: "assistant",
		Content: []anthropicBlock{}, Usage: a.anthropicUsage(1, true)}
	wa.head = append(wa.head, event("message_start", struct {
		Type    string           `json:"type"`
		Message anthropicMessage `json:"message"`
	}{"message_start", start}))
	ping := namedFrame("ping", []byte(`{"type": "ping"}`))
	blocks := a.anthropicBlocks()
	if len(blocks) == 0 { // a refusal: no content at all
		wa.head = append(wa.head, ping)
		wa.preamble = len(wa.head)
	} else {
		b := blocks[0]
		if b.Type == "tool_use" {
			b.Input = json.RawMessage("{}")
		} else {
			empty := ""
			b.Text = &empty
		}
		wa.head = append(wa.head, event("content_block_start", block{"content_block_start", 0, b}), ping)
		var pieces []string
		if a.tool != nil {
			pieces = append([]string{""}, a.pieces()...) // the first input_json_delta is empty
		} else {
			pieces = a.pieces()
		}
		wa.preamble = len(wa.head)
		for _, p := range pieces {
			d := delta{Type: "content_block_delta"}
			if a.tool != nil {
				d.Delta.Type, d.Delta.PartialJSON = "input_json_delta", &p
			} else {
				d.Delta.Type, d.Delta.Text = "text_delta", &p
			}
			data := eventData(d)
			wa.garbled = append(wa.garbled, garbledEvent{len(wa.head), namedFrame("content_block_delta", cutShort(data))})
			wa.head = append(wa.head, namedFrame("content_block_delta", data))
		}
		wa.tail = append(wa.tail, event("content_block_stop", struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}{"content_block_stop", 0}))
	}
	md := struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage anthropicUsage `json:"usage"`
	}{Type: "message_delta", Usage: a.anthropicUsage(a.completion, false)}
	md.Delta.StopReason = stop
	wa.tail = append(wa.tail, event("message_delta", md))
	wa.tail = append(wa.tail, event("message_stop", struct {
		Type string `json:"type"`
	}{"message_stop"}))
	wa.stopLast = true
	return wa
}

// pad inserts the run of spaces Anthropic puts before the closing brace of
// an event's data (0 to 15, derived from the answer and the event number).
func (a *answer) pad(b []byte, n int) []byte {
	k := int(splitmix(a.seed^0x70616464+uint64(n)) % 16)
	if k == 0 || len(b) == 0 {
		return b
	}
	out := make([]byte, 0, len(b)+k)
	out = append(out, b[:len(b)-1]...)
	out = append(out, bytes.Repeat([]byte(" "), k)...)
	return append(out, b[len(b)-1])
}

// writeAnthropicModel answers GET /v1/models/{model} with the Models API's
// object, or its 404 for a model the provider does not serve.
func writeAnthropicModel(w http.ResponseWriter, t *target, m string, ec errCtx) {
	if len(t.models) > 0 && !t.models[m] {
		writeReply(w, anthropicReply(ec, 404, "not_found_error", "model: "+m, nil), nil)
		return
	}
	v := struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}{"model", m, m, "2025-10-01T00:00:00Z"}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", ec.requestID)
	b, _ := json.Marshal(v)
	w.Write(b) //nolint:errcheck // nothing to do for a gone client
}
