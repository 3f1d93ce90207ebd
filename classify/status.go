package classify

import "strconv"

// The status words of Failure.Status that are not an HTTP status. An HTTP
// error response has "http_<code>" (see HTTPStatus).
const (
	// StatusStream is an error frame inside a 200 stream.
	StatusStream = "stream_error"
	// StatusTimeout is a network timeout: connect, or before response
	// headers when the HTTP client's own limit (not detour's) expired.
	StatusTimeout = "net_timeout"
	// StatusRefused is a refused connection (nothing listens).
	StatusRefused = "net_refused"
	// StatusReset is a connection reset, broken pipe or early EOF.
	StatusReset = "net_reset"
	// StatusTruncated is a stream that ended before its terminal event
	// (llm.ErrStreamTruncated), whatever cut it.
	StatusTruncated = "net_truncated"
	// StatusHeaderTimeout is an attempt with no response headers within
	// the route's header_timeout (llm.ErrHeaderTimeout).
	StatusHeaderTimeout = "header_timeout"
	// StatusFirstToken is a stream with no output within the route's
	// first_token (llm.ErrFirstTokenTimeout).
	StatusFirstToken = "first_token_timeout"
	// StatusIdle is a stream silent past its idle_timeout after its output
	// started (llm.ErrStreamStalled).
	StatusIdle = "idle_timeout"
	// StatusDeadline is an attempt whose answer had not started when the
	// time the request's deadline left it ran out (llm.ErrDeadline).
	StatusDeadline = "deadline"
	// StatusMaxDuration is an answer cut at the route's max_duration
	// (llm.ErrMaxDuration): detour's limit, not the provider's failure.
	StatusMaxDuration = "max_duration"
	// StatusMaxBuffer is a buffered answer dropped past the route's
	// max_buffer (llm.ErrMaxBuffer, over_buffer: fail_over): detour's
	// limit, not the provider's failure.
	StatusMaxBuffer = "max_buffer"
	// StatusDNS is a host name that does not resolve.
	StatusDNS = "net_dns"
	// StatusTLS is a TLS handshake or certificate failure.
	StatusTLS = "net_tls"
	// StatusNetError is any other transport failure.
	StatusNetError = "net_error"
	// StatusCanceled is the caller giving up.
	StatusCanceled = "canceled"
)

// OwnLimit reports whether one of detour's own limits ended an attempt
// whose target was answering: max_duration (an answer cut at the route's
// limit) or max_buffer (a buffered answer dropped as larger than the route
// holds). The attempt is recorded and the walk acts on it as usual, but it
// says nothing of the target's health: a breaker never counts it.
func (f Failure) OwnLimit() bool {
	return f.Status == StatusMaxDuration || f.Status == StatusMaxBuffer
}

// HTTPStatus returns the status word of an HTTP error response: "http_429".
func HTTPStatus(code int) string { return "http_" + strconv.Itoa(code) }
