package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

// Dialect names this adapter in every llm.ProviderError it makes and in
// the llm.Raw of the requests and answers it passes as they came: config's
// dialect "openai-responses".
const Dialect = "openai-responses"

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
var ErrMalformed = errors.New("responses: malformed response")

// malformed is the error for a body or event that does not decode.
func malformed(header http.Header, body []byte, phase llm.Phase, what string, err error) error {
	return fmt.Errorf("%w: %w", ErrMalformed, &llm.ProviderError{
		Dialect: Dialect, Status: http.StatusOK, Header: header, Body: exchange.CapBody(body), Phase: phase,
		Message: "malformed " + what + ": " + err.Error(),
	})
}

// response is a Response object: the whole answer, or what the
// response.* stream events carry.
type response struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Status            string          `json:"status"`
	Model             string          `json:"model"`
	Output            []outputItem    `json:"output"`
	Usage             *usage          `json:"usage"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// outputItem is one item of a response's output: a message, a
// function_call, or an item detour does not read (reasoning, web search
// and other built-in tool calls), left opaque.
type outputItem struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	Role      string        `json:"role"`
	Content   []contentPart `json:"content"`
	CallID    string        `json:"call_id"`
	Name      string        `json:"name"`
	Arguments string        `json:"arguments"`
}

// contentPart is one part of an output message: output_text or refusal.
type contentPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

// text returns the part's text: an output_text's text, a refusal's words.
func (p *contentPart) text() string {
	switch p.Type {
	case "output_text", "text":
		return p.Text
	case "refusal":
		return p.Refusal
	}
	return ""
}

// usage is a Response's usage object.
type usage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (u *usage) canonical() *llm.Usage {
	if u == nil {
		return nil
	}
	return &llm.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.InputTokensDetails.CachedTokens, ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}
}

// present reports whether a raw JSON field was there and not null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// incompleteFinish maps incomplete_details.reason to the canonical finish:
// max_output_tokens is the output cap (length), content_filter the
// filter's; another reason ("max_messages", "steered", ...) is kept as it
// is.
func incompleteFinish(reason string) llm.FinishReason {
	switch reason {
	case "max_output_tokens", "":
		return llm.FinishLength
	case "content_filter":
		return llm.FinishContentFilter
	}
	return llm.FinishReason(reason)
}

// DecodeResponse reads a Responses API response and always closes its
// body.
//
// A non-2xx status returns ParseError's *llm.ProviderError (at most
// MaxErrorBody of the body is read). A 2xx returns the output as an
// *llm.Response: the text of its message items (output_text parts, and a
// refusal's words, as chat completions carries them), one tool call per
// function_call item, the usage (cached and reasoning tokens too) and a
// finish reason: tool_calls when a function was called, stop when the
// status is completed, length when the response is incomplete at
// max_output_tokens. Reasoning items and built-in tool calls are left
// out. A 2xx is an error when it stands for one: status failed (a
// ProviderError whose Code is error.code, e.g. server_error), a top-level
// error, or incomplete_details.reason content_filter (Code
// "content_filter": a policy refusal, never a success).
//
// A 2xx whose body is an event stream is drained through the stream
// decoder and assembled into one response, with the same readings.
func DecodeResponse(resp *http.Response) (*llm.Response, error) {
	return decoder.DecodeResponse(resp, "")
}

// decoder is what DecodeResponse, DecodeStream and the Client share with
// the other dialects.
var decoder = &exchange.Decoder[*stream]{
	Name:        Dialect,
	StatusError: statusError,
	DecodeJSON:  decodeBody,
	NewStream:   newStream,
	Assemble:    assemble,
}

// decodeBody decodes a 2xx JSON body.
func decodeBody(header http.Header, body []byte) (*llm.Response, error) {
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, malformed(header, body, llm.PhaseResponse, "response body", err)
	}
	if pe := responseError(&r, header, body, llm.PhaseResponse); pe != nil {
		return nil, pe
	}
	if r.Object != "" && r.Object != "response" {
		return nil, &llm.ProviderError{Dialect: Dialect, Status: http.StatusOK, Header: header,
			Body: exchange.CapBody(body), Phase: llm.PhaseResponse, Message: "response body is a " + r.Object + ", not a response"}
	}
	out := answerOf(&r)
	if out.FinishReason == llm.FinishContentFilter {
		return nil, contentFilterError(header, body, llm.PhaseResponse)
	}
	return out, nil
}

// answerOf reads a response object (valid or not) into an answer.
func answerOf(r *response) *llm.Response {
	out := &llm.Response{ID: r.ID, Model: r.Model, Message: llm.Message{Role: llm.RoleAssistant}}
	var text strings.Builder
	for i := range r.Output {
		it := &r.Output[i]
		switch it.Type {
		case "message":
			for j := range it.Content {
				text.WriteString(it.Content[j].text())
			}
		case "function_call":
			out.Message.ToolCalls = append(out.Message.ToolCalls,
				llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
		}
	}
	out.Message.Content = text.String()
	out.FinishReason = finishOf(r.Status, r.IncompleteDetails, len(out.Message.ToolCalls) > 0)
	if u := r.Usage.canonical(); u != nil {
		out.Usage = *u
	}
	return out
}

// finishOf is the finish reason of a response of status, with or without
// a function call.
func finishOf(status string, inc *struct {
	Reason string `json:"reason"`
}, calls bool) llm.FinishReason {
	if status == "incomplete" || inc != nil && inc.Reason != "" {
		reason := ""
		if inc != nil {
			reason = inc.Reason
		}
		return incompleteFinish(reason)
	}
	if calls {
		return llm.FinishToolCalls
	}
	return llm.FinishStop
}

// responseError is the error a response object stands for: status failed
// or cancelled, or an error object; nil for an answer.
func responseError(r *response, header http.Header, body []byte, phase llm.Phase) *llm.ProviderError {
	if !present(r.Error) && r.Status != "failed" && r.Status != "cancelled" {
		return nil
	}
	pe := &llm.ProviderError{Dialect: Dialect, Status: http.StatusOK, Header: header, Body: exchange.CapBody(body), Phase: phase}
	if present(r.Error) {
		f := errorFields(r.Error)
		pe.Type, pe.Code, pe.Param, pe.Message = f.typ, f.code, f.param, f.message
	}
	if pe.Message == "" && pe.Code == "" {
		pe.Message = "response " + r.Status
		if r.Status == "" {
			pe.Message = "response carries an error object"
		}
	}
	return pe
}

// contentFilterError is the refusal a response incomplete by the content
// filter stands for.
func contentFilterError(header http.Header, body []byte, phase llm.Phase) *llm.ProviderError {
	return &llm.ProviderError{
		Dialect: Dialect,
		Status:  http.StatusOK,
		Code:    "content_filter",
		Type:    "content_filter",
		Message: "response incomplete: blocked by the content filter",
		Body:    exchange.CapBody(body),
		Header:  header,
		Phase:   phase,
	}
}

// assemble drains a stream into one response; a stream that ended
// incomplete by the content filter is the refusal it stands for.
func assemble(s *stream) (*llm.Response, error) {
	out, err := llm.Assemble(s)
	if err != nil {
		return nil, err
	}
	if out.FinishReason == llm.FinishContentFilter {
		return nil, contentFilterError(s.header, s.last, llm.PhaseStream)
	}
	return out, nil
}
