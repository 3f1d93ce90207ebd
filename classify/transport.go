package classify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/detourhq/detour/llm"
)

// classifyTransport reads an error that is not a provider's answer: the
// caller's cancel, a stream cut or stalled, or a network failure before any
// (or any complete) response.
//
// Decisions:
//   - llm.ErrStreamTruncated is "net_truncated" whatever cut the stream (a
//     reset, an EOF, a timeout): the status says the answer is incomplete,
//     the Reason names the cause. It is Transient (PROVIDERS.md "Network
//     level"); whether a retry is safe is the router's call, by phase.
//   - A host that does not resolve ("no such host") is a Wall, "net_dns":
//     a wrong base URL does not fix itself. Other DNS failures are Transient.
//   - A certificate or TLS record failure is a Wall, "net_tls": an endpoint
//     misconfiguration (or interception) that retrying does not cure.
//   - Any other net.Error, *net.OpError or *url.Error is Transient,
//     "net_error", as the official SDKs retry every connection error.
//   - An error that is none of these (not from the network at all) is
//     Unknown, "net_error": at most one hop.
//   - detour's own limits (llm.LimitError) are read by limitFailure.
//
// Scope: a host that cannot be reached (refused, not resolved, TLS, any
// failure to dial) is the endpoint's; a timeout waiting for the target is
// the target's; a reset, an early EOF or a cut stream is the attempt's.
func classifyTransport(err error) Failure {
	text := errorText(err)
	low := strings.ToLower(text)
	out := func(kind Kind, status string, scope Scope, what string) Failure {
		return Failure{Kind: kind, Status: status, Scope: scope, Reason: reason("", what, ""), Detail: detail(text)}
	}
	var limit *llm.LimitError
	if errors.As(err, &limit) || errors.Is(err, llm.ErrStreamStalled) {
		return limitFailure(err, limit)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return out(Canceled, StatusCanceled, ScopeAttempt, "canceled by the caller")
	case errors.Is(err, llm.ErrStreamTruncated):
		what := "stream cut before its end"
		if c := netCause(err, low); c != "" {
			what += " (" + c + ")"
		}
		return out(Transient, StatusTruncated, ScopeAttempt, what)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return out(Wall, StatusDNS, ScopeEndpoint, "host not found: "+dns.Name)
	}
	if isTLS(err, low) {
		return out(Wall, StatusTLS, ScopeEndpoint, "TLS failure: "+firstClause(text))
	}
	var oe *net.OpError
	dial := errors.As(err, &oe) && oe.Op == "dial"
	if c := netCause(err, low); c != "" {
		status, scope := StatusReset, ScopeAttempt
		switch {
		case c == "connection refused":
			status, scope = StatusRefused, ScopeEndpoint
		case c == "connect timeout":
			status, scope = StatusTimeout, ScopeEndpoint
		case strings.Contains(c, "timeout") || c == "deadline exceeded":
			// The HTTP client's own limit, or a context deadline that
			// is not detour's: the target was slow to answer.
			status, scope = StatusTimeout, ScopeTarget
		case c == "host not found":
			return out(Wall, StatusDNS, ScopeEndpoint, c)
		}
		if dial {
			scope = ScopeEndpoint
		}
		return out(Transient, status, scope, c)
	}
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ne) || oe != nil || errors.As(err, &ue) {
		scope := ScopeAttempt
		if dial {
			scope = ScopeEndpoint // the host cannot be reached at all
		}
		return out(Transient, StatusNetError, scope, "network error: "+firstClause(text))
	}
	return out(Unknown, StatusNetError, ScopeAttempt, firstClause(text))
}

// limitFailure reads an attempt that one of detour's own limits ended
// (llm.LimitError; a bare llm.ErrStreamStalled from a caller's stream
// counts as an idle timeout). Each limit has its own status; all but
// max_duration mean the target stayed silent: Transient and Silent, so
// the walk moves on rather than waiting on it again. max_duration cut a
// flowing answer at detour's own limit: Canceled, never the target's
// failure. max_buffer dropped a runaway buffered answer: Transient for
// this attempt, and Silent too, as the same send would likely run away
// again, so the walk moves on.
func limitFailure(err error, limit *llm.LimitError) Failure {
	f := Failure{Kind: Transient, Scope: ScopeTarget, Silent: true, Detail: detail(errorText(err))}
	what := "stream stalled past its idle limit (idle_timeout)"
	if limit != nil {
		what = limit.Error()
	}
	switch {
	case errors.Is(err, llm.ErrMaxDuration):
		f.Kind, f.Status, f.Scope, f.Silent = Canceled, StatusMaxDuration, ScopeAttempt, false
	case errors.Is(err, llm.ErrMaxBuffer):
		f.Status, f.Scope = StatusMaxBuffer, ScopeAttempt
	case errors.Is(err, llm.ErrHeaderTimeout):
		f.Status = StatusHeaderTimeout
	case errors.Is(err, llm.ErrFirstTokenTimeout):
		f.Status = StatusFirstToken
	case errors.Is(err, llm.ErrDeadline):
		f.Status = StatusDeadline
	default:
		f.Status, f.Scope = StatusIdle, ScopeAttempt
	}
	f.Reason = reason("", what, "")
	return f
}

// netCause names the network failure in err: "connection refused",
// "connection reset", "broken pipe", "connection closed early (EOF)", a
// timeout, or "" when err is none of these. Typed errors are read first
// (errors.Is on errno values and sentinels); the text is a fallback for
// errors flattened to strings on the way.
func netCause(err error, low string) string {
	switch {
	case strings.Contains(low, "awaiting response headers"), strings.Contains(low, "awaiting headers"):
		return "timeout before response headers"
	case strings.Contains(low, "tls handshake timeout"):
		return "TLS handshake timeout"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline exceeded"
	case isTimeout(err):
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			return "connect timeout"
		}
		return "network timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed early (EOF)"
	// Text fallbacks.
	case strings.Contains(low, "connection refused"):
		return "connection refused"
	case strings.Contains(low, "connection reset"):
		return "connection reset"
	case strings.Contains(low, "broken pipe"):
		return "broken pipe"
	case strings.Contains(low, "no such host"):
		return "host not found"
	case strings.Contains(low, "i/o timeout"), strings.Contains(low, "timeout exceeded"):
		return "network timeout"
	case strings.Contains(low, "deadline exceeded"):
		return "deadline exceeded"
	case strings.Contains(low, "unexpected eof"), strings.HasSuffix(low, ": eof"), low == "eof":
		return "connection closed early (EOF)"
	}
	return ""
}

// isTimeout reports a timeout error of the standard library.
func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isTLS reports a certificate or TLS protocol failure.
func isTLS(err error, low string) bool {
	var cv *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &cv) || errors.As(err, &rh) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) {
		return true
	}
	return strings.Contains(low, "x509: ") || strings.Contains(low, "tls: failed to verify") ||
		strings.Contains(low, "tls: first record does not look like")
}

// firstClause is the first line of an error's text.
func firstClause(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// errorText is err.Error(), or a placeholder when that panics (a typed nil
// error whose method does not expect one).
func errorText(err error) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("%T (nil)", err)
		}
	}()
	return err.Error()
}
