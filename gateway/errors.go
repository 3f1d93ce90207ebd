package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/wire/exchange"
)

// apiError is one error answer, written in the client's dialect by
// writeError (a response) or as a stream's error event.
type apiError struct {
	// Status is the HTTP status.
	Status int
	// Type is the OpenAI error type ("invalid_request_error", ...); empty
	// means the one that goes with Status. The Anthropic type is always
	// derived from Status.
	Type string
	// Code and Param are OpenAI's code and param; empty writes null.
	Code  string
	Param string
	// Message says what happened, for a person. Never holds a key.
	Message string
	// RetryAfter, when above 0, is sent as Retry-After (whole seconds).
	RetryAfter int
	// RetryAfterMS, when above 0, is sent as retry-after-ms, which the
	// official SDKs read before Retry-After (CLIENTS.md §1).
	RetryAfterMS int
	// NoRetry sends x-should-retry: false, so official SDKs do not send the
	// request again (they would otherwise multiply the gateway's attempts).
	NoRetry bool
	// Reason labels a request rejected before routing in metrics
	// ("unauthorized", "too_large", ...); empty for routing failures.
	Reason string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message) }

// badRequest returns a 400 invalid_request_error about param.
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param,
		Message: fmt.Sprintf(format, args...), Reason: "bad_request"}
}

// openAIType returns e's OpenAI error type.
func (e *apiError) openAIType() string {
	if e.Type != "" {
		return e.Type
	}
	switch s := e.Status; {
	case s == 401:
		return "authentication_error"
	case s == 403:
		return "permission_error"
	case s == 404:
		return "not_found_error"
	case s == 429:
		return "rate_limit_error"
	case s >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// anthropicType returns e's Anthropic error type, from its status
// (https://docs.anthropic.com/en/api/errors).
func (e *apiError) anthropicType() string {
	switch s := e.Status; {
	case s == 401:
		return "authentication_error"
	case s == 402:
		return "billing_error"
	case s == 403:
		return "permission_error"
	case s == 404:
		return "not_found_error"
	case s == 413:
		return "request_too_large"
	case s == 429:
		return "rate_limit_error"
	case s == 503 || s == 529:
		return "overloaded_error"
	case s == 504:
		return "timeout_error"
	case s >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

// appendOpenAIError appends {"error":{"message","type","param","code"}}:
// all four keys, as the OpenAI SDKs read them.
func appendOpenAIError(b []byte, e *apiError) []byte {
	b = append(b, `{"error":`...)
	b = appendOpenAIErrorObject(b, e)
	return append(b, '}')
}

// appendOpenAIErrorObject appends {"message","type","param","code"}: the
// value of OpenAI's "error" key.
func appendOpenAIErrorObject(b []byte, e *apiError) []byte {
	b = append(b, `{"message":`...)
	b = jsonw.String(b, e.Message)
	b = append(b, `,"type":`...)
	b = jsonw.String(b, e.openAIType())
	b = append(b, `,"param":`...)
	b = appendStringOrNull(b, e.Param)
	b = append(b, `,"code":`...)
	b = appendStringOrNull(b, e.Code)
	return append(b, '}')
}

// appendAnthropicError appends {"type":"error","error":{"type","message"}}.
func appendAnthropicError(b []byte, e *apiError, requestID string) []byte {
	b = append(b, `{"type":"error","error":{"type":`...)
	b = jsonw.String(b, e.anthropicType())
	b = append(b, `,"message":`...)
	b = jsonw.String(b, e.Message)
	b = append(b, '}')
	if requestID != "" {
		b = append(b, `,"request_id":`...)
		b = jsonw.String(b, requestID)
	}
	return append(b, '}')
}

// appendDialectError appends e's JSON body in dialect d.
func appendDialectError(b []byte, d dialect, e *apiError, requestID string) []byte {
	switch d {
	case anthropicDialect:
		return appendAnthropicError(b, e, requestID)
	case geminiDialect:
		return appendGoogleError(b, e)
	}
	return appendOpenAIError(b, e)
}

// writeError writes e as a JSON response in dialect d.
func writeError(w http.ResponseWriter, d dialect, e *apiError, requestID string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.NoRetry {
		h.Set("X-Should-Retry", "false")
	}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.RetryAfterMS > 0 {
		h.Set("Retry-After-Ms", strconv.Itoa(e.RetryAfterMS))
	}
	b := appendDialectError(make([]byte, 0, 256), d, e, requestID)
	b = append(b, '\n')
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.Status)
	w.Write(b) //nolint:errcheck // nothing to do for a gone client
}

// maxRetryAfter caps the Retry-After the gateway sends: above 60 s the
// OpenAI Node SDK ignores it and above 2 min openai-go stops retrying,
// while the Anthropic SDKs would sleep the full value (CLIENTS.md §1).
const maxRetryAfter = 60

// routeError turns the router's error into the answer the client gets.
func (s *Server) routeError(err error, route *router.Route) *apiError {
	var re *router.Error
	errors.As(err, &re)
	switch {
	case errors.Is(err, router.ErrCanceled):
		// The client is gone (or the gateway is stopping): 499 in logs and
		// metrics, as nginx and Caddy record it.
		return &apiError{Status: 499, Type: "canceled", Message: "the request was cancelled"}
	case errors.Is(err, router.ErrFailClosed):
		return s.failClosed(err, re)
	case errors.Is(err, router.ErrAllFailed) && re != nil:
		return s.exhausted(re, route)
	}
	return &apiError{Status: http.StatusInternalServerError, Message: "detour: " + s.scrub(err.Error())}
}

// failClosed passes a fail-closed provider error through: the provider's
// status (a 4xx the client caused), type, code, param and message.
func (s *Server) failClosed(err error, re *router.Error) *apiError {
	e := &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error"}
	if re != nil {
		e.Message = s.summary(re)
		switch {
		case re.Kind == classify.ContextOverflow:
			e.Code = "context_length_exceeded"
		case re.Kind == classify.Policy:
			e.Code = "content_filter"
		case errors.Is(err, router.ErrUnsupported):
			// No candidate can carry what the request holds: the summary
			// names it, per candidate.
			e.Code = "unsupported_request"
		}
	}
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe == nil {
		return e
	}
	switch st := pe.Status; {
	case st == 401 || st == 403 || st == 407:
		// The provider refused detour's key: not the client's fault, and
		// the client's own key must not look wrong.
		e.Status, e.Type = http.StatusBadGateway, "server_error"
	case st == 429:
		// A rate limit or quota the route fails closed on stays a 429, so
		// apps that slow down on 429 see it; not one for the SDK to repeat.
		e.Status, e.Type, e.NoRetry = http.StatusTooManyRequests, "rate_limit_error", true
		now := s.clk.Now()
		e.setWait(classify.Classify(pe, now).Until.Sub(now))
	case st == 408 || st >= 500:
		e.Status, e.Type, e.NoRetry = http.StatusServiceUnavailable, "server_error", true
	case st >= 400:
		e.Status = st
	}
	if pe.Type != "" && e.Status < 500 {
		e.Type = pe.Type
	}
	if pe.Code != "" {
		e.Code = pe.Code
	}
	e.Param = s.scrub(pe.Param)
	if pe.Message != "" {
		e.Message = s.scrub(pe.Message)
	}
	return e
}

// streamError is the error event that ends a stream cut after its first
// output: the failure, never another model's text.
func (s *Server) streamError(err error) *apiError {
	f := classify.Classify(err, s.clk.Now())
	e := &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: f.Status}
	if f.Kind == classify.Transient {
		e.Status = http.StatusServiceUnavailable // overloaded_error in Anthropic's words
	}
	e.Message = s.scrub("detour: the upstream stream failed after the answer started (" + f.Reason +
		"); the answer is incomplete and was not replaced by another model's")
	return e
}

// keyShape matches text shaped like an API key: a known key prefix and a
// run of key characters, or a masked key ("sk-abc****wxyz").
var keyShape = regexp.MustCompile(`(?:sk-|sk_|gsk_|xai-|csk-|fw_|AIza|hf_|nvapi-|r8_|pplx-|ghp_|glpat-)[A-Za-z0-9_.*-]{8,}|[A-Za-z0-9_.-]*\*{4,}[A-Za-z0-9_.-]*`)

// scrub removes every upstream key detour holds, and anything shaped like a
// key, from text bound for a client or a log.
func (s *Server) scrub(text string) string {
	for _, k := range s.v().secrets { // each 8 bytes or more: RedactString's domain
		text = exchange.RedactString(text, k) // in any case, in part, escaped or base64
	}
	return keyShape.ReplaceAllString(text, "[redacted]")
}
