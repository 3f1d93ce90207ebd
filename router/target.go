package router

import (
	"time"

	"github.com/detourhq/detour/classify"
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
	// Context is the context window in tokens; 0 means unknown.
	Context int
	// MaxOutput is the output cap in tokens; 0 means unknown.
	MaxOutput int
}

// ID returns "provider/model", the target's address and health key.
func (t *Target) ID() string { return t.Provider + "/" + t.Model }

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
	// FailClosed lists the kinds that end the request at once. Nil means
	// invalid and policy (context_overflow always fails closed unless a
	// larger-context target follows).
	FailClosed []classify.Kind
	// NoFallback forbids moving to another model family; failover to the same
	// family elsewhere stays allowed.
	NoFallback bool
	// FirstToken is how long a stream may take to produce its first output
	// before the router gives up on that target and moves on (nothing has
	// reached the caller yet). Zero means only the budget's deadline.
	FirstToken time.Duration
	// IdleTimeout ends a stream that sends no chunk for this long, with
	// llm.ErrStreamStalled. Zero means no idle limit.
	IdleTimeout time.Duration
	// Buffered holds each stream until it is complete before handing it to
	// the caller, so a cut or stall mid-answer still fails over invisibly
	// (first-token time is traded for completeness).
	Buffered bool
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
