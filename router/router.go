package router

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// Router walks routes. Every field is optional: nil means the default. A
// Router is safe for concurrent use once its fields are set.
type Router struct {
	// Health keeps each target's breaker; nil means a private in-memory one.
	Health *health.Breaker
	// Ledger receives one record per attempt; nil discards them.
	Ledger ledger.Sink
	// Clock tells time and sleeps; nil means the wall clock.
	Clock clock.Clock
	// Rand returns a uniform number in [0, 1) for backoff jitter; nil means
	// math/rand/v2.
	Rand func() float64
	// OnAttempt is called after every attempt and skip, after its ledger
	// record was written. It must not block for long.
	OnAttempt func(Attempt)
	// OnFailover is called for every hop away from a target that failed.
	OnFailover func(Hop)
	// NewID makes request ids; nil means 16 random hex digits.
	NewID func() string
	// Trace, when set, traces each request: a span per request and a child
	// per attempt and skip (package telemetry exports them over OTLP). Nil,
	// the default, traces nothing, at the cost of a nil check.
	Trace Tracer
	// Buffers, when set, is the budget of bytes that every Buffered
	// stream of this router holds against, with every other router
	// sharing it (see Buffers). Nil means each buffered stream is bounded
	// by its route's MaxBuffer alone.
	Buffers *Buffers
	// KeptAnswers returns the ceiling of the answers kept for routes'
	// CacheAnswers (class "answer:" of the records), read at each answer
	// kept; nil means DefaultKeptAnswers and DefaultKeptAnswerBytes.
	KeptAnswers func() health.Ceiling
	// OnEvict, when set, is called with how many kept answers a new one
	// evicted to stay within KeptAnswers.
	OnEvict func(n int)

	defaultHealth  *health.Breaker
	defaultRecords *health.MemoryRecords // kept answers, when the breaker's store keeps no records
}

// Options are per-request controls.
type Options struct {
	// Start names the provider (or "provider/model" target) to try first; the
	// chain continues after it and wraps around to the ones before it.
	Start string
	// NoFallback sends only to the start target (the first, without Start):
	// no retry elsewhere, ever.
	NoFallback bool
	// Probe, with NoFallback, sends to the start target even when a park
	// holds it, as a probe of that park ("has it recovered?"): each of
	// its health keys that a park refuses lends its probe lease instead
	// (health.Breaker.BeginProbe), as `detour probe` takes it. An answer
	// ends those parks at once; a failure keeps them, or parks anew, as a
	// failed probe does (EndProbe). Such a send, and a half-open probe
	// the store grants on its own, is recorded as a probe (Attempt.Probe:
	// ledger status probe_ok or probe_failed, action probe). A key whose
	// probe is already out still refuses the send (skipped_parked). A
	// start target no park holds is sent to as usual. Ignored without
	// NoFallback.
	Probe bool
	// RequestID is recorded in the ledger; empty means a new one.
	RequestID string
	// NonIdempotent says the request has side effects: when an attempt's
	// outcome is unknown (sent, then a timeout or a reset before any
	// response said what became of it: policy.PhaseUnknown), it is never
	// sent again, to this target or another. The request ends with an
	// *Error (errors.Is ErrAllFailed) whose Phase is policy.PhaseUnknown.
	NonIdempotent bool
	// Spend adds daily spend ceilings beyond the route's (Route.DailyCost),
	// each with its own counter: a gateway's client key, a team.
	Spend []SpendLimit
	// IdempotencyKey binds one operation to one answer (Complete; Stream
	// refuses it): a repeat of the key with the same request gets the
	// first answer with no send (Result.Replayed), for a day, through the
	// health store's records (shared by processes with SQLite, by
	// replicas with Redis); with another request it fails with
	// ErrIdempotencyReused.
	IdempotencyKey string
	// IdempotencyTTL is how long the answer to IdempotencyKey is kept; 0
	// means a day.
	IdempotencyTTL time.Duration
}

// Attempt is one exchange with one target, or one skip. It is a snapshot:
// callers may keep it.
type Attempt struct {
	RequestID string
	Target    *Target
	Hop       int
	N         int
	Failover  bool
	Status    string
	Kind      classify.Kind
	Action    policy.Action
	// Phase is how far the attempt got: none for a skip, committed for an
	// answer handed over whole (see policy.Phase).
	Phase    policy.Phase
	Usage    llm.Usage
	Duration time.Duration
	Wait     time.Duration
	Cost     float64
	// Reason is one line (at most 140 characters); empty on success.
	Reason string
	// Dropped names the needs of the request this target went without
	// (a cross-dialect hop that left out safe fields: user, metadata,
	// cache hints, ...), and the events of its streamed answer left out
	// as unreadable ("1 malformed event", see llm.Skipper).
	Dropped []string
	// Failure is the classified failure; nil on success and on skips.
	Failure *classify.Failure
	// Degraded is set on an answer (and a last resort) that the caller
	// gets degraded: another model family than the route's first, or
	// without some of what the request carried (Dropped).
	Degraded bool
	// Start is when the attempt was sent, or the skip decided, by the
	// router's clock; the attempt ended at Start plus Duration.
	Start time.Time
	// Model is the model that answered, as the target named it in its
	// answer (Target.Model when it named none); empty unless the attempt
	// answered.
	Model string
	// RateLimit is what the provider said of its rate limits on this
	// answer (its x-ratelimit-* or anthropic-ratelimit-* headers); nil
	// when it said nothing, and on failures and skips.
	RateLimit *llm.RateLimit
	// Pick says, for a member of a group of equals, why the group put it
	// where it was (least busy, most room, weighted, the prompt's cache
	// affinity); empty outside a group.
	Pick string
	// Probe is set on a send made as a probe of a park of its target
	// (Options.Probe): its ledger record's status is probe_ok or
	// probe_failed (Status keeps what came back) and its action probe.
	Probe bool
	// ProviderRequestID is the provider's own id for this exchange, the
	// one its support desk asks for: read from the response's headers
	// (x-request-id, request-id, cf-ray, ...) or, where the provider puts
	// it only there, its body (see llm.ProviderRequestID); at most
	// llm.MaxProviderRequestID printable ASCII bytes. Empty when the
	// attempt got no response or the provider named none, and on skips.
	ProviderRequestID string
}

// Hop is a move away from a target that failed.
type Hop struct {
	RequestID string
	// From is the target that just failed, "provider/model".
	From string
	// To is the next candidate, "provider/model".
	To string
	// Action is failover (same model family) or fallback (another).
	Action policy.Action
	// Reason is From's own reason: one line, at most 140 characters.
	Reason string
}

// Result is an answered request.
type Result struct {
	RequestID string
	Response  *llm.Response
	// Target is the target that really answered.
	Target *Target
	// Attempts are every attempt and skip, in order.
	Attempts []Attempt
	// Degraded is true when the answer came from another model family than
	// the route's first candidate (a fallback), or went without some of
	// what the request carried or of what its target sent (Dropped). A
	// stream's may turn true as it ends (an unreadable event mid-stream):
	// read it, as Phase, after Next returned an error or Close returned.
	Degraded bool
	// Dropped names what the request carried that the answering target
	// went without, and the events of its answer left out as unreadable
	// ("1 malformed event"); empty when nothing was dropped. A stream's
	// may grow as it ends, as Degraded.
	Dropped []string
	// Replayed is set when the answer is the one kept for the request's
	// Options.IdempotencyKey: nothing was sent, and Attempts is empty.
	Replayed bool
	// Phase is how far the answering attempt got: committed for Complete.
	// A stream's is sent when Stream returns, and its final phase
	// (committed, or how far a cut or closed stream got) once the stream
	// has ended: read it after Next returned an error or Close returned.
	Phase policy.Phase
}

func (r *Router) clock() clock.Clock { return clock.Or(r.Clock) }

func (r *Router) health() *health.Breaker {
	if r.Health != nil {
		return r.Health
	}
	return r.defaultHealth
}

func (r *Router) jitter() float64 {
	if r.Rand != nil {
		return r.Rand()
	}
	return mrand.Float64()
}

func (r *Router) newID() string {
	if r.NewID != nil {
		return r.NewID()
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Init prepares defaults that must be shared between calls; Complete calls it
// when needed, but calling it once before concurrent use avoids a race on the
// private breaker.
func (r *Router) Init() *Router {
	if r.Health == nil && r.defaultHealth == nil {
		r.defaultHealth = health.New(health.Settings{})
	}
	if r.defaultRecords == nil {
		r.defaultRecords = &health.MemoryRecords{Now: r.clock().Now}
	}
	return r
}

// order returns the candidates for one request: from Start (wrapping round),
// or only the first when NoFallback is set.
func order(route *Route, opts Options) ([]*Target, error) {
	start := 0
	if opts.Start != "" {
		var ok bool
		if start, ok = route.Candidate(opts.Start); !ok {
			return nil, fmt.Errorf("route %q has no candidate %q", route.Name, opts.Start)
		}
	}
	n := len(route.Chain)
	if opts.NoFallback {
		n = 1
	}
	out := make([]*Target, 0, n)
	for i := range n {
		out = append(out, &route.Chain[(start+i)%len(route.Chain)])
	}
	return out, nil
}

// newWalk prepares one request's walk down route, the same for Complete,
// Stream and Embed but for s, which makes the sends.
func (r *Router) newWalk(route *Route, opts Options, s sender) (*walk, error) {
	if len(route.Chain) == 0 {
		return nil, fmt.Errorf("route %q has no candidates", route.Name)
	}
	r.Init()
	cands, err := order(route, opts)
	if err != nil {
		return nil, err
	}
	w := &walk{r: r, clk: r.clock(), route: route, sender: s,
		ask:   ask{id: opts.RequestID, opts: opts, budget: route.Budget.WithDefaults()},
		chain: chain{cands: cands, cs: make([]cand, len(cands))}}
	if w.ask.id == "" {
		w.ask.id = r.newID()
	}
	w.ask.started = w.clk.Now()
	return w, nil
}

// Complete sends req down route's chain and returns the first answer. On
// failure the error is an *Error listing every candidate's reason.
func (r *Router) Complete(ctx context.Context, route *Route, req *llm.Request, opts Options) (*Result, error) {
	if opts.IdempotencyKey != "" {
		r.Init()
		return r.completeOnce(ctx, route, req, opts)
	}
	return r.complete(ctx, route, req, opts)
}

// complete is Complete without an idempotency key.
func (r *Router) complete(ctx context.Context, route *Route, req *llm.Request, opts Options) (*Result, error) {
	w, err := r.newWalk(route, opts, &plainSender{})
	if err != nil {
		return nil, err
	}
	w.startTrace(ctx, req, TraceRequest{})
	res, err := w.run(ctx, req)
	if err != nil {
		if lr := w.lastResort(req, err); lr != nil {
			w.endTrace(lr, nil)
			return lr, nil
		}
		w.endTrace(nil, err)
		return nil, err
	}
	w.keepAnswer(req, res)
	w.endTrace(res, nil)
	return res, nil
}
