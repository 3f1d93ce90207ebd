package classify_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
)

// headerTimeout mimics net/http's internal error for ResponseHeaderTimeout.
type headerTimeout struct{}

func (headerTimeout) Error() string   { return "net/http: timeout awaiting response headers" }
func (headerTimeout) Timeout() bool   { return true }
func (headerTimeout) Temporary() bool { return true }

func post(err error) error {
	return &url.Error{Op: "Post", URL: "https://api.groq.com/openai/v1/chat/completions", Err: err}
}

func TestClassify_Transport(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		kind   classify.Kind
		status string
		reason string
	}{
		{"Canceled", post(context.Canceled), classify.Canceled, "canceled", "canceled by the caller"},
		{"DeadlineExceeded", post(context.DeadlineExceeded), classify.Transient, "net_timeout", "deadline exceeded"},
		{"OSDeadline", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), classify.Transient, "net_timeout", "network timeout"},
		{"TimeoutBeforeHeaders", post(headerTimeout{}), classify.Transient, "net_timeout", "timeout before response headers"},
		{"TimeoutBeforeHeadersFlattened", errors.New(`Post "https://x": net/http: timeout awaiting response headers`), classify.Transient, "net_timeout", "timeout before response headers"},
		{"ConnectTimeout", post(&net.OpError{Op: "dial", Net: "tcp", Err: headerTimeoutDial{}}), classify.Transient, "net_timeout", "connect timeout"},
		{"ConnectRefused", post(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), classify.Transient, "net_refused", "connection refused"},
		{"ResetBeforeHeaders", post(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), classify.Transient, "net_reset", "connection reset"},
		{"BrokenPipe", post(&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}), classify.Transient, "net_reset", "broken pipe"},
		{"EOFBeforeHeaders", post(io.EOF), classify.Transient, "net_reset", "connection closed early (EOF)"},
		{"UnexpectedEOF", io.ErrUnexpectedEOF, classify.Transient, "net_reset", "connection closed early (EOF)"},
		{"Truncated", fmt.Errorf("decode: %w", llm.ErrStreamTruncated), classify.Transient, "net_truncated", "stream cut before its end"},
		{"TruncatedByReset", fmt.Errorf("%w: %w", llm.ErrStreamTruncated, syscall.ECONNRESET), classify.Transient, "net_truncated", "stream cut before its end (connection reset)"},
		{"TruncatedByCancel", fmt.Errorf("%w: %w", llm.ErrStreamTruncated, context.Canceled), classify.Canceled, "canceled", ""},
		{"Stalled", llm.ErrStreamStalled, classify.Transient, "idle_timeout", "stream stalled"},
		{"DNSNotFound", post(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "api.groq.con", IsNotFound: true}}), classify.Wall, "net_dns", "host not found: api.groq.con"},
		{"DNSTimeout", post(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "i/o timeout", Name: "api.groq.com", IsTimeout: true}}), classify.Transient, "net_timeout", ""},
		{"TLSUnknownAuthority", post(x509.UnknownAuthorityError{}), classify.Wall, "net_tls", "TLS failure"},
		{"OtherNetError", post(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}), classify.Transient, "net_error", "network error"},
		{"NotNetwork", errors.New("json: cannot unmarshal number into Go value"), classify.Unknown, "net_error", "json: cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := classify.Classify(tt.err, t0)
			checkFailure(t, f)
			if f.Kind != tt.kind || f.Status != tt.status {
				t.Errorf("Kind, Status = %s, %s; want %s, %s (reason %q)", f.Kind, f.Status, tt.kind, tt.status, f.Reason)
			}
			if !strings.Contains(f.Reason, tt.reason) {
				t.Errorf("Reason = %q, want it to contain %q", f.Reason, tt.reason)
			}
			if f.RetryAfter != 0 || !f.Until.IsZero() || f.Code != "" {
				t.Errorf("transport failure with hints: %+v", f)
			}
		})
	}
}

// headerTimeoutDial is a dial timeout.
type headerTimeoutDial struct{}

func (headerTimeoutDial) Error() string   { return "i/o timeout" }
func (headerTimeoutDial) Timeout() bool   { return true }
func (headerTimeoutDial) Temporary() bool { return true }

func TestClassify_TransportScrubsURL(t *testing.T) {
	err := &url.Error{Op: "Post", URL: "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=AIzaSyA1234567890abcdefghijklmnop", Err: io.EOF}
	f := classify.Classify(err, t0)
	if strings.Contains(f.Detail+f.Reason, "AIzaSy") {
		t.Errorf("key leaked: %q", f.Detail)
	}
}

// The errors below come from the real net/http client against loopback.

func TestClassify_RealConnectRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = http.Get("http://" + addr + "/v1/models")
	if err == nil {
		t.Skip("something listens on the closed port")
	}
	if f := classify.Classify(err, t0); f.Status != classify.StatusRefused || f.Kind != classify.Transient {
		t.Errorf("Classify(%v) = %+v", err, f)
	}
}

func TestClassify_RealResetBeforeHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // RST instead of FIN
		}
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	_, err := srv.Client().Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err == nil {
		t.Fatal("no error")
	}
	f := classify.Classify(err, t0)
	if f.Kind != classify.Transient || f.Status != classify.StatusReset {
		t.Errorf("Classify(%v) = %+v", err, f)
	}
}

func TestClassify_RealTimeoutBeforeHeaders(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 50 * time.Millisecond
	_, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err == nil {
		t.Fatal("no error")
	}
	f := classify.Classify(err, t0)
	if f.Kind != classify.Transient || f.Status != classify.StatusTimeout || f.Reason != "timeout before response headers" {
		t.Errorf("Classify(%v) = %+v", err, f)
	}
}
