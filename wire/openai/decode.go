package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

// dialect names this adapter in every llm.ProviderError it makes.
const dialect = "openai"

// Body size limits.
const (
	// MaxResponseBody is the most of a successful response body that is
	// read: 32 MiB. A larger body is an error.
	MaxResponseBody = exchange.MaxResponseBody
	// MaxErrorBody is the most of an error body that is kept: 64 KiB.
	MaxErrorBody = exchange.MaxErrorBody
)

// ErrMalformed is wrapped by the error for a 2xx body or stream chunk that
// is not the JSON it should be. Being the provider's answer, that error
// also holds an *llm.ProviderError (status 200, no code, the body, and the
// JSON error in its message) for errors.As.
var ErrMalformed = errors.New("openai: malformed response")

// malformed is the error for a body or chunk that does not decode.
func malformed(header http.Header, body []byte, phase llm.Phase, what string, err error) error {
	return fmt.Errorf("%w: %w", ErrMalformed, &llm.ProviderError{
		Dialect: dialect, Status: http.StatusOK, Header: header, Body: exchange.CapBody(body), Phase: phase,
		Message: "malformed " + what + ": " + err.Error(),
	})
}

// chatResponse is a chat.completion object.
type chatResponse struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []chatChoice    `json:"choices"`
	Usage   *chatUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      respMessage     `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Error        json.RawMessage `json:"error"` // OpenRouter: an error after generation began
}

type respMessage struct {
	Role         string         `json:"role"`
	Content      textContent    `json:"content"`
	Refusal      *string        `json:"refusal"`
	ToolCalls    []respToolCall `json:"tool_calls"`
	FunctionCall *respFunction  `json:"function_call"` // deprecated single call
}

type respToolCall struct {
	ID       string       `json:"id"`
	Function respFunction `json:"function"`
}

type respFunction struct {
	Name      string  `json:"name"`
	Arguments argText `json:"arguments"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// PromptTokensDetails tells how many of the prompt tokens the
	// provider's prompt cache served.
	PromptTokensDetails promptTokensDetails `json:"prompt_tokens_details"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func (u *chatUsage) canonical() *llm.Usage {
	if u == nil {
		return nil
	}
	return &llm.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
		CacheReadTokens: u.PromptTokensDetails.CachedTokens}
}

// textContent reads a message content that is a string, null, or (Mistral
// and some local servers) an array of parts whose "text" parts are joined.
type textContent string

func (t *textContent) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = textContent(s)
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var sb strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "" {
				sb.WriteString(p.Text)
			}
		}
		*t = textContent(sb.String())
	case string(b) == "null":
		*t = ""
	default:
		return fmt.Errorf("content is %s, want a string, an array or null", b)
	}
	return nil
}

// argText reads tool call arguments: a JSON string as OpenAI sends them,
// or (some local servers) a JSON object, kept as its JSON text.
type argText string

func (a *argText) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = argText(s)
	case string(b) == "null":
		*a = ""
	default:
		*a = argText(b)
	}
	return nil
}

// present reports whether a raw JSON field was there and not null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// finishReason maps an OpenAI-compatible finish_reason to the canonical
// one. Synonyms some servers use are folded in; an unknown value is kept
// as it is.
func finishReason(s string) llm.FinishReason {
	switch s {
	case "stop", "eos", "end_turn", "stop_sequence":
		return llm.FinishStop
	case "length", "max_tokens", "model_length":
		return llm.FinishLength
	case "tool_calls", "function_call", "tool_use":
		return llm.FinishToolCalls
	case "content_filter":
		return llm.FinishContentFilter
	}
	return llm.FinishReason(s)
}

// DecodeResponse reads a chat completions response and always closes its
// body.
//
// A non-2xx status returns ParseError's *llm.ProviderError (at most
// MaxErrorBody of the body is read). A 2xx returns the first choice as an
// *llm.Response, except when it is an error in disguise: a body with a
// top-level "error" (ParseError with status 200), a choice that carries an
// error or ends with finish_reason "error" (OpenRouter), no choices at all,
// or finish_reason "content_filter", which returns a ProviderError with
// Code and Type "content_filter" (a policy refusal, never a success).
//
// A 2xx whose body is an event stream (Content-Type text/event-stream, or
// no JSON content type and a body that starts like one) is drained through
// the stream decoder and assembled into one response; an error frame in it
// returns that error, and a stream cut short returns the truncation error.
// A message with no content but a refusal (structured outputs) carries the
// refusal text as its content.
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
	var cr chatResponse
	// The body is this call's alone (exchange.Decoder): the answer's text
	// borrows it rather than copying it once more.
	if !parseResponseFast(exchange.Borrow(body), &cr) {
		cr = chatResponse{}
		if err := json.Unmarshal(body, &cr); err != nil {
			return nil, malformed(header, body, llm.PhaseResponse, "response body", err)
		}
	}
	if present(cr.Error) {
		pe := providerError(ParseError(http.StatusOK, header, exchange.CapBody(body)), header, body, llm.PhaseResponse)
		if pe.Message == "" && pe.Code == "" && pe.Type == "" {
			pe.Message = "response carries an error object"
		}
		return nil, pe
	}
	if len(cr.Choices) == 0 {
		return nil, &llm.ProviderError{Dialect: dialect, Status: http.StatusOK, Header: header,
			Body: exchange.CapBody(body), Phase: llm.PhaseResponse, Message: "response has no choices"}
	}
	ch := &cr.Choices[0]
	for i := range cr.Choices {
		if cr.Choices[i].Index == 0 {
			ch = &cr.Choices[i]
			break
		}
	}
	if present(ch.Error) || ch.FinishReason == "error" {
		wrapped := []byte(`{"error":` + string(orNull(ch.Error)) + `}`)
		var pe *llm.ProviderError
		if present(ch.Error) {
			pe = ParseError(http.StatusOK, header, wrapped)
		}
		pe = providerError(pe, header, body, llm.PhaseResponse)
		pe.Body = exchange.CapBody(body)
		if pe.Message == "" {
			pe.Message = errorMessage(wrapped, `response ended with finish_reason "error"`)
		}
		return nil, pe
	}
	out := &llm.Response{
		ID:           strings.Clone(cr.ID), // kept apart from the answer (records, logs): not pinning its body
		Model:        strings.Clone(cr.Model),
		FinishReason: finishReason(ch.FinishReason),
		Message: llm.Message{
			Role:    llm.RoleAssistant,
			Content: string(ch.Message.Content),
		},
	}
	if out.Message.Content == "" && ch.Message.Refusal != nil {
		out.Message.Content = *ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		out.Message.ToolCalls = append(out.Message.ToolCalls, llm.ToolCall{
			ID: tc.ID, Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)})
	}
	if fc := ch.Message.FunctionCall; fc != nil && len(ch.Message.ToolCalls) == 0 {
		out.Message.ToolCalls = []llm.ToolCall{{Name: fc.Name, Arguments: string(fc.Arguments)}}
	}
	if u := cr.Usage.canonical(); u != nil {
		out.Usage = *u
	}
	if out.FinishReason == llm.FinishContentFilter {
		return nil, contentFilterError(header, body)
	}
	return out, nil
}

// contentFilterError is the refusal a 200 with finish_reason
// "content_filter" stands for.
func contentFilterError(header http.Header, body []byte) *llm.ProviderError {
	return &llm.ProviderError{
		Dialect: dialect,
		Status:  http.StatusOK,
		Code:    "content_filter",
		Type:    "content_filter",
		Message: "response blocked by content filter",
		Body:    exchange.CapBody(body),
		Header:  header,
		Phase:   llm.PhaseResponse,
	}
}

// statusError is the error of a non-2xx response: ParseError's, made
// complete by providerError.
func statusError(status int, header http.Header, body []byte) error {
	return providerError(ParseError(status, header, body), header, body, llm.PhaseResponse)
}

// providerError makes sure an error from the parsers is a usable non-nil
// *llm.ProviderError with its dialect, status, header, body and phase.
func providerError(pe *llm.ProviderError, header http.Header, body []byte, phase llm.Phase) *llm.ProviderError {
	if pe == nil {
		pe = &llm.ProviderError{Status: http.StatusOK}
	}
	if pe.Dialect == "" {
		pe.Dialect = dialect
	}
	if pe.Status == 0 {
		pe.Status = http.StatusOK
	}
	if pe.Header == nil {
		pe.Header = header
	}
	if pe.Body == nil {
		pe.Body = exchange.CapBody(body)
	}
	if pe.Phase == "" {
		pe.Phase = phase
	}
	if pe.Message == "" && pe.Code == "" && pe.Type == "" {
		pe.Message = errorMessage(body, "")
	}
	return pe
}

// errorMessage digs a human message out of an error body: error.message,
// an "error" string, or a top-level "message" (vLLM); else fallback.
func errorMessage(body []byte, fallback string) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			return obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		}
	}
	return fallback
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// assemble drains a stream into one response; a stream that ended with
// finish_reason "content_filter" is the refusal it stands for.
func assemble(s *stream) (*llm.Response, error) {
	out, err := llm.Assemble(s)
	if err != nil {
		return nil, err
	}
	if out.FinishReason == llm.FinishContentFilter {
		return nil, contentFilterError(s.header, nil)
	}
	return out, nil
}
