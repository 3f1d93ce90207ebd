package classify

import "strconv"

// The status words of Failure.Status that are not an HTTP status. An HTTP
// error response has "http_<code>" (see HTTPStatus).
const (
	// StatusStream is an error frame inside a 200 stream.
	StatusStream = "stream_error"
	// StatusTimeout is a timeout: connect, before response headers, or the
	// attempt's deadline.
	StatusTimeout = "net_timeout"
	// StatusRefused is a refused connection (nothing listens).
	StatusRefused = "net_refused"
	// StatusReset is a connection reset, broken pipe or early EOF.
	StatusReset = "net_reset"
	// StatusTruncated is a stream that ended before its terminal event
	// (llm.ErrStreamTruncated), whatever cut it.
	StatusTruncated = "net_truncated"
	// StatusStalled is a stream silent past its idle limit
	// (llm.ErrStreamStalled).
	StatusStalled = "net_stalled"
	// StatusDNS is a host name that does not resolve.
	StatusDNS = "net_dns"
	// StatusTLS is a TLS handshake or certificate failure.
	StatusTLS = "net_tls"
	// StatusNetError is any other transport failure.
	StatusNetError = "net_error"
	// StatusCanceled is the caller giving up.
	StatusCanceled = "canceled"
)

// HTTPStatus returns the status word of an HTTP error response: "http_429".
func HTTPStatus(code int) string { return "http_" + strconv.Itoa(code) }
