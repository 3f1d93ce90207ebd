package classify_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/anthropic"
	"github.com/detourhq/detour/wire/openai"
)

// TestScope_Transport checks the scope of each network failure: a host
// that cannot be reached is the endpoint's, a wait for the target the
// target's, a cut or a reset the attempt's.
func TestScope_Transport(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		scope classify.Scope
	}{
		{"refused", post(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), classify.ScopeEndpoint},
		{"dns", post(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}), classify.ScopeEndpoint},
		{"tls", post(x509.UnknownAuthorityError{}), classify.ScopeEndpoint},
		{"connect timeout", post(&net.OpError{Op: "dial", Net: "tcp", Err: headerTimeoutDial{}}), classify.ScopeEndpoint},
		{"unreachable", post(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}), classify.ScopeEndpoint},
		{"http client header timeout", post(headerTimeout{}), classify.ScopeTarget},
		{"reset before headers", post(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), classify.ScopeAttempt},
		{"truncated", fmt.Errorf("%w: %w", llm.ErrStreamTruncated, syscall.ECONNRESET), classify.ScopeAttempt},
		{"canceled", post(context.Canceled), classify.ScopeAttempt},
		{"not network", errors.New("json: cannot unmarshal"), classify.ScopeAttempt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f := classify.Classify(tt.err, t0); f.Scope != tt.scope {
				t.Errorf("Scope = %s, want %s (%s %s: %s)", f.Scope, tt.scope, f.Kind, f.Status, f.Reason)
			}
		})
	}
}

// TestClassify_DetoursOwnLimits: each limit has its own status and words,
// none reads like the route deadline or a network timeout, the silent ones
// are marked so that the walk moves on, and max_duration is never the
// target's failure.
func TestClassify_DetoursOwnLimits(t *testing.T) {
	tests := []struct {
		err    error
		kind   classify.Kind
		status string
		scope  classify.Scope
		silent bool
		reason string
	}{
		{&llm.LimitError{Err: llm.ErrHeaderTimeout, Limit: 30 * time.Second}, classify.Transient, "header_timeout", classify.ScopeTarget, true, "no response headers within 30s (header_timeout)"},
		{&llm.LimitError{Err: llm.ErrFirstTokenTimeout, Limit: 15 * time.Second}, classify.Transient, "first_token_timeout", classify.ScopeTarget, true, "no first token within 15s (first_token)"},
		{&llm.LimitError{Err: llm.ErrStreamStalled, Limit: 5 * time.Second}, classify.Transient, "idle_timeout", classify.ScopeAttempt, true, "no chunk for 5s after the answer started (idle_timeout)"},
		{&llm.LimitError{Err: llm.ErrDeadline, Limit: 50 * time.Second}, classify.Transient, "deadline", classify.ScopeTarget, true, "no answer within the 50s the request's deadline left for this attempt (deadline)"},
		{&llm.LimitError{Err: llm.ErrMaxDuration, Limit: 10 * time.Minute}, classify.Canceled, "max_duration", classify.ScopeAttempt, false, "answer cut at 10m0s (max_duration)"},
		// Wrapped as the router returns them, over the client's own error.
		{fmt.Errorf("%w; %w", &llm.LimitError{Err: llm.ErrHeaderTimeout, Limit: time.Second}, context.Canceled), classify.Transient, "header_timeout", classify.ScopeTarget, true, "no response headers within 1s"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		f := classify.Classify(tt.err, t0)
		checkFailure(t, f)
		if f.Kind != tt.kind || f.Status != tt.status || f.Scope != tt.scope || f.Silent != tt.silent {
			t.Errorf("%v: got %s %s %s silent=%v, want %s %s %s silent=%v", tt.err, f.Kind, f.Status, f.Scope, f.Silent,
				tt.kind, tt.status, tt.scope, tt.silent)
		}
		if f.Reason != tt.reason && !strings.HasPrefix(f.Reason, tt.reason) {
			t.Errorf("%v: reason %q, want %q", tt.err, f.Reason, tt.reason)
		}
		if prev, ok := seen[f.Reason]; ok && prev != f.Status {
			t.Errorf("statuses %s and %s share the words %q", prev, f.Status, f.Reason)
		}
		seen[f.Reason] = f.Status
	}
}

// TestClassify_ModelRefusedIsTheTargets: a model that does not exist or is
// not open to this key is a wall of the target whatever the 4xx status,
// never an invalid request that fails closed; a 503 that says a model is
// unavailable stays transient.
func TestClassify_ModelRefusedIsTheTargets(t *testing.T) {
	tests := []struct {
		status int
		body   string
		kind   classify.Kind
		scope  classify.Scope
	}{
		{400, `{"error":{"message":"The model 'llama-9' does not exist","type":"invalid_request_error","code":null}}`, classify.Wall, classify.ScopeTarget},
		{404, `{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}`, classify.Wall, classify.ScopeTarget},
		{422, `{"error":{"message":"model \"x\" is not allowed for this key","type":"invalid_request_error"}}`, classify.Wall, classify.ScopeTarget},
		{400, `{"error":{"message":"The model ` + "`mixtral-8x7b-32768`" + ` has been decommissioned and is no longer supported.","type":"invalid_request_error","code":"model_decommissioned"}}`, classify.Wall, classify.ScopeTarget},
		{400, `{"error":{"message":"Unknown model: qwen-max-9","type":"invalid_request_error"}}`, classify.Wall, classify.ScopeTarget},
		{503, `{"error":{"message":"The model is not available for your region right now, try again later","type":"server_error"}}`, classify.Transient, classify.ScopeTarget},
		{400, `{"error":{"message":"'temperature' must be between 0 and 2","type":"invalid_request_error","param":"temperature"}}`, classify.Invalid, classify.ScopeAttempt},
		{401, `{"error":{"message":"Incorrect API key provided: sk-abc***xyz.","type":"invalid_request_error","code":"invalid_api_key"}}`, classify.Wall, classify.ScopeAccount},
		{403, `{"error":{"message":"Your API key does not have permission to use the specified model.","type":"permission_error"}}`, classify.Wall, classify.ScopeTarget},
		{402, `{"error":{"message":"Insufficient Balance","type":"unknown_error"}}`, classify.Wall, classify.ScopeAccount},
	}
	for _, tt := range tests {
		f := classify.Classify(openai.ParseError(tt.status, nil, []byte(tt.body)), t0)
		if f.Kind != tt.kind || f.Scope != tt.scope {
			t.Errorf("%d %s:\n got %s %s (%s), want %s %s", tt.status, tt.body, f.Kind, f.Scope, f.Reason, tt.kind, tt.scope)
		}
	}
}

// TestClassify_StreamFrameUsesTheSameTables: an error inside a 200 stream
// is read with the codes and messages of an HTTP error body, so a refusal
// there stays a policy failure and an overload there is the target's.
func TestClassify_StreamFrameUsesTheSameTables(t *testing.T) {
	tests := []struct {
		data  string
		kind  classify.Kind
		scope classify.Scope
	}{
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, classify.Transient, classify.ScopeTarget},
		{`{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"}}`, classify.Policy, classify.ScopeAttempt},
		{`{"type":"error","error":{"type":"rate_limit_error","message":"rate limited"}}`, classify.Transient, classify.ScopeTarget},
	}
	for _, tt := range tests {
		pe, ok := anthropic.ParseStreamError([]byte(tt.data))
		if !ok {
			t.Fatalf("%s: not read as a stream error", tt.data)
		}
		f := classify.Classify(pe, t0)
		if f.Kind != tt.kind || f.Scope != tt.scope || f.Status != classify.StatusStream {
			t.Errorf("%s: got %s %s %s (%s), want %s %s stream_error", tt.data, f.Kind, f.Scope, f.Status, f.Reason, tt.kind, tt.scope)
		}
	}
}
