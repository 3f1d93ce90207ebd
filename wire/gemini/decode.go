package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

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
var ErrMalformed = errors.New("gemini: malformed response")

// typeSafety is the ProviderError.Type of an answer withheld by Gemini's
// safety filters; classify maps it to Policy.
const typeSafety = "safety"

// blockingFinish are the finish reasons that mean the answer was withheld
// by a safety or recitation filter (go-genai types.go FinishReason;
// PROVIDERS.md Gemini, Safety). Each is a policy refusal, never a success.
var blockingFinish = map[string]bool{
	"SAFETY": true, "RECITATION": true, "BLOCKLIST": true, "PROHIBITED_CONTENT": true,
	"SPII": true, "IMAGE_SAFETY": true, "IMAGE_PROHIBITED_CONTENT": true, "IMAGE_RECITATION": true,
}

// failedFinish are the finish reasons of an answer that is unusable for a
// reason of this attempt, not of the request's content: the model's
// function call did not parse, named an undeclared tool, or came too
// often (go-genai types.go). They are errors with the reason as Code and
// no Type, which classify reads as Unknown (at most one hop).
var failedFinish = map[string]bool{
	"MALFORMED_FUNCTION_CALL": true, "UNEXPECTED_TOOL_CALL": true, "TOO_MANY_TOOL_CALLS": true,
}

// generateResponse is a GenerateContentResponse: the whole answer of
// :generateContent, or one chunk of :streamGenerateContent.
type generateResponse struct {
	Candidates     []candidate     `json:"candidates"`
	PromptFeedback *promptFeedback `json:"promptFeedback"`
	UsageMetadata  *usageMetadata  `json:"usageMetadata"`
	ModelVersion   string          `json:"modelVersion"`
	ResponseID     string          `json:"responseId"`
	// Error is set on an error chunk ({"error":{...}}), never on an answer.
	Error json.RawMessage `json:"error"`
}

type candidate struct {
	Content       *content `json:"content"`
	FinishReason  string   `json:"finishReason"`
	FinishMessage string   `json:"finishMessage"`
	Index         int      `json:"index"`
}

type promptFeedback struct {
	BlockReason        string `json:"blockReason"`
	BlockReasonMessage string `json:"blockReasonMessage"`
}

type usageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
	// CachedContentTokenCount is the part of the prompt served from a
	// context cache.
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
}

// canonical counts the prompt (and the results of Google's built-in
// tools) as input, the candidates and the thoughts as output: both are
// billed as output tokens.
func (u *usageMetadata) canonical() *llm.Usage {
	if u == nil {
		return nil
	}
	return &llm.Usage{
		InputTokens:     u.PromptTokenCount + u.ToolUsePromptTokenCount,
		OutputTokens:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
		CacheReadTokens: u.CachedContentTokenCount,
	}
}

// first returns the candidate with index 0 (an omitted index is 0), else
// the first one; nil when there is none.
func (r *generateResponse) first() *candidate {
	for i := range r.Candidates {
		if r.Candidates[i].Index == 0 {
			return &r.Candidates[i]
		}
	}
	if len(r.Candidates) > 0 {
		return &r.Candidates[0]
	}
	return nil
}

// blocked reports an answer withheld by the safety filters: a blocked
// prompt (promptFeedback.blockReason, no candidates) or a candidate that
// ended with a blocking finish reason. code is the reason.
func (r *generateResponse) blocked() (code, msg string, ok bool) {
	if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
		msg = "prompt blocked: " + pf.BlockReason
		if pf.BlockReasonMessage != "" {
			msg += ": " + pf.BlockReasonMessage
		}
		return pf.BlockReason, msg, true
	}
	if c := r.first(); c != nil && blockingFinish[c.FinishReason] {
		msg = "answer blocked: " + c.FinishReason
		if c.FinishMessage != "" {
			msg += ": " + c.FinishMessage
		}
		return c.FinishReason, msg, true
	}
	return "", "", false
}

// failure returns the error an answer stands for, or nil when it is a
// usable answer: a top-level error object, a safety block (Type "safety",
// Code the reason), a failed finish (failedFinish), or no candidate at
// all.
func (r *generateResponse) failure(header http.Header, body []byte, phase llm.Phase) *llm.ProviderError {
	pe := &llm.ProviderError{Dialect: dialect, Status: http.StatusOK, Header: header,
		Body: exchange.KeepBody(body), Phase: phase}
	if present(r.Error) {
		if st, ok := findStatus(body, 0); ok {
			fillStatus(pe, st, 0)
		} else {
			pe.Message = "error in the answer: " + exchange.CutText(string(bytes.TrimSpace(r.Error)))
		}
		return pe
	}
	if code, msg, ok := r.blocked(); ok {
		pe.Type, pe.Code, pe.Message = typeSafety, code, msg
		return pe
	}
	c := r.first()
	if c == nil {
		if phase == llm.PhaseStream {
			return nil // a chunk may carry only usage
		}
		pe.Message = "answer has no candidates"
		return pe
	}
	if failedFinish[c.FinishReason] {
		pe.Code, pe.Message = c.FinishReason, "answer failed: "+c.FinishReason
		if c.FinishMessage != "" {
			pe.Message += ": " + c.FinishMessage
		}
		return pe
	}
	return nil
}

// finishReason maps a Gemini finish reason to the canonical one: STOP is
// FinishStop, or FinishToolCalls when the answer called functions (Gemini
// says STOP either way); MAX_TOKENS is FinishLength. Another reason is
// kept in lower case ("other", "language"); "" stays "" unless functions
// were called.
func finishReason(s string, calls bool) llm.FinishReason {
	switch {
	case (s == "STOP" || s == "") && calls:
		return llm.FinishToolCalls
	case s == "STOP":
		return llm.FinishStop
	case s == "MAX_TOKENS":
		return llm.FinishLength
	}
	return llm.FinishReason(strings.ToLower(s))
}

// callID is the ID of the n-th function call (0-based) of an answer:
// Gemini's own id when the part has one, else "call_<n>".
func callID(id string, n int) string {
	if id != "" {
		return id
	}
	return "call_" + strconv.Itoa(n)
}

// present reports whether a raw JSON field is there and says something:
// not null, false, "", {} or [].
func present(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", "false", `""`, "{}", "[]":
		return false
	}
	return true
}

// DecodeResponse reads a :generateContent response and always closes its
// body.
//
// A non-2xx status returns ParseError's *llm.ProviderError (at most
// MaxErrorBody of the body is read). A 2xx returns the first candidate as
// an *llm.Response:
//
//   - Message.Content is its text parts joined, thought parts
//     ("thought": true) left out;
//   - each functionCall part is a ToolCall whose ID is the part's id, or
//     "call_<n>" for the n-th call (0-based) when Gemini gave none, and
//     whose Arguments are the compact JSON of args ("{}" when absent);
//   - FinishReason: see finishReason (STOP with calls is tool_calls);
//   - Usage: promptTokenCount (+ toolUsePromptTokenCount) in,
//     candidatesTokenCount + thoughtsTokenCount out;
//   - ID is responseId, Model is modelVersion.
//
// A 2xx that is a failure returns an *llm.ProviderError with Status 200
// and Phase response: a prompt blocked by promptFeedback.blockReason, or a
// candidate with a blocking finish reason (SAFETY, RECITATION, BLOCKLIST,
// PROHIBITED_CONTENT, SPII, IMAGE_*), has Type "safety" and Code the
// reason (classify: Policy); MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL
// and TOO_MANY_TOOL_CALLS have Code the reason (classify: Unknown); an
// error object, or no candidate at all, is an error too.
//
// A 2xx whose body is an event stream (Content-Type text/event-stream, or
// no JSON content type and a body that starts like one) is drained
// through the stream decoder and assembled into one response, so a
// captured stream reads like the answer it carried; its errors are the
// stream's.
func DecodeResponse(resp *http.Response) (*llm.Response, error) {
	return decoder.DecodeResponse(resp, "")
}

// decoder is what DecodeResponse, DecodeStream and the Client share with
// the other dialects. A stream is assembled by llm.Assemble: Gemini sends
// each call whole, in one delta with its own Index.
var decoder = &exchange.Decoder[*stream]{
	Name:        dialect,
	StatusError: statusError,
	DecodeJSON:  decodeBody,
	NewStream:   newStream,
}

// decodeBody decodes a 2xx JSON body.
func decodeBody(header http.Header, body []byte) (*llm.Response, error) {
	var r generateResponse
	if err := json.Unmarshal(body, &r); err != nil {
		if pe, ok := ParseStreamError(body); ok {
			// An error array ([{"error":...}]) on a 200.
			pe.Header, pe.Phase = header, llm.PhaseResponse
			return nil, pe
		}
		return nil, malformed(header, body, llm.PhaseResponse, "response body", err)
	}
	if pe := r.failure(header, body, llm.PhaseResponse); pe != nil {
		return nil, pe
	}
	c := r.first()
	out := &llm.Response{
		ID:      r.ResponseID,
		Model:   r.ModelVersion,
		Message: llm.Message{Role: llm.RoleAssistant},
		// Gemini sends no request-id header: its answer's own id is the
		// one its support can look up.
		ProviderRequestID: llm.CleanRequestID(r.ResponseID),
	}
	var text strings.Builder
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			if fc := p.FunctionCall; fc != nil {
				out.Message.ToolCalls = append(out.Message.ToolCalls, llm.ToolCall{
					ID: callID(fc.ID, len(out.Message.ToolCalls)), Name: fc.Name, Arguments: exchange.ArgsText(fc.Args)})
				continue
			}
			if !p.Thought {
				text.WriteString(p.Text)
			}
		}
	}
	out.Message.Content = text.String()
	out.FinishReason = finishReason(c.FinishReason, len(out.Message.ToolCalls) > 0)
	if u := r.UsageMetadata.canonical(); u != nil {
		out.Usage = *u
	}
	return out, nil
}

// malformed is the error for a body or chunk that does not decode.
func malformed(header http.Header, body []byte, phase llm.Phase, what string, err error) error {
	return fmt.Errorf("%w: %w", ErrMalformed, &llm.ProviderError{
		Dialect: dialect, Status: http.StatusOK, Header: header, Body: exchange.KeepBody(body), Phase: phase,
		Message: "malformed " + what + ": " + err.Error(),
	})
}

// statusError is the error of a non-2xx response: ParseError's, with the
// status text as Message when the body says nothing.
func statusError(status int, header http.Header, body []byte) error {
	pe := ParseError(status, header, body)
	if pe.Message == "" && pe.Code == "" && pe.Type == "" {
		pe.Message = strings.ToLower(http.StatusText(status))
	}
	return pe
}
