package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ErrStreamTruncated means a stream ended (EOF, reset) before the provider's
// explicit end: the answer is incomplete and must never pass as complete.
var ErrStreamTruncated = errors.New("stream ended before its terminal event")

// ErrClientStalled is the cause a caller gives Aborter.Abort when its own
// client stopped reading the answer: the attempt ends, counted against
// no target.
var ErrClientStalled = errors.New("the client stopped reading")

// Aborter is the optional interface of a Stream that can be ended with a
// cause (ErrClientStalled) its record keeps, instead of Close's plain
// "caller closed the stream".
type Aborter interface {
	Abort(cause error) error
}

// ErrStreamStalled means no chunk arrived within the stream's idle limit
// (idle_timeout) once output had started.
var ErrStreamStalled = errors.New("stream stalled past its idle limit")

// The limits detour itself puts on one attempt. The router ends an attempt
// with an error wrapping one of these when its limit expires; classify
// gives each its own ledger status, so a silent upstream, a slow first
// token, a stall mid-answer and the route's deadline never read alike.
var (
	// ErrHeaderTimeout means no response headers arrived within the
	// route's header_timeout.
	ErrHeaderTimeout = errors.New("no response headers within the header timeout")
	// ErrFirstTokenTimeout means a stream sent no output within the
	// route's first_token limit.
	ErrFirstTokenTimeout = errors.New("no first token within the first-token limit")
	// ErrDeadline means the request's time ran out before this attempt's
	// answer started: the route's deadline, less the time kept in reserve
	// for the candidates after it.
	ErrDeadline = errors.New("the request's deadline left no more time for this attempt")
	// ErrMaxDuration means an answer was cut at the route's max_duration:
	// detour's own limit, never the provider's failure.
	ErrMaxDuration = errors.New("answer cut at the route's max_duration")
	// ErrMaxBuffer means a buffered answer grew past the route's
	// max_buffer on a route that fails over rather than stream it
	// (over_buffer: fail_over).
	ErrMaxBuffer = errors.New("buffered answer past the route's max_buffer")
)

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
	// RateLimit is what the provider said of its rate limits in the
	// response's headers (as Response.RateLimit); nil when it said
	// nothing, and for an error inside a stream.
	RateLimit *RateLimit
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

// LimitError is an attempt ended by one of detour's own limits: Err is
// ErrHeaderTimeout, ErrFirstTokenTimeout, ErrStreamStalled, ErrDeadline or
// ErrMaxDuration with Limit the time that expired, or ErrMaxBuffer with
// Size the bytes it allows. Its text is one line that names the setting
// ("no response headers within 30s (header_timeout)"), and errors.Is
// matches Err.
type LimitError struct {
	Err   error
	Limit time.Duration
	Size  int
}

// Error names what did not happen in time and the setting that said so.
func (e *LimitError) Error() string {
	d := e.Limit.Round(time.Millisecond)
	switch e.Err {
	case ErrHeaderTimeout:
		return fmt.Sprintf("no response headers within %s (header_timeout)", d)
	case ErrFirstTokenTimeout:
		return fmt.Sprintf("no first token within %s (first_token)", d)
	case ErrStreamStalled:
		return fmt.Sprintf("no chunk for %s after the answer started (idle_timeout)", d)
	case ErrDeadline:
		return fmt.Sprintf("no answer within the %s the request's deadline left for this attempt (deadline)", d)
	case ErrMaxDuration:
		return fmt.Sprintf("answer cut at %s (max_duration)", d)
	case ErrMaxBuffer:
		return fmt.Sprintf("buffered answer grew past %d bytes (max_buffer, over_buffer: fail_over)", e.Size)
	}
	return fmt.Sprintf("%v (limit %s)", e.Err, d)
}

// Unwrap returns Err.
func (e *LimitError) Unwrap() error { return e.Err }
