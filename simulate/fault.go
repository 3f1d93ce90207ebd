package simulate

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Kind names what a fake provider does with one request. Kinds are typed
// strings so they read well in logs, test failures and Stats.
type Kind string

// The kinds of behaviour a Fault can script. The bodies of the error kinds
// follow the provider's Dialect and, for DialectOpenAI, its Style unless the
// kind says otherwise; errors.go, anthropic_errors.go and gemini_errors.go
// list each body and where it was seen. The docs below name the OpenAI form
// first, then the Anthropic (A:) and Gemini (G:) ones.
const (
	// OK is a normal answer: "Hello from <provider>/<model>." or one tool call
	// (A: a tool_use block, G: a functionCall part) when the request offers tools.
	OK Kind = "ok"
	// RateLimit is a per-minute 429 (code rate_limit_exceeded). With a
	// RetryAfter it carries retry-after, retry-after-ms and
	// x-ratelimit-reset-requests headers and names the wait in its message;
	// without one it carries no hint at all. A: 429 rate_limit_error with
	// retry-after and anthropic-ratelimit-* headers (RFC 3339 resets). G: 429
	// RESOURCE_EXHAUSTED whose QuotaFailure names a per-minute quota, with a
	// RetryInfo of RetryAfter (none without one).
	RateLimit Kind = "rate_limit"
	// DailyQuota is Groq's 429 for an exhausted tokens-per-day budget, whatever
	// the provider's Style: a wall disguised as a rate limit. RetryAfter is the
	// wait named in the message and in retry-after (default 7m12.3s). A: the
	// 400 "You have reached your specified API usage limits. You will regain
	// access on ..." (Anthropic has no daily quota; access returns at
	// Now+RetryAfter, by default next month). G: 429 RESOURCE_EXHAUSTED whose
	// QuotaFailure names the per-day quota, with a short RetryInfo all the
	// same (RetryAfter, default 47s).
	DailyQuota Kind = "daily_quota"
	// InsufficientQuota is OpenAI's 429 insufficient_quota (no billing left),
	// whatever the provider's Style. A: the tier's monthly spend cap, 429
	// rate_limit_error with details.error_code enforced_spend_limit_reached and
	// no retry-after. G: 429 RESOURCE_EXHAUSTED "limit: 0" (no quota for the
	// model on this tier), naming RetryAfter (default 7.967587226s).
	InsufficientQuota Kind = "insufficient_quota"
	// NoCredits is OpenRouter's 402 "This request requires more credits, or
	// fewer max_tokens", whatever the provider's Style. Afford is the number of
	// tokens the balance pays for. A: the 400 "Your credit balance is too low
	// to access the Anthropic API...". G: 402 RESOURCE_EXHAUSTED "Your
	// prepayment credits are depleted..." (Gemini's prepaid billing).
	NoCredits Kind = "no_credits"
	// Unavailable is a 503 (overloaded model). A: 529 overloaded_error. G: 503
	// UNAVAILABLE "The model is overloaded. Please try again later."
	Unavailable Kind = "unavailable"
	// ServerError is a 500 (A: api_error, G: INTERNAL).
	ServerError Kind = "server_error"
	// Unauthorized is a bad key: 401 invalid_api_key (Gemini answers 400
	// API_KEY_INVALID, as the real one does, natively too; a missing key is
	// its 403 PERMISSION_DENIED). A: 401 authentication_error.
	Unauthorized Kind = "unauthorized"
	// BadRequest is a 400 invalid_request_error for an unsupported parameter
	// (Param, default "stop"). Malformed request bodies are also counted under
	// this kind. A: "<param>: Extra inputs are not permitted". G: 400
	// INVALID_ARGUMENT "Invalid JSON payload received. Unknown name ...".
	BadRequest Kind = "bad_request"
	// ContextOverflow is a 400 context_length_exceeded. A: "prompt is too
	// long: N tokens > M maximum". G: "The input token count (N) exceeds the
	// maximum number of tokens allowed (M)."
	ContextOverflow Kind = "context_overflow"
	// ModelNotFound is a 404 model_not_found (OpenRouter and Mistral answer
	// 400). The server also answers it for models the provider does not list
	// (and, G: with a 400, for a malformed model name). A: 404
	// not_found_error "model: <name>". G: 404 NOT_FOUND.
	ModelNotFound Kind = "model_not_found"
	// ContentFilter is a 200 whose choice ends with finish_reason
	// "content_filter" and no content. A: stop_reason "refusal", no content.
	// G: a candidate with finishReason SAFETY and safetyRatings, no content.
	ContentFilter Kind = "content_filter"
	// Reset closes the TCP connection with a reset before any header is
	// written (after the provider's error latency): the client sees an error
	// wrapping syscall.ECONNRESET. Served to a ResponseWriter that is neither
	// the Transport's nor hijackable, it panics with http.ErrAbortHandler.
	Reset Kind = "reset"
	// Hang writes nothing until the request's context ends.
	Hang Kind = "hang"
	// SlowFirstToken waits Delay before the headers (and so before the first
	// chunk), then answers as OK does.
	SlowFirstToken Kind = "slow_first_token"
	// LateFirstToken sends the headers of a stream at once (Latency.FirstToken
	// is not waited), flushed with the role chunk
	// `{"delta":{"role":"assistant","content":"","refusal":null}}` (for a
	// tool call, the one with the call's id and name), then waits Delay before
	// the first content chunk and sends the rest as OK does, bytes included. A: message_start,
	// content_block_start and ping come with the headers (the events before the
	// first content_block_delta, in the recorded order). G: only the headers.
	// A non-streamed request is served as SlowFirstToken.
	LateFirstToken Kind = "late_first_token"
	// StreamCut sends the headers and the first Chunks data events of the
	// answer, then closes the connection without [DONE] (A: message_stop, G:
	// the finishReason chunk) or the final chunked terminator: the client's
	// body read fails with io.ErrUnexpectedEOF. A non-streaming request gets
	// half of its body, then the same cut.
	StreamCut Kind = "stream_cut"
	// StreamError sends the first Chunks data events, then an OpenAI error
	// frame `data: {"error":{...}}` and ends the response without [DONE]. A:
	// `event: error` with an overloaded_error, without message_stop. G: a
	// `data: {"error": {...}}` chunk (503 UNAVAILABLE). A non-streaming
	// request gets the ServerError answer instead.
	StreamError Kind = "stream_error"
	// StreamStall sends the headers and the first Chunks data events (counted
	// as for StreamCut), then writes nothing more until the request's context
	// ends (the client gives up, or Close): no cut and no end before that, and
	// a broken connection after it. A: and G: the same. A non-streaming
	// request gets its headers (200, Content-Length of the whole body) and
	// half of its body, then the same silence.
	StreamStall Kind = "stream_stall"
	// StreamMalformed sends the first Chunks data events, then one event whose
	// data is not JSON, the next content chunk (the last one when Chunks
	// passes them all) cut short inside its text
	// (`data: {"id":"chatcmpl-...",...,"delta":{"content":"Hel`), and ends
	// the response cleanly without [DONE]. A: an `event: content_block_delta`
	// whose data is cut the same way, without message_stop. G: a `data:`
	// chunk cut the same way (a function call's chunk is cut in half). A
	// non-streaming request gets a complete 200 whose JSON body is cut in
	// half (Content-Length of the bytes sent). The wire decoders leave the
	// garbled event out when an event came before it (see
	// StreamMalformedEvent) and report the stream cut at the end of the
	// body (llm.ErrStreamTruncated); with none before it (Chunks 0), a
	// malformed chunk.
	StreamMalformed Kind = "stream_malformed"
	// StreamMalformedEvent is OK whose stream carries one malformed event
	// in its midst: after the first Chunks data events, the garbled
	// stand-in StreamMalformed sends (the next content chunk cut short
	// inside its text), then every event of the answer from that chunk on,
	// whole, its end included. The answer loses nothing; the wire decoders
	// leave the garbled event out and count it (llm.Skipper), unless it
	// comes first (Chunks 0: nothing readable before it, and the stream
	// fails as malformed). Chunks past the content events put it just
	// before the finish_reason chunk. A: the same, among the
	// content_block_delta events (message_start, content_block_start and
	// ping count). G: the same among the chunks; a function call's answer
	// is one chunk, so the garbled event comes first. A non-streaming
	// request is answered as OK.
	StreamMalformedEvent Kind = "stream_malformed_event"
	// NoDone is OK whose stream omits only its terminal marker: every chunk,
	// the finish_reason chunk and the usage chunk (when asked) included, but
	// no `data: [DONE]`. A: message_delta (stop_reason and usage) but no
	// message_stop. G: exactly OK (Gemini streams have no terminal marker). A
	// non-streaming request is answered as OK. The wire/openai and wire/gemini
	// decoders take such a stream as complete; wire/anthropic reports it
	// truncated (llm.ErrStreamTruncated), since the API always ends with
	// message_stop.
	NoDone Kind = "no_done"
	// EmptyDeltas streams the first Chunks data events of the answer, then
	// the next one with its text emptied (`"delta":{"content":""}`, A: a
	// text_delta of "", G: a text part of "") every Gap (default
	// DefaultEmptyGap) until the request's context ends: a stream that is
	// never silent and never says anything. A non-streaming request is
	// answered as Trickle.
	EmptyDeltas Kind = "empty_deltas"
	// Trickle sends the answer OK would get one byte at a time, Gap apart
	// (default DefaultTrickleGap), each byte flushed: the headers at once,
	// then a body (or a stream's events) that keeps coming and takes
	// minutes to end.
	Trickle Kind = "trickle"
)

// kinds lists every Kind, for validation.
var kinds = []Kind{OK, RateLimit, DailyQuota, InsufficientQuota, NoCredits,
	Unavailable, ServerError, Unauthorized, BadRequest, ContextOverflow,
	ModelNotFound, ContentFilter, Reset, Hang, SlowFirstToken, LateFirstToken,
	StreamCut, StreamError, StreamStall, StreamMalformed, StreamMalformedEvent, NoDone, EmptyDeltas, Trickle}

// Kinds returns every Kind, in the order of their declarations above.
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

func (k Kind) valid() bool {
	for _, v := range kinds {
		if k == v {
			return true
		}
	}
	return false
}

// Fault is one scripted behaviour: a Kind and the parameters that kind reads.
// The zero Fault is OK. Parameters a kind does not read are ignored.
type Fault struct {
	Kind Kind
	// RetryAfter is the wait a RateLimit asks for (0: no hint headers and no
	// wait in the message) or the wait a DailyQuota names (0: 7m12.3s; the
	// Anthropic and Gemini defaults are in the kind's doc), or, for Gemini,
	// the wait an InsufficientQuota names.
	RetryAfter time.Duration
	// Delay is how long SlowFirstToken waits before its headers, and how long
	// LateFirstToken waits between its headers and its first content chunk.
	// It is read from the Server's Clock and not scaled by LatencyScale.
	Delay time.Duration
	// Chunks is how many data events StreamCut, StreamStall, StreamMalformed,
	// StreamMalformedEvent and StreamError send first (0: none). The role
	// chunk counts as one; the cut always comes before the finish_reason
	// chunk, so larger values are capped. A: message_start,
	// content_block_start and ping count, the cut comes before
	// content_block_stop. G: the cut comes before the chunk with
	// finishReason (a function call arrives whole in that one chunk).
	Chunks int
	// Gap, when not 0, is the wait between the streamed data events of this
	// answer, in place of Latency.PerChunk; a non-streamed answer waits
	// Latency.FirstToken plus Gap for each chunk its stream would have had
	// (the content pieces) before its headers. It is read from the Server's
	// Clock and not scaled by LatencyScale. Every kind that answers with a 200
	// reads it, StreamCut, StreamStall, StreamMalformed and StreamError for
	// the events they send first; StreamMalformedEvent's garbled event is
	// one event more. The same in every dialect.
	Gap time.Duration
	// Pieces, when above 0, makes a text answer exactly that many content
	// deltas: the pieces of "Hello from <provider>/<model>." ("Hello", " from",
	// " p", "/m", "." for provider p and model m) followed by one word a piece
	// (" 6", " 7", ... numbered by position), or its last pieces joined when
	// Pieces is smaller. The non-streamed body carries the same text, and the
	// usage counts it. A text of Provider.Answer is never changed: its
	// longest pieces are cut in two (between runes) until there are Pieces,
	// or fewer when the text has fewer runes. A tool call keeps its own
	// split. A: as many content_block_delta events. G: as many chunks, the
	// last one with finishReason.
	Pieces int
	// Param is the parameter a BadRequest rejects (default "stop").
	Param string
	// Afford is the number of tokens a NoCredits balance can pay for
	// (default: 85% of the requested max_tokens).
	Afford int
	// Status, when not 0, replaces the HTTP status of an error kind.
	Status int
	// Body, when not empty, replaces the body of an error kind, byte for
	// byte; for StreamError it is the data of the error frame (A: of the
	// `event: error`).
	Body string
	// Header adds or replaces response headers of any kind that answers; a key
	// mapped to an empty list removes that header.
	Header http.Header
}

// String returns the kind and the parameters set, e.g. "rate_limit(retry_after=2s)".
func (f Fault) String() string {
	k := f.Kind
	if k == "" {
		k = OK
	}
	var p []string
	if f.RetryAfter != 0 {
		p = append(p, "retry_after="+f.RetryAfter.String())
	}
	if f.Delay != 0 {
		p = append(p, "delay="+f.Delay.String())
	}
	if f.Chunks != 0 {
		p = append(p, fmt.Sprintf("chunks=%d", f.Chunks))
	}
	if f.Gap != 0 {
		p = append(p, "gap="+f.Gap.String())
	}
	if f.Pieces != 0 {
		p = append(p, fmt.Sprintf("pieces=%d", f.Pieces))
	}
	if f.Param != "" {
		p = append(p, "param="+f.Param)
	}
	if f.Afford != 0 {
		p = append(p, fmt.Sprintf("afford=%d", f.Afford))
	}
	if f.Status != 0 {
		p = append(p, fmt.Sprintf("status=%d", f.Status))
	}
	if len(p) == 0 {
		return string(k)
	}
	return string(k) + "(" + strings.Join(p, ",") + ")"
}

// Faults returns one parameterless Fault per kind, in order: a short way to
// write a Script.
//
//	Script: simulate.Faults(simulate.RateLimit, simulate.RateLimit, simulate.OK)
func Faults(kinds ...Kind) []Fault {
	fs := make([]Fault, len(kinds))
	for i, k := range kinds {
		fs[i] = Fault{Kind: k}
	}
	return fs
}

// Profile draws faults at random for the requests a provider receives once
// its scripts are used up. Each model of each provider has its own random
// source, seeded from Seed and the provider and model names, so the same
// Seed and the same requests to a target give the same faults whatever the
// traffic to other targets. A Profile is read-only once the Server starts
// (or, for Server.SetProfile, once handed to it).
type Profile struct {
	// Seed seeds the random sources; the zero Seed is a seed like any other.
	Seed uint64
	// Rules are tried in order; the first that matches the model applies. A
	// request no rule matches is answered OK.
	Rules []Rule
}

// Rule gives the chances of faults for the models it matches.
type Rule struct {
	// Models limits the rule to these model names; empty means every model.
	Models []string
	// Match, when not nil, limits the rule further to the models it accepts,
	// e.g. a predicate for "expensive" models. It must be safe for concurrent use.
	Match func(model string) bool
	// Chances are drawn with one uniform number per request: the first
	// Chance whose cumulated probability exceeds it is served. When the
	// probabilities add up to less than 1 the rest is OK.
	Chances []Chance
}

// Chance is a Fault and the probability (0 to 1) of serving it.
type Chance struct {
	Fault Fault
	P     float64
}

// Always returns a Profile that serves f to every request of every model.
func Always(f Fault) *Profile {
	return &Profile{Rules: []Rule{{Chances: []Chance{{Fault: f, P: 1}}}}}
}

// Chances turns a map of kinds to probabilities, such as
// {RateLimit: 0.42}, into parameterless Chances sorted by kind, so the draw
// does not depend on map order.
func Chances(m map[Kind]float64) []Chance {
	cs := make([]Chance, 0, len(m))
	for k, p := range m {
		cs = append(cs, Chance{Fault: Fault{Kind: k}, P: p})
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Fault.Kind < cs[j].Fault.Kind })
	return cs
}

func (r *Rule) matches(model string) bool {
	if len(r.Models) > 0 {
		found := false
		for _, m := range r.Models {
			if m == model {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return r.Match == nil || r.Match(model)
}

// pick returns the Fault drawn by x (uniform in [0,1)) for model.
func (p *Profile) pick(model string, x float64) Fault {
	for i := range p.Rules {
		r := &p.Rules[i]
		if !r.matches(model) {
			continue
		}
		sum := 0.0
		for _, c := range r.Chances {
			sum += c.P
			if x < sum {
				return c.Fault
			}
		}
		return Fault{Kind: OK}
	}
	return Fault{Kind: OK}
}

func validateFaults(where string, fs []Fault) error {
	for i, f := range fs {
		if f.Kind != "" && !f.Kind.valid() {
			return fmt.Errorf("simulate: %s[%d]: unknown fault kind %q", where, i, f.Kind)
		}
	}
	return nil
}

func (p *Profile) validate(where string) error {
	for i, r := range p.Rules {
		sum := 0.0
		for j, c := range r.Chances {
			if c.P < 0 || c.P > 1 {
				return fmt.Errorf("simulate: %s rule %d chance %d: probability %v outside [0,1]", where, i, j, c.P)
			}
			if c.Fault.Kind != "" && !c.Fault.Kind.valid() {
				return fmt.Errorf("simulate: %s rule %d chance %d: unknown fault kind %q", where, i, j, c.Fault.Kind)
			}
			sum += c.P
		}
		if sum > 1+1e-9 {
			return fmt.Errorf("simulate: %s rule %d: probabilities add up to %v, more than 1", where, i, sum)
		}
	}
	return nil
}
