package classify

import "time"

// Kind is what a failure means for routing. The words appear in the ledger.
type Kind string

// The failure kinds of DESIGN.md.
const (
	// Transient may recover on the same target: connect refused, reset or
	// timeout before headers, 5xx, 529 overloaded, a short 429 rate limit.
	Transient Kind = "transient"
	// Wall will not recover soon on this target: 402 no credit, a quota 429,
	// 401/403 for the key, a reset far away. Never waited on.
	Wall Kind = "wall"
	// Invalid is a request no provider will accept (malformed, unsupported
	// parameter, bad tool schema). Fails closed.
	Invalid Kind = "invalid"
	// ContextOverflow means the prompt is longer than the model's context.
	ContextOverflow Kind = "context_overflow"
	// Policy is a safety or content-filter refusal. Fails closed; never routed
	// around to a laxer model.
	Policy Kind = "policy"
	// Canceled is the caller giving up; it is never the target's fault.
	Canceled Kind = "canceled"
	// Unknown is an unrecognised failure (typically a 4xx): at most one hop.
	Unknown Kind = "unknown"
)

// Scope is how far a failure reaches beyond the attempt that met it: what
// the router parks and skips because of it. The words appear in the
// ledger and in `detour explain`.
type Scope string

// The scopes of DESIGN.md, narrowest first.
const (
	// ScopeAttempt is this attempt alone: a cut stream, a malformed chunk,
	// a reset, a refused or invalid request. Nothing is parked for it
	// beyond the breaker's count of the target's transient failures.
	ScopeAttempt Scope = "attempt"
	// ScopeTarget is this model at this provider: overloaded, rate
	// limited, not found or not allowed, a context overflow, a per-model
	// daily quota, a silent upstream. Other models of the same provider
	// stay eligible.
	ScopeTarget Scope = "target"
	// ScopeAccount is every target that uses the provider's key: no
	// credits (402), insufficient_quota, a spend cap, a rejected key.
	ScopeAccount Scope = "account"
	// ScopeEndpoint is every target on the provider's host: connection
	// refused, a host that does not resolve, a TLS failure.
	ScopeEndpoint Scope = "endpoint"
)

// Failure is the normalised reading of one failed attempt.
type Failure struct {
	Kind Kind `json:"kind"`
	// Status is the ledger's status word: "http_429", "http_402",
	// "stream_error", "net_timeout", "net_reset", "net_refused",
	// "net_truncated", "net_dns", "net_tls", "net_error", "canceled", and
	// detour's own limits "header_timeout", "first_token_timeout",
	// "idle_timeout", "deadline", "max_duration", "max_buffer" (constants
	// in status.go).
	Status string `json:"status"`
	// Scope is what the failure says about the rest of the chain: this
	// attempt only, this target, every target of the account (the
	// provider's key), or every target on the endpoint (the host).
	Scope Scope `json:"scope"`
	// Silent is set when the target stayed silent until one of detour's
	// limits expired (no headers, no first token, a stall, the deadline):
	// another send to it would likely wait as long, so the walk moves on
	// instead of retrying it. A buffered answer dropped past max_buffer is
	// Silent too: the same send would likely run away again.
	Silent bool `json:"silent,omitempty"`
	// Code is the provider's error code or type, when it gave one.
	Code string `json:"code,omitempty"`
	// RetryAfter is the wait the provider asked for (Retry-After,
	// retry-after-ms, x-ratelimit-reset-*, "try again in 7m12s", RetryInfo);
	// zero when it named none.
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Until is when the target may be tried again (now + RetryAfter, or a
	// reset time the provider gave); zero when unknown.
	Until time.Time `json:"until,omitempty"`
	// ShouldRetry is the provider's x-should-retry header: +1 true, -1 false,
	// 0 absent.
	ShouldRetry int `json:"should_retry,omitempty"`
	// Reason is one line, at most 140 characters, saying what happened.
	Reason string `json:"reason"`
	// Detail is the full message, for the final error summary.
	Detail string `json:"detail,omitempty"`
	// StatusAlone is set when only the HTTP status decided the kind: no
	// code, type or message of the body was one detour knows. Reason then
	// ends in "; read from the status alone" (StatusAloneNote).
	StatusAlone bool `json:"status_alone,omitempty"`
}

// StatusAloneNote ends the Reason of a failure read from its HTTP status
// alone (Failure.StatusAlone): the kind is the status's usual meaning, a
// guess the body did not confirm. detour report counts such lines.
const StatusAloneNote = "read from the status alone"
