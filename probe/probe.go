package probe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
)

// The defaults of a Prober.
const (
	DefaultTimeout       = 10 * time.Second
	DefaultGenerateEvery = time.Hour
	// DefaultParallel is how many targets are checked at once.
	DefaultParallel = 4
)

// The methods of a check, as Result.Method names them.
const (
	// MethodMetadata is a read of the model list or the model's metadata.
	MethodMetadata = "metadata"
	// MethodGenerate is a one-token generation.
	MethodGenerate = "generate"
	// MethodNone: nothing was sent (Result.Note says why).
	MethodNone = "none"
)

// Check is one target to probe.
type Check struct {
	Target *router.Target
	// Generate allows a one-token generation when a free read cannot tell
	// (a quota or credit wall parks the target): some route of the target
	// says probe: generate.
	Generate bool
}

// Prober checks targets. Health and Ledger may be nil (nothing is parked
// or released; nothing is written). A Prober is safe for concurrent use;
// keep one for the life of a process so GenerateEvery holds.
type Prober struct {
	Health *health.Breaker
	Ledger ledger.Sink
	// Clock tells time; nil means the wall clock. Timeouts run on the
	// real clock (the context).
	Clock clock.Clock
	// Timeout bounds one check; 0 means DefaultTimeout.
	Timeout time.Duration
	// GenerateEvery is the least time between two generations probing one
	// target; 0 means DefaultGenerateEvery.
	GenerateEvery time.Duration
	// Parallel is how many targets are checked at once; 0 means
	// DefaultParallel.
	Parallel int

	mu        sync.Mutex
	generated map[string]time.Time // guarded by mu: last generation per target
}

// Result is what one check found and did.
type Result struct {
	// Target is "provider/model".
	Target string `json:"target"`
	// Method is MethodMetadata, MethodGenerate or MethodNone.
	Method string `json:"method"`
	// Status is ledger.StatusProbeOK or StatusProbeFailed; "" when nothing
	// was sent.
	Status string `json:"status,omitempty"`
	// Kind and Reason describe a failure (classify's words).
	Kind   string `json:"kind,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Seconds is how long the check took.
	Seconds float64 `json:"seconds"`
	// Before and After are the target's health as it read before and
	// after the check: "closed", "open", "half_open" (the worst of its
	// target, account and endpoint keys).
	Before string `json:"before"`
	After  string `json:"after"`
	// Until is when the target's park ends, after the check; zero when it
	// is closed.
	Until time.Time `json:"until,omitzero"`
	// Released names the health keys the check closed.
	Released []string `json:"released,omitempty"`
	// LeaseUntil is set when nothing was sent because the health store
	// holds a probe of the target out (a half-open request's, or another
	// probe's lease): when that lease lapses, if no one reports it first.
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Note says, in one line, what a reader should know: why nothing was
	// sent, or why a park stays.
	Note string `json:"note,omitempty"`
}

// Run checks every target of checks (each once, at most Parallel at a
// time) and returns their results in the order given. It stops early only
// when ctx ends; the results then lack the targets not checked.
func (p *Prober) Run(ctx context.Context, checks []Check) []Result {
	par := p.Parallel
	if par <= 0 {
		par = DefaultParallel
	}
	out := make([]Result, len(checks))
	done := make([]bool, len(checks))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, c := range checks {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], done[i] = p.One(ctx, c), true
		}()
	}
	wg.Wait()
	kept := out[:0]
	for i, r := range out {
		if done[i] {
			kept = append(kept, r)
		}
	}
	return kept
}

// One checks one target: see the package doc.
func (p *Prober) One(ctx context.Context, c Check) Result {
	t := c.Target
	clk := clock.Or(p.Clock)
	now := clk.Now()
	res := Result{Target: t.ID(), Method: MethodNone}
	keys := []string{t.EndpointKey(), t.AccountKey(), t.ID()}
	before := map[string]health.Entry{}
	for _, k := range keys {
		if e := p.get(k, now); e.State != health.Closed {
			before[k] = e
		}
	}
	res.Before = worst(before)
	switch {
	case t.Disabled != "":
		res.Note = "disabled by " + t.Disabled
		res.After, res.Until = res.Before, parkEnd(before)
		return res
	case t.Client == nil:
		res.Note = "no key: set " + t.KeyEnv
		res.After, res.Until = res.Before, parkEnd(before)
		return res
	}
	method, note := MethodMetadata, ""
	vouched := 0
	for _, e := range before {
		if metadataVouches(e, t.Dialect) {
			vouched++
		}
	}
	for _, e := range before {
		if !metadataVouches(e, t.Dialect) {
			if c.Generate && p.mayGenerate(t.ID(), now) {
				method = MethodGenerate
			} else if c.Generate {
				note = fmt.Sprintf("parked by %s (%s): a model list cannot tell whether quota is back, and this target had its generation probe less than %s ago", e.Status, e.Kind, p.generateEvery())
			} else {
				note = fmt.Sprintf("parked by %s (%s): a model list cannot tell whether quota is back; it waits for its reset (a route's probe: generate would check with one token)", e.Status, e.Kind)
			}
			break
		}
	}
	if method == MethodMetadata && len(before) > 0 && vouched == 0 {
		// Parked, and by nothing a free read can vouch for.
		res.Note, res.After, res.Until = note, res.Before, parkEnd(before)
		return res
	}
	if method == MethodMetadata {
		if _, ok := t.Client.(llm.Prober); !ok {
			res.Note, res.After, res.Until = "its client has no free check (not an OpenAI, Anthropic or Gemini dialect)", res.Before, parkEnd(before)
			return res
		}
	}
	// Take the lease of every parked key the check can vouch for, in
	// the order a walk reads them.
	leases := map[string]health.Permit{}
	var refused []string // what the store shows of each key whose lease it did not grant
	for _, k := range keys {
		e, parked := before[k]
		if !parked || method == MethodMetadata && !metadataVouches(e, t.Dialect) || p.Health == nil {
			continue
		}
		if pm, _, ok := p.Health.BeginProbe(k, now); ok {
			leases[k] = pm
		} else {
			refused = append(refused, p.notLeased(k, now, &res))
		}
	}
	if len(refused) > 0 && len(leases) == 0 {
		// Nothing to send under: say what the store shows, and no more.
		after := map[string]health.Entry{}
		for _, k := range keys {
			if e := p.get(k, now); e.State != health.Closed {
				after[k] = e
			}
		}
		res.Note, res.After, res.Until = strings.Join(refused, "; ")+": nothing sent", worst(after), parkEnd(after)
		return res
	}
	if len(refused) > 0 && note == "" {
		note = strings.Join(refused, "; ") // said when that key stays parked
	}
	res.Method = method
	start := clk.Now()
	usage, rid, err := p.check(ctx, t, method)
	end := clk.Now()
	res.Seconds = ledger.Seconds(end.Sub(start))
	f := classify.Classify(err, end)
	if err == nil {
		res.Status, res.Reason = ledger.StatusProbeOK, okReason(method)
	} else {
		res.Status, res.Kind, res.Reason = ledger.StatusProbeFailed, string(f.Kind), f.Reason
	}
	p.record(t, start, res, f, usage, rid)
	if err == nil {
		for k, pm := range leases {
			p.Health.EndProbe(k, pm, true, health.Outcome{}, end)
			res.Released = append(res.Released, k)
		}
		slices.Sort(res.Released)
	} else {
		o := health.Outcome{Kind: f.Kind, Status: f.Status, Until: f.Until, Reason: "probe: " + f.Reason}
		for k, pm := range leases {
			p.Health.EndProbe(k, pm, false, o, end)
		}
		if f.Kind == classify.Wall && p.Health != nil {
			// A wall on a key that was not parked (a revoked key seen
			// before any live request met it) parks it as the router would.
			if k := scopeKey(t, f.Scope); k != "" {
				if _, leased := leases[k]; !leased {
					p.Health.Park(k, f.Until, "probe: "+f.Reason, end)
				}
			}
		}
	}
	after := map[string]health.Entry{}
	for _, k := range keys {
		if e := p.get(k, end); e.State != health.Closed {
			after[k] = e
			if e.Until.After(res.Until) {
				res.Until = e.Until
			}
		}
	}
	res.After = worst(after)
	if note != "" && len(after) > 0 {
		res.Note = note
	}
	return res
}

// check makes the one exchange of a probe, and returns the provider's own
// id for it when a response said one.
func (p *Prober) check(ctx context.Context, t *router.Target, method string) (llm.Usage, string, error) {
	to := p.Timeout
	if to <= 0 {
		to = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	if method == MethodMetadata {
		err := t.Client.(llm.Prober).Probe(ctx, t.Model)
		return llm.Usage{}, llm.ProviderRequestIDOfError(err), err
	}
	resp, err := t.Client.Complete(ctx, &llm.Request{Model: t.Model, MaxTokens: 1,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "ping"}}})
	if err != nil {
		return llm.Usage{}, llm.ProviderRequestIDOfError(err), err
	}
	if resp == nil {
		return llm.Usage{}, "", errors.New("probe: empty answer")
	}
	return resp.Usage, resp.ProviderRequestID, nil
}

// notLeased says, from what the health store reads of key at now, why
// BeginProbe did not grant its lease, and notes in res when a lease out
// lapses. It says nothing of who holds a lease: the store does not know
// whether its holder still runs.
func (p *Prober) notLeased(key string, now time.Time, res *Result) string {
	e := p.get(key, now)
	switch {
	case e.State == health.Closed:
		return key + " reads closed now (released or answered since it was read)"
	case !e.ProbeUntil.IsZero() && now.Before(e.ProbeUntil):
		if e.ProbeUntil.After(res.LeaseUntil) {
			res.LeaseUntil = e.ProbeUntil
		}
		return fmt.Sprintf("the health store holds a probe of %s out until %s (a half-open request's or another probe's "+
			"lease; the store does not say whose, nor whether its holder still runs: it lapses then unless reported)",
			key, clockText(e.ProbeUntil, now))
	}
	return fmt.Sprintf("the health store did not grant the probe lease of %s (it reads %s; a store that cannot be written grants none)",
		key, e.State)
}

// clockText is t in UTC for a note: its time, and its date too when it
// is a day or more away from now.
func clockText(t, now time.Time) string {
	layout := "15:04:05 UTC"
	if d := t.Sub(now); d >= 24*time.Hour || d <= -24*time.Hour {
		layout = "2006-01-02 15:04:05 UTC"
	}
	return t.UTC().Format(layout)
}

// parkEnd is the latest end of the parks of es that are open; zero when
// none is.
func parkEnd(es map[string]health.Entry) time.Time {
	var until time.Time
	for _, e := range es {
		if e.State == health.Open && e.Until.After(until) {
			until = e.Until
		}
	}
	return until
}

// mayGenerate reports whether target may be probed with a generation at
// now, and if so counts it.
func (p *Prober) mayGenerate(target string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.generated[target]; ok && now.Sub(last) < p.generateEvery() {
		return false
	}
	if p.generated == nil {
		p.generated = map[string]time.Time{}
	}
	p.generated[target] = now
	return true
}

func (p *Prober) generateEvery() time.Duration {
	if p.GenerateEvery > 0 {
		return p.GenerateEvery
	}
	return DefaultGenerateEvery
}

func (p *Prober) get(key string, now time.Time) health.Entry {
	if p.Health == nil {
		return health.Entry{Key: key, State: health.Closed}
	}
	return p.Health.Get(key, now)
}

// record writes the probe's ledger line.
func (p *Prober) record(t *router.Target, start time.Time, res Result, f classify.Failure, u llm.Usage, rid string) {
	if p.Ledger == nil {
		return
	}
	rec := ledger.Record{Time: start, Provider: t.Provider, Model: t.Model, Attempt: 1,
		Status: res.Status, Kind: res.Kind, Scope: string(f.Scope), Action: "probe", Phase: "none",
		TokensIn: u.InputTokens, TokensOut: u.OutputTokens, Seconds: res.Seconds,
		Cost: t.Cost(u), Reason: res.Reason, ProviderRequestID: rid}
	if res.Method == MethodGenerate {
		rec.Phase = "committed"
	}
	if f.RetryAfter > 0 {
		rec.RetryAfterS = f.RetryAfter.Seconds()
	}
	_ = p.Ledger.Write(rec) // the sink reports its own errors
}

func okReason(method string) string {
	if method == MethodGenerate {
		return "answered a one-token generation"
	}
	return "model list answered"
}

// metadataVouches reports whether a free read in dialect can tell that
// what parked e is over: anything but a wall of quota or credit. A wall of
// the key (401, 403) it can; one of the model (404) only where the read
// names the model (not an OpenAI-compatible list, which does not).
func metadataVouches(e health.Entry, dialect string) bool {
	if e.Kind != classify.Wall {
		return true
	}
	switch e.Status {
	case "http_401", "http_403":
		return true
	case "http_404":
		return dialect == "anthropic" || dialect == "gemini"
	}
	return false
}

// scopeKey is the health key a failure of scope s parks for t.
func scopeKey(t *router.Target, s classify.Scope) string {
	switch s {
	case classify.ScopeAccount:
		return t.AccountKey()
	case classify.ScopeEndpoint:
		return t.EndpointKey()
	case classify.ScopeTarget:
		return t.ID()
	}
	return ""
}

// worst is the state that reads worst among es: open, then half_open,
// else closed.
func worst(es map[string]health.Entry) string {
	w := health.Closed
	for _, e := range es {
		switch {
		case e.State == health.Open:
			return string(health.Open)
		case e.State == health.HalfOpen:
			w = health.HalfOpen
		}
	}
	return string(w)
}
