package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrStreamTruncated means a stream ended (EOF, reset) before the provider's
// explicit end: the answer is incomplete and must never pass as complete.
var ErrStreamTruncated = errors.New("stream ended before its terminal event")

// ErrStreamStalled means no byte arrived within the stream's idle limit.
var ErrStreamStalled = errors.New("stream stalled past its idle limit")

// Phase says where a ProviderError was seen.
type Phase string

// The phases a provider error can come from.
const (
	// PhaseResponse is an HTTP response with an error status (or a 200 whose
	// body is a refusal).
	PhaseResponse Phase = "response"
	// PhaseStream is an error frame inside a 200 stream.
	PhaseStream Phase = "stream"
)

// ProviderError is a provider's failure as a wire adapter read it: the status,
// the discriminating fields of the body in whatever envelope the dialect uses,
// and the headers that carry retry hints. classify reads only this.
type ProviderError struct {
	// Dialect names the adapter that read the error ("openai", ...).
	Dialect string
	// Status is the HTTP status; 200 for errors inside a stream or a refusal.
	Status int
	// Type and Code are the body's error type and code as strings (a numeric
	// code is kept as its decimal text). Either may be empty.
	Type string
	Code string
	// Param is the offending parameter, when named.
	Param string
	// Message is the provider's human message (for OpenRouter, the upstream's
	// raw message is appended when it says more).
	Message string
	// Header holds the response headers (canonical keys). Nil when none.
	Header http.Header
	// Body is the raw body, cut to at most 64 KiB.
	Body []byte
	// Phase says whether the error came as a response or inside a stream.
	Phase Phase
}

// Error returns "HTTP 429 rate_limit_exceeded: message".
func (e *ProviderError) Error() string {
	var b strings.Builder
	if e.Phase == PhaseStream {
		b.WriteString("stream error")
	} else {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	}
	if c := e.Code; c != "" {
		b.WriteString(" " + c)
	} else if e.Type != "" {
		b.WriteString(" " + e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}
