package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

// dialect names this adapter in every llm.ProviderError it makes.
const dialect = "anthropic"

// Body size limits.
const (
	// MaxResponseBody is the most of a successful response body that is
	// read: 32 MiB. A larger body is an error.
	MaxResponseBody = exchange.MaxResponseBody
	// MaxErrorBody is the most of an error body that is kept: 64 KiB.
	MaxErrorBody = exchange.MaxErrorBody
)

// ErrMalformed is wrapped by the error for a 2xx body or stream event that
// is not the JSON it should be. Being the provider's answer, that error
// also holds an *llm.ProviderError (status 200, no code, the body, and the
// JSON error in its message) for errors.As.
var ErrMalformed = errors.New("anthropic: malformed response")

// malformed is the error for a body or event that does not decode.
func malformed(header http.Header, body []byte, phase llm.Phase, what string, err error) error {
	return fmt.Errorf("%w: %w", ErrMalformed, &llm.ProviderError{
		Dialect: dialect, Status: http.StatusOK, Header: header, Body: exchange.KeepBody(body), Phase: phase,
		Message: "malformed " + what + ": " + err.Error(),
	})
}

// message is a Message object: the body of a 2xx answer, and the "message"
// of a message_start event. Error is read to catch an error body under a
// 2xx status (proxies).
type message struct {
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Model       string          `json:"model"`
	Content     []contentBlock  `json:"content"`
	StopReason  string          `json:"stop_reason"`
	StopDetails *stopDetails    `json:"stop_details"`
	Usage       *usage          `json:"usage"`
	Error       json.RawMessage `json:"error"`
}

// contentBlock is a response content block. Only text and tool_use blocks
// are read; thinking, redacted_thinking, server_tool_use,
// web_search_tool_result and any other type are skipped.
type contentBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// usage is a Message's usage. Fields are pointers because message_delta
// events carry only the counts that changed.
type usage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// tally accumulates usage: later counts replace earlier ones, field by
// field (message_delta usage is cumulative).
type tally struct {
	input, cacheWrite, cacheRead, output int
	seen                                 bool
}

func (t *tally) add(u *usage) {
	if u == nil {
		return
	}
	for _, f := range []struct {
		dst *int
		src *int
	}{
		{&t.input, u.InputTokens}, {&t.cacheWrite, u.CacheCreationInputTokens},
		{&t.cacheRead, u.CacheReadInputTokens}, {&t.output, u.OutputTokens},
	} {
		if f.src != nil {
			*f.dst, t.seen = *f.src, true
		}
	}
}

// canonical is the usage in detour's terms: input counts the prompt tokens
// written to and read from the cache too, since they were all sent.
func (t *tally) canonical() *llm.Usage {
	if !t.seen {
		return nil
	}
	return &llm.Usage{InputTokens: t.input + t.cacheWrite + t.cacheRead, OutputTokens: t.output,
		CacheReadTokens: t.cacheRead, CacheWriteTokens: t.cacheWrite}
}

// finishReason maps a stop_reason to the canonical finish reason:
// end_turn, stop_sequence and pause_turn are stop; max_tokens and
// model_context_window_exceeded are length (a valid, truncated answer);
// tool_use is tool_calls; refusal is content_filter. An unknown value is
// kept as it is.
func finishReason(s string) llm.FinishReason {
	switch s {
	case "end_turn", "stop_sequence", "pause_turn":
		return llm.FinishStop
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "tool_use":
		return llm.FinishToolCalls
	case "refusal":
		return llm.FinishContentFilter
	}
	return llm.FinishReason(s)
}

// DecodeResponse reads a Messages API response and always closes its body.
//
// A non-2xx status returns ParseError's *llm.ProviderError (at most
// MaxErrorBody of the body is read). A 2xx returns an *llm.Response: the
// id, the model that answered, the text blocks concatenated as Content,
// each tool_use block as a ToolCall whose Arguments are the compact JSON of
// its input ("{}" when it has none), the stop_reason mapped as
// finishReason says, and the usage (input_tokens plus the cache creation and
// cache read tokens as InputTokens; output_tokens). Other block types
// (thinking, server tools) are skipped.
//
// A 2xx that is a failure in disguise returns a ProviderError: an error
// body (ParseError with status 200), and a message that stopped with
// stop_reason "refusal", which returns Code and Type "refusal" (classify:
// policy) with the stop_details category and explanation in Message, never
// a success.
//
// A 2xx whose body is an event stream (Content-Type text/event-stream, or
// no JSON content type and a body that starts like one) is drained through
// the stream decoder and assembled into one response, so a captured stream
// can be read as an answer; an error event in it returns that error, a
// stream cut short the truncation error, a refusal the refusal error; tool
// call arguments are compacted as for a JSON body.
func DecodeResponse(resp *http.Response) (*llm.Response, error) {
	return decoder.DecodeResponse(resp, "")
}

// decoder is what DecodeResponse, DecodeStream and the Client share with
// the other dialects.
var decoder = &exchange.Decoder[*stream]{
	Name:        dialect,
	StatusError: statusError,
	DecodeJSON:  decodeBody,
	NewStream:   newStream,
	Assemble:    assemble,
}

// decodeBody decodes a 2xx JSON body.
func decodeBody(header http.Header, body []byte) (*llm.Response, error) {
	var m message
	// The body is this call's alone (exchange.Decoder): the answer's text
	// borrows it rather than copying it once more.
	if !parseMessageFast(exchange.Borrow(body), &m) {
		m = message{}
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, malformed(header, body, llm.PhaseResponse, "response body", err)
		}
	}
	if m.Type == "error" || len(bytes.TrimSpace(m.Error)) > 0 && string(bytes.TrimSpace(m.Error)) != "null" {
		pe := ParseError(http.StatusOK, header, body)
		if pe.Message == "" && pe.Type == "" && pe.Code == "" {
			pe.Message = "response carries an error object"
		}
		return nil, pe
	}
	if m.StopReason == "refusal" {
		return nil, refusalError(header, body, m.StopDetails)
	}
	out := &llm.Response{
		ID:           strings.Clone(m.ID), // kept apart from the answer (records, logs): not pinning its body
		Model:        strings.Clone(m.Model),
		FinishReason: finishReason(m.StopReason),
		Message:      llm.Message{Role: llm.RoleAssistant},
	}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			out.Message.ToolCalls = append(out.Message.ToolCalls,
				llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: exchange.ArgsText(b.Input)})
		}
	}
	out.Message.Content = text.String()
	var t tally
	t.add(m.Usage)
	if u := t.canonical(); u != nil {
		out.Usage = *u
	}
	return out, nil
}

// statusError is the error of a non-2xx response: ParseError's.
func statusError(status int, header http.Header, body []byte) error {
	return ParseError(status, header, body)
}

// assemble drains a stream into one response: a refusal returns the
// refusal error, and tool call arguments are compacted as DecodeResponse
// gives them for a JSON body.
func assemble(s *stream) (*llm.Response, error) {
	out, err := llm.Assemble(s)
	if err != nil {
		return nil, err
	}
	if s.stopReason == "refusal" {
		return nil, refusalError(s.header, nil, s.stopDetails)
	}
	for i := range out.Message.ToolCalls {
		// As DecodeResponse gives them: the fragments joined, compacted.
		if a := []byte(out.Message.ToolCalls[i].Arguments); json.Valid(a) {
			out.Message.ToolCalls[i].Arguments = exchange.ArgsText(a)
		}
	}
	return out, nil
}
