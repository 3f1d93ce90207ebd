package batch

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

// MinRPM is the lowest rate Limits slow a provider to: one request a
// minute.
const MinRPM = 1.0

// Limits pace the sends of a run per provider with a token bucket
// (golang.org/x/time/rate, burst 1) and adapt each rate to the provider's
// answers (AIMD): a rate-limit 429 from a provider halves its rate (at
// most once a second, down to MinRPM); each answer from it adds one
// request a minute, up to its ceiling. A provider with no ceiling starts
// unpaced; its first 429 paces it at half the rate it was being sent.
// A quota or credit 429 (a wall) changes no rate: the router parks the
// target, which already stops its traffic.
//
// Limits also slow a provider before its first 429, from what its answers
// say of its limits (router.Attempt.RateLimit: x-ratelimit-* and
// anthropic-ratelimit-* headers): when an answer says that at most a tenth
// of its requests (or tokens) are left in the window (at most one when it
// names no limit), the rate becomes what spreads the requests left over
// the time until the window resets (tokens left count as requests of the
// answer's size), never below MinRPM nor above the ceiling, and never more
// than one request a minute above the rate before. While answers say
// plenty is left, the rate recovers as after a 429.
//
// The zero value is unusable; make one with NewLimits. Safe for
// concurrent use.
type Limits struct {
	adaptive bool
	clk      clock.Clock

	mu  sync.Mutex // guards per
	per map[string]*pace
}

// pace is one provider's bucket and what AIMD knows of it.
type pace struct {
	lim *rate.Limiter

	mu      sync.Mutex // guards the fields below
	ceiling float64    // requests a minute; +Inf: none
	cur     float64    // the rate now, requests a minute; +Inf: unpaced
	cut     time.Time  // the last halving
	sends   [64]time.Time
	n       int // sends recorded, all time
}

// NewLimits returns Limits with the given ceilings, in requests a minute
// per provider name (nil or empty: none). adaptive turns AIMD on; off, the
// ceilings hold as given and 429s change nothing. clk tells the time the
// rates are kept by (nil: the wall clock); Wait waits in real time.
func NewLimits(rpm map[string]float64, adaptive bool, clk clock.Clock) *Limits {
	l := &Limits{adaptive: adaptive, clk: clock.Or(clk), per: map[string]*pace{}}
	for p, r := range rpm {
		l.of(p).set(max(r, MinRPM), true, l.clk.Now())
	}
	return l
}

// of returns provider's pace, made unpaced on first use.
func (l *Limits) of(provider string) *pace {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.per[provider]
	if p == nil {
		p = &pace{lim: rate.NewLimiter(rate.Inf, 1), ceiling: math.Inf(1), cur: math.Inf(1)}
		l.per[provider] = p
	}
	return p
}

// set makes r (requests a minute) the rate, and the ceiling too when
// ceiling is set. p.mu must not be held.
func (p *pace) set(r float64, ceiling bool, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ceiling {
		p.ceiling = r
	}
	p.setLocked(r, now)
}

func (p *pace) setLocked(r float64, now time.Time) {
	p.cur = r
	if math.IsInf(r, 1) {
		p.lim.SetLimitAt(now, rate.Inf)
		return
	}
	p.lim.SetLimitAt(now, rate.Limit(r/60))
}

// RPM returns provider's rate now, in requests a minute; +Inf when it is
// not paced.
func (l *Limits) RPM(provider string) float64 {
	p := l.of(provider)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// Paced reports whether some provider is paced now.
func (l *Limits) Paced() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.per {
		p.mu.Lock()
		inf := math.IsInf(p.cur, 1)
		p.mu.Unlock()
		if !inf {
			return true
		}
	}
	return false
}

// Wait blocks until provider may be sent one request, or ctx ends.
func (l *Limits) Wait(ctx context.Context, provider string) error {
	return l.of(provider).lim.Wait(ctx)
}

// reserve takes provider's next turn when it comes within patience, and
// returns the wait for it; ok is false (and nothing is taken)
// when it comes later.
func (l *Limits) reserve(provider string, patience time.Duration) (wait time.Duration, ok bool) {
	now := l.clk.Now()
	r := l.of(provider).lim.ReserveN(now, 1)
	if !r.OK() {
		return 0, false
	}
	if wait = r.DelayFrom(now); wait > patience {
		r.CancelAt(now)
		return 0, false
	}
	return wait, true
}

// sent records a send to provider, for the rate it is being sent.
func (l *Limits) sent(provider string) {
	p := l.of(provider)
	now := l.clk.Now()
	p.mu.Lock()
	p.sends[p.n%len(p.sends)] = now
	p.n++
	p.mu.Unlock()
}

// observedLocked is the rate p was sent at lately, requests a minute.
func (p *pace) observedLocked(now time.Time) float64 {
	k := min(p.n, len(p.sends))
	if k < 2 {
		return 60
	}
	oldest := p.sends[(p.n-k)%len(p.sends)]
	span := now.Sub(oldest)
	if span <= 0 {
		return 60 * float64(k)
	}
	return float64(k) / span.Minutes()
}

// Observe adapts the rates to one attempt (Router.OnAttempt): a rate-limit
// 429 halves its provider's rate; an answer that says its provider's
// window is nearly spent spreads what is left over the time to its reset;
// another answer raises the rate by one request a minute.
func (l *Limits) Observe(a router.Attempt) {
	if !l.adaptive || a.Target == nil {
		return
	}
	switch {
	case a.Status == "http_429" && a.Kind != classify.Wall:
		p := l.of(a.Target.Provider)
		now := l.clk.Now()
		p.mu.Lock()
		defer p.mu.Unlock()
		if now.Sub(p.cut) < time.Second {
			return // the 429s of sends made at the old rate
		}
		cur := p.cur
		if math.IsInf(cur, 1) {
			cur = p.observedLocked(now)
		}
		p.cut = now
		p.setLocked(max(cur/2, MinRPM), now)
	case a.Action != policy.Skip && a.Failure == nil && a.Status == ledger.StatusOK:
		p := l.of(a.Target.Provider)
		p.mu.Lock()
		defer p.mu.Unlock()
		if r, low := lowRate(a.RateLimit, a.Usage); low {
			p.setLocked(min(max(r, MinRPM), p.ceiling, p.cur+1), l.clk.Now())
			return
		}
		if p.cur < p.ceiling {
			p.setLocked(min(p.cur+1, p.ceiling), l.clk.Now())
		}
	}
}

// lowRate reads rl, what a provider said of its limits on an answer that
// used u: low is set when it has little left of a window, requests or
// tokens, and r is then the rate (requests a minute) that spreads what is
// left over the time until the window resets, the lower of the two when
// both are low. Tokens left count as requests of u's size.
func lowRate(rl *llm.RateLimit, u llm.Usage) (r float64, low bool) {
	if rl == nil {
		return 0, false
	}
	r = math.Inf(1)
	if rl.RemainingRequests >= 0 && rl.ResetRequests > 0 && scarce(rl.RemainingRequests, rl.LimitRequests, 1) {
		r, low = spread(float64(rl.RemainingRequests), rl.ResetRequests), true
	}
	size := max(u.InputTokens+u.OutputTokens, 1)
	if rl.RemainingTokens >= 0 && rl.ResetTokens > 0 && scarce(rl.RemainingTokens, rl.LimitTokens, size) {
		r, low = min(r, spread(float64(rl.RemainingTokens)/float64(size), rl.ResetTokens)), true
	}
	return r, low
}

// scarce reports whether left of limit (-1: unknown) is at most a tenth
// of it, or, with no limit known, at most one request's worth (size).
func scarce(left, limit, size int) bool {
	if limit > 0 {
		return left <= limit/10
	}
	return left <= size
}

// spread is the rate, requests a minute, that sends n requests (at least
// one: the window's first, once it resets) over d.
func spread(n float64, d time.Duration) float64 {
	return max(n, 1) / d.Minutes()
}

// Wrap makes every send to route's targets wait for its provider's turn:
// each target's client is wrapped. A route is wrapped once.
func (l *Limits) Wrap(route *router.Route) {
	for i := range route.Chain {
		t := &route.Chain[i]
		if t.Client == nil {
			continue
		}
		if _, done := t.Client.(*pacedClient); !done {
			t.Client = &pacedClient{inner: t.Client, provider: t.Provider, l: l}
		}
	}
}

// ticket is a turn already waited for (before the router was called,
// outside any attempt's time): the first send to its provider uses it
// instead of waiting again.
type ticket struct {
	provider string
	used     atomic.Bool
}

type ticketKey struct{}

// withTicket returns ctx carrying a turn of provider.
func withTicket(ctx context.Context, provider string) context.Context {
	return context.WithValue(ctx, ticketKey{}, &ticket{provider: provider})
}

// pacedClient is a client whose sends wait for their provider's turn. It
// passes on the optional interfaces the router reads (Carrier, Fitter).
type pacedClient struct {
	inner    llm.Client
	provider string
	l        *Limits
}

func (c *pacedClient) turn(ctx context.Context) error {
	if t, _ := ctx.Value(ticketKey{}).(*ticket); t != nil && t.provider == c.provider && t.used.CompareAndSwap(false, true) {
		c.l.sent(c.provider)
		return nil
	}
	if err := c.l.Wait(ctx, c.provider); err != nil {
		return err
	}
	c.l.sent(c.provider)
	return nil
}

// Complete implements llm.Client.
func (c *pacedClient) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := c.turn(ctx); err != nil {
		return nil, err
	}
	return c.inner.Complete(ctx, req)
}

// Stream implements llm.Client.
func (c *pacedClient) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	if err := c.turn(ctx); err != nil {
		return nil, err
	}
	return c.inner.Stream(ctx, req)
}

// Carries implements llm.Carrier: the wrapped client's answer, false when
// it carries none.
func (c *pacedClient) Carries(need string) bool {
	cr, ok := c.inner.(llm.Carrier)
	return ok && cr.Carries(need)
}

// Fit implements llm.Fitter: the wrapped client's answer, nothing when it
// has none.
func (c *pacedClient) Fit(req *llm.Request) (missing, dropped []string) {
	if f, ok := c.inner.(llm.Fitter); ok {
		return f.Fit(req)
	}
	return nil, nil
}
