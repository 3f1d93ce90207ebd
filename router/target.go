package router

import (
	"slices"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/fit"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// Target is one model at one provider: the unit that has health.
type Target struct {
	// Provider names the provider (the first segment of "provider/model").
	Provider string
	// Model is the model's name at that provider; it may contain "/".
	Model string
	// Family names the model across providers ("llama-3.3-70b"). Two targets
	// of one family are a failover (low risk); of two families, a fallback.
	// Empty means Model.
	Family string
	// Pool is the billing pool: free, credit, payg, prepaid or local.
	Pool string
	// Dialect is the wire format: openai, anthropic or gemini.
	Dialect string
	// Client speaks to the provider. Nil means the key is not set: the
	// target is skipped and the skip recorded.
	Client llm.Client
	// KeyEnv names the environment variable that holds the key, for messages.
	KeyEnv string
	// PriceIn and PriceOut are USD per million tokens.
	PriceIn  float64
	PriceOut float64
	// Disabled, when set, names the setting that turns the target off
	// ("providers.groq.disabled"): it is skipped (skipped_disabled), never
	// sent to. A kill switch, flipped by a config reload.
	Disabled string
	// Paced, when set, says why the caller holds the target back for this
	// request (batch's pace for its provider: its next turn is too far
	// off): it is skipped (skipped_paced), never sent to, and the request
	// flows down the chain. Not the target's failure; nothing is parked.
	Paced string
	// Context is the context window in tokens; 0 means unknown.
	Context int
	// MaxOutput is the output cap in tokens; 0 means unknown.
	MaxOutput int
	// Account names the key the target is billed to: a failure of account
	// scope (no credits, a rejected key) parks every target of the same
	// Account. Empty means Provider.
	Account string
	// Offers names the capabilities the target is known to offer
	// (images, documents, audio, tools, json_schema, reasoning): a
	// request that uses one it lacks skips it. Nil means unknown: a
	// request is sent on and the provider judges it. An empty list
	// declares none. Terms say nothing of it, nor it of Terms.
	Offers []string
	// Terms names the data terms the target's provider states
	// (zero_retention, no_training, region-eu, ...): what a route
	// Requires. Nil: none stated, and a term not stated never meets a
	// requirement. Stating terms says nothing of Offers.
	Terms []string
	// Quotas are the limits declared for the target (its own, its
	// account's, a pool's): a send that a window of one cannot take is
	// skipped (skipped_quota) rather than sent to fail; each send and its
	// tokens are counted in the health store's records, shared by every
	// process that uses the store. Nil: none.
	Quotas []Quota
	// Group is the group of equals the target is a member of (see Group);
	// nil when it stands alone. Members of one group are consecutive in
	// the chain and share the pointer.
	Group *Group
	// KeyRateLimits says the provider's rate-limit headers count the key
	// (every model billed to it), not the model: when they say nothing
	// is left, the account is parked, not the target alone.
	KeyRateLimits bool
	// Endpoint names the host the target is served from ("host:port"): a
	// failure of endpoint scope (refused, DNS, TLS) parks every target of
	// the same Endpoint. Empty means the provider's own, apart from every
	// other provider.
	Endpoint string
	// Reasoning, when set, says the model is known to think before its
	// first visible token (a preset that knows it; Offers holding
	// "reasoning" says the same): its streams get the long first-token
	// limit by default (see Route.FirstTokenFor). Unlike Offers it says
	// nothing of what else the target offers.
	Reasoning bool
}

// Reasons reports whether t is known to reason: Reasoning, or Offers
// holding "reasoning".
func (t *Target) Reasons() bool {
	return t.Reasoning || slices.Contains(t.Offers, "reasoning")
}

// states reports whether t states word, a route's requirement: among its
// Terms, or among the capabilities it Offers.
func (t *Target) states(word string) bool {
	return slices.Contains(t.Terms, word) || slices.Contains(t.Offers, word)
}

// ID returns "provider/model", the target's address and health key.
func (t *Target) ID() string { return t.Provider + "/" + t.Model }

// AccountKey returns the health key of the target's account:
// "account:" and Account (or Provider).
func (t *Target) AccountKey() string {
	if t.Account != "" {
		return "account:" + t.Account
	}
	return "account:" + t.Provider
}

// EndpointKey returns the health key of the target's endpoint:
// "endpoint:" and Endpoint (or "provider:" and Provider).
func (t *Target) EndpointKey() string {
	if t.Endpoint != "" {
		return "endpoint:" + t.Endpoint
	}
	return "endpoint:provider:" + t.Provider
}

// HealthKeys returns the keys a park of t can sit under, in the order a
// walk reads them: its own (ID), its account's and its endpoint's.
func (t *Target) HealthKeys() [3]string {
	return [3]string{t.ID(), t.AccountKey(), t.EndpointKey()}
}

// ModelFamily returns Family, or Model when Family is empty.
func (t *Target) ModelFamily() string {
	if t.Family != "" {
		return t.Family
	}
	return t.Model
}

// Cost returns the USD cost of u at the target's prices.
func (t *Target) Cost(u llm.Usage) float64 {
	return (float64(u.InputTokens)*t.PriceIn + float64(u.OutputTokens)*t.PriceOut) / 1e6
}

// Route is a name clients ask for, mapped to an ordered chain.
type Route struct {
	Name  string
	Chain []Target
	// Budget bounds each request on the route; zero fields take defaults.
	Budget policy.Budget
	// FailClosedOn (fail_closed_on in the file) lists the kinds that end
	// the request at once. Nil means invalid and policy (context_overflow
	// always fails closed unless a larger-context target follows).
	FailClosedOn []classify.Kind
	// NoFallback (fallback: false in the file) forbids moving to another
	// model family; failover to the same family elsewhere stays allowed.
	// Its zero value is the default, fallback allowed. Not
	// Options.NoFallback, a request's own, which allows no other target
	// at all.
	NoFallback bool
	// HeaderTimeout bounds the wait for an attempt's response headers,
	// streamed or not (a non-streamed answer's headers come with the whole
	// answer, so it bounds that too). Zero means DefaultHeaderTimeout;
	// negative means none.
	HeaderTimeout time.Duration
	// FirstToken bounds the wait for a stream's first output, from the
	// send; the router moves on before any byte reached the caller. Zero
	// means by target: DefaultReasoningFirstToken for one known to reason
	// (Target.Reasons), DefaultFirstToken for any other; negative means
	// none.
	FirstToken time.Duration
	// IdleTimeout ends a stream that sends no chunk for this long once its
	// output started (while buffering, too), and a non-streamed body that
	// stops arriving. Zero means DefaultIdleTimeout; negative means none.
	IdleTimeout time.Duration
	// MaxDuration, when above zero, is the longest one answer may take
	// from its send, output included: detour's own limit, never recorded
	// as the target's failure. Zero or negative means none: once output
	// flows, only IdleTimeout ends a healthy answer.
	MaxDuration time.Duration
	// Requires names what every target of the route must state: data
	// terms (Target Terms) such as zero_retention, no_training or a
	// region, or capabilities it Offers. A target that does not is
	// skipped (skipped_contract).
	Requires []string
	// Buffered holds each stream until it is complete before handing it to
	// the caller, so a cut or stall mid-answer still fails over invisibly
	// (first-token time is traded for completeness).
	Buffered bool
	// MaxBuffer caps what a Buffered stream holds, in bytes: past it the
	// stream stops buffering, sends what it holds and streams the rest.
	// 0 means DefaultMaxBuffer.
	MaxBuffer int
	// FailOverPastBuffer, when set, drops a Buffered stream that grows
	// past MaxBuffer and fails over instead of streaming the rest: the
	// attempt fails with status max_buffer (llm.ErrMaxBuffer), a runaway
	// answer is never shown, and the next candidate answers instead.
	FailOverPastBuffer bool
	// CacheAnswers (cache_answers in the file), when above zero, keeps
	// each whole answer of the route (Complete) for this long, keyed by a hash of the request, to answer
	// the same request when every candidate fails: the last resort, before
	// StaticAnswer.
	CacheAnswers time.Duration
	// Adapt, when set, is how the route may shorten a request for a target
	// whose context window it does not fit (keep the system prompt and
	// the last turns, a shorter system prompt, old tool results elided;
	// never a tool call without its result). The answer is then degraded
	// and names what was done; a target the request does not fit even
	// adapted is skipped (skipped_contract). Nil: such a target is skipped
	// when the request is too long for it at the low end of the estimate.
	Adapt *fit.Adaptation
	// LowerMaxTokens lets the walk lower a request's max_tokens for a
	// target whose worst case would pass the extra-cost or a daily
	// ceiling, rather than skip it (down to a quarter of what was asked):
	// the answer is then degraded and names it.
	LowerMaxTokens bool
	// DailyCost, when above zero, caps what the route spends in a UTC day,
	// in USD, counted in the health store's records (shared by replicas
	// with a Redis store): a send whose worst case (input plus max output
	// tokens at the target's price) would pass it is skipped
	// (skipped_cost); free targets go on answering.
	DailyCost float64
	// Approve, when set, is the route's eval gate (eval_gate in the file,
	// read from `detour eval` results): a candidate other than the
	// request's first is sent to only when Approve passes it; else it is
	// skipped (skipped_unapproved) with Approve's reason. The first
	// candidate is the route's choice and is never gated. Nil approves
	// every target. It must be safe for concurrent use and fast: it is
	// called on the request path.
	Approve func(t *Target) (ok bool, why string)
	// StaticAnswer (static_answer in the file), when set, is the route's
	// answer when every candidate fails and no kept answer serves (a
	// request that fails closed, or is cancelled, gets no last resort).
	StaticAnswer string
}

// The defaults of a Route's timeouts. The route's deadline (Budget) bounds
// the time until an answer starts; these bound each attempt's phases.
const (
	// DefaultHeaderTimeout: a stream's headers come as soon as the
	// provider accepts the request (well under a second), but self-hosted
	// servers send them with the first token, after loading the model,
	// and a non-streamed call's come with its whole answer (about 1000
	// tokens at 40 tokens a second is 25 s). 30 s lets those through and
	// still leaves an interactive deadline (60 s, 10 s reserve) room for
	// the next candidate.
	DefaultHeaderTimeout = 30 * time.Second
	// DefaultFirstToken is the first-token limit of a target not known to
	// reason: such a model's first token comes in well under 2 s once
	// its headers are in (about 0.2 to 1.5 s on the hosted APIs, a few
	// seconds on a loaded local server), so 15 s is ten times that and
	// a silent one costs a user 15 s before the next candidate's turn,
	// not the 45 s it cost when one limit served every model.
	DefaultFirstToken = 15 * time.Second
	// DefaultReasoningFirstToken is the first-token limit of a target
	// known to reason (Target.Reasons): such models think before their
	// first visible token, often 10 to 40 s and past 60 s on hard
	// prompts. 90 s lets them think; under the interactive budget the
	// deadline less the reserve (50 s) bounds the attempt first, and the
	// batch budget lets the whole 90 s run.
	DefaultReasoningFirstToken = 90 * time.Second
	// DefaultIdleTimeout: once an answer flows, chunks come every few
	// hundred milliseconds; providers that pause send keep-alive pings
	// every 15 s or so. 30 s of silence mid-answer is a stall.
	DefaultIdleTimeout = 30 * time.Second
)

// limit returns d, or def when d is zero; a negative d means none (0).
func limit(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Timeouts returns the route's HeaderTimeout, FirstToken and IdleTimeout
// with their defaults applied; 0 means no limit. The first-token limit
// is that of a target not known to reason (see FirstTokenFor).
func (r *Route) Timeouts() (header, firstToken, idle time.Duration) {
	return limit(r.HeaderTimeout, DefaultHeaderTimeout), limit(r.FirstToken, DefaultFirstToken),
		limit(r.IdleTimeout, DefaultIdleTimeout)
}

// FirstTokenFor returns the first-token limit of a stream to t: the
// route's FirstToken when it sets one, else DefaultReasoningFirstToken
// for a target known to reason and DefaultFirstToken for any other; 0
// means no limit.
func (r *Route) FirstTokenFor(t *Target) time.Duration {
	if t.Reasons() {
		return limit(r.FirstToken, DefaultReasoningFirstToken)
	}
	return limit(r.FirstToken, DefaultFirstToken)
}

// Candidate returns the index in r's chain of the target that start
// names, a provider ("groq") or a target ("groq/llama-3.3-70b"), the first
// match; false when none does. Options.Start is read this way.
func (r *Route) Candidate(start string) (int, bool) {
	for i := range r.Chain {
		if t := &r.Chain[i]; t.Provider == start || t.ID() == start {
			return i, true
		}
	}
	return 0, false
}

// DefaultMaxBuffer is a Buffered route's MaxBuffer when it sets none:
// 4 MiB, far more than a chat answer, far less than a runaway stream.
const DefaultMaxBuffer = 4 << 20

// maxBuffer returns r's MaxBuffer, or its default.
func (r *Route) maxBuffer() int {
	if r.MaxBuffer > 0 {
		return r.MaxBuffer
	}
	return DefaultMaxBuffer
}
