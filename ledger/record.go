package ledger

import (
	"math"
	"time"
)

// TimeLayout is the layout of a Record's time: RFC 3339 with milliseconds,
// always UTC ("2025-06-01T12:00:00.123Z").
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// The status words of a Record besides classify's ("http_429",
// "net_timeout", ...).
const (
	// StatusOK is a successful attempt.
	StatusOK = "ok"
	// StatusSkippedParked is a target the router did not send to because
	// its health was open (parked) or half-open with a probe out.
	StatusSkippedParked = "skipped_parked"
	// StatusSkippedNoKey is a target whose provider has no key set.
	StatusSkippedNoKey = "skipped_no_key"
	// StatusSkippedDisabled is a target the config turns off (a
	// provider's or a target's disabled: true).
	StatusSkippedDisabled = "skipped_disabled"
	// StatusSkippedPaced is a target its caller held back for the request:
	// `detour batch`'s pace for its provider had no turn soon enough, so
	// the item went on down the chain. Not the target's failure.
	StatusSkippedPaced = "skipped_paced"
	// StatusLastResort is an answer the route gave itself when every
	// candidate failed: a kept answer to the same request (provider
	// "detour", model "cache") or its static answer (model "static"),
	// costing nothing.
	StatusLastResort = "last_resort"
	// StatusSkippedTried is a target listed again after its turn in the
	// same request.
	StatusSkippedTried = "skipped_tried"
	// StatusSkippedAccount is a target whose account (the provider's key)
	// met a failure of account scope earlier in the same request.
	StatusSkippedAccount = "skipped_account"
	// StatusSkippedEndpoint is a target whose endpoint (its host) met a
	// failure of endpoint scope earlier in the same request.
	StatusSkippedEndpoint = "skipped_endpoint"
	// StatusSkippedCost is a target over the request's extra-cost ceiling.
	StatusSkippedCost = "skipped_cost"
	// StatusSkippedQuota is a target whose quota is spent for this
	// request, seen before any send: a declared window (limits: rpm, rpd,
	// tpm, ...) counted full, or its provider's rate-limit headers saying
	// fewer tokens are left than the request needs. The reason names the
	// limit and when it frees up. A wall seen coming, not a failure.
	StatusSkippedQuota = "skipped_quota"
	// StatusSkippedContract is a target that cannot honour what the
	// request needs (an image, logprobs, a JSON schema, ...).
	StatusSkippedContract = "skipped_contract"
	// StatusSkippedUnapproved is a fallback target its route's eval gate
	// does not approve: no passing `detour eval` result on the route's
	// suite. The reason says what it measured, or that nothing was.
	StatusSkippedUnapproved = "skipped_unapproved"
	// StatusProbeOK is a probe (`detour probe`, off the billing path) the
	// target answered: its model list or metadata, or a one-token answer
	// where its route allows one. Action is "probe"; Route is empty. A
	// prompt sent to a parked target as a probe (`detour ask --no-fallback
	// --probe`, router.Options.Probe) is recorded so too, with its route
	// and request id.
	StatusProbeOK = "probe_ok"
	// StatusProbeFailed is a probe that failed; Kind, Scope and Reason say
	// how, as for an attempt.
	StatusProbeFailed = "probe_failed"
	// StatusClientStalled: the gateway ended a stream because its client
	// stopped reading (gateway.write_timeout); never the target's fault.
	StatusClientStalled = "client_stalled"
)

// Record is one attempt: one exchange with one target, or one target
// skipped. It is written as one JSON line. It never holds prompt or response
// text, nor keys; a test pins its field names.
type Record struct {
	// Time is when the attempt started (a skip: when it was decided; a
	// stream's record is written when it ends, with its start time).
	// Written as RFC 3339 with milliseconds, in UTC.
	Time time.Time `json:"time"`
	// RequestID ties the attempts of one request together.
	RequestID string `json:"request_id"`
	// Route is the route the request asked for ("default"), or the target
	// when the request named one directly.
	Route string `json:"route"`
	// Provider and Model name the target ("groq", "llama-3.3-70b-versatile").
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Hop is the 0-based index of the target within the request: 0 for the
	// first target, +1 each time the router moves to another target.
	Hop int `json:"hop"`
	// Attempt is the 1-based attempt on this target within the request.
	Attempt int `json:"attempt"`
	// Failover is true when this target is not the request's first.
	Failover bool `json:"failover"`
	// Status is what came back: StatusOK, classify's words ("http_429",
	// "http_402", "net_timeout", "net_reset", ...), or a skip
	// (StatusSkippedParked, StatusSkippedNoKey).
	Status string `json:"status"`
	// Kind is the failure kind, a classify.Kind word ("transient", "wall",
	// ...); empty on success and on skips.
	Kind string `json:"kind"`
	// Scope is how far the failure reaches, a classify.Scope word
	// ("attempt", "target", "account", "endpoint"): what it parked and
	// skipped; omitted on success and on skips.
	Scope string `json:"scope,omitempty"`
	// Action is what the router did after this attempt: "return", "retry",
	// "failover", "fallback", "queue", "degrade", "static", "fail".
	Action string `json:"action"`
	// Phase is how far the attempt got (a policy.Phase word): "none"
	// (nothing sent: a skip, a connection never made), "sent" (a response
	// said what became of it; nothing reached the caller), "unknown" (sent,
	// but it ended with no response saying whether it was acted on: a
	// timeout or reset before the status, a non-streamed body cut),
	// "output_started", "tool_started" (the answer's content, or a tool
	// call's first delta, reached the caller), "committed" (the whole
	// answer was handed over). Omitted by writers that do not know it.
	Phase string `json:"phase,omitempty"`
	// TokensIn and TokensOut are the tokens the provider reported (billed
	// ones, on a failure too); 0 when unknown.
	TokensIn  int `json:"tokens_in"`
	TokensOut int `json:"tokens_out"`
	// TokensCacheRead and TokensCacheWrite are the input tokens the
	// provider's prompt cache served and stored (part of TokensIn);
	// omitted when 0.
	TokensCacheRead  int `json:"tokens_cache_read,omitempty"`
	TokensCacheWrite int `json:"tokens_cache_write,omitempty"`
	// Seconds is how long the attempt took.
	Seconds float64 `json:"seconds"`
	// WaitSeconds is the wait the router took after this attempt, before
	// its next send (backoff, Retry-After, queue); 0 when it moved on at
	// once or stopped.
	WaitSeconds float64 `json:"wait_seconds"`
	// RetryAfterS is the wait the provider asked for, in seconds; omitted
	// when it asked none.
	RetryAfterS float64 `json:"retry_after_s,omitempty"`
	// Cost is the attempt's cost in USD at the target's prices.
	Cost float64 `json:"cost"`
	// Reason is one line saying what happened (classify's reason, at most
	// 140 characters by its rule; the ledger does not cut it).
	Reason string `json:"reason"`
	// ProviderRequestID is the provider's own id for the exchange, the
	// one its support desk asks for first: the response's x-request-id
	// (OpenAI, Groq, many compatible servers), request-id (Anthropic),
	// cf-ray (Cloudflare in front) or x-amzn-requestid (Bedrock), in that
	// order of preference, else the id the body gave (an Anthropic or Groq
	// error body's request_id, a Gemini answer's responseId). At most 128
	// printable ASCII bytes; omitted when the attempt got no response or
	// the provider named none.
	ProviderRequestID string `json:"upstream_request_id,omitempty"`
	// Pick says, on a line of a member of a group of equals, why the
	// group put it where it was ("least_busy: 0 in flight", "most_room:
	// 80% of its quota left", "weighted: weight 3", "affinity: ...");
	// omitted outside a group.
	Pick string `json:"pick,omitempty"`
	// Dropped names what the request carried that this target went
	// without (a cross-dialect hop that left out safe fields), and the
	// events of its streamed answer it left out as unreadable ("1
	// malformed event"); omitted when nothing was.
	Dropped []string `json:"dropped,omitempty"`
	// Degraded is set on an answer (status ok, or last_resort) the caller
	// got degraded: from another model family than the route's first, or
	// without something the request carried (Dropped); omitted otherwise.
	Degraded bool `json:"degraded,omitempty"`
}

// MarshalJSON writes r as a File writes its line (appendLine), without
// the newline: its time in TimeLayout, UTC. Unmarshalling needs no help:
// time.Time reads that layout.
func (r Record) MarshalJSON() ([]byte, error) {
	b, err := appendLine(nil, &r)
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil
}

// Seconds returns d in seconds, rounded to the millisecond, for Record's
// duration fields.
func Seconds(d time.Duration) float64 {
	return math.Round(d.Seconds()*1000) / 1000
}
