package batch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

// maxRoutes bounds the distinct routes and targets one file may name.
const maxRoutes = 1024

// Runner runs a batch file through one router: each item is one
// router.Complete, under an idempotency key made of Scope and the item's
// id, so that a rerun after a crash gets each kept answer with no send.
// Set its fields, then call Run; a Runner runs one file at a time.
type Runner struct {
	// Router sends every item; required. Run sets its OnAttempt and
	// OnFailover for the run's counts and Limits (calling those set
	// before) and puts them back when it returns: no other request may
	// use the Router meanwhile.
	Router *router.Router
	// Route returns the route an item names: a route name or a
	// provider/model target; required. Run calls it once per distinct
	// name; an error makes the items naming it input errors. Run turns the
	// route budget's queueing off (waiting for resets is Wait's) and
	// wraps its clients with Limits.
	Route func(name string) (*router.Route, error)
	// DefaultRoute is the route of items that name none.
	DefaultRoute string
	// ForceRoute sends every item down DefaultRoute, whatever it names.
	ForceRoute bool
	// Concurrency is how many items are in flight at once; 0 means 4.
	Concurrency int
	// Limits paces the sends per provider; nil paces none.
	Limits *Limits
	// Patience is the longest an item waits for a paced provider's turn
	// before it flows on down its chain (see plan); 0 means a second.
	Patience time.Duration
	// Scope prefixes each item's idempotency key (Scope/id): make it from
	// the input's identity (Input.Digest) and where its results go (Key
	// does), so that a rerun of one file into one results file gets the
	// kept answers, and no other run shares its keys. Run may release a
	// key's claim left in flight by a run that died (the results file's
	// lock says no other run is using it). Empty: no idempotency keys.
	Scope string
	// Wait makes an item blocked only by walls and rate limits wait for
	// the earliest reset, up to MaxWait in all, instead of being written
	// pending.
	Wait    bool
	MaxWait time.Duration
	// Clock tells time and sleeps the waits; nil means the wall clock.
	Clock clock.Clock
	// OnInvalid is told of each line that is no valid item, before its
	// results line is written; nil tells no one. Called from one
	// goroutine at a time.
	OnInvalid func(*InputError)
	// OnProgress is called every ProgressEvery (0: a second) while Run
	// runs, and once when it ends (Progress.Final). Called from one
	// goroutine at a time.
	OnProgress    func(Progress)
	ProgressEvery time.Duration

	// The run's counts, read by progress; reset by Run.
	total                                           int       // set before the run's goroutines start
	started                                         time.Time // likewise
	done, answered, failed, pending, invalid, inFly atomic.Int64
	skipped, replayed, canceled, sends, failovers   atomic.Int64

	mu      sync.Mutex // guards cost, retryAt, perReq
	cost    float64
	retryAt time.Time
	perReq  map[string]*reqCount
}

// reqCount is what the attempts of one request cost.
type reqCount struct {
	sends int
	cost  float64
}

// Key returns a run's Scope: a digest of the input's identity (digest,
// Input.Digest), where its results go (out, an absolute path) and the
// machine (host), so that two runs share keys only when they write the
// same results file.
func Key(digest, out, host string) string {
	sum := sha256.Sum256([]byte(digest + "\x00" + out + "\x00" + host))
	return "batch:" + hex.EncodeToString(sum[:16])
}

// Summary is what a run did: its final Progress, and what opening its
// results file found.
type Summary struct {
	Progress
	// Canceled counts items in flight when the run was interrupted: not
	// written, so a rerun sends them.
	Canceled int
	// RetryAt is the earliest reset among the items left pending; zero
	// when none is.
	RetryAt time.Time
	// Torn, Dropped and Unreadable are those of the results file (see
	// Output).
	Torn, Dropped, Unreadable int
}

// job is one line for a worker.
type job struct {
	it    Item
	route *router.Route
}

// Run sends every item of in whose outcome out does not hold yet and
// writes each outcome to out as it comes: answers, failures, pending
// items and input errors. A cancelled ctx stops the run: no new item
// starts, those in flight are cancelled and not written (a rerun sends
// them), and Run returns the summary with ctx's error. Any other error is
// the input's or the results file's.
func (r *Runner) Run(ctx context.Context, in *Input, out *Output) (Summary, error) {
	if r.Router == nil || r.Route == nil {
		return Summary{}, errors.New("batch: Runner needs a Router and a Route func")
	}
	clk := clock.Or(r.Clock)
	r.reset(in.Items, clk.Now())
	conc := r.Concurrency
	if conc <= 0 {
		conc = 4
	}
	prevAttempt, prevHop := r.Router.OnAttempt, r.Router.OnFailover
	r.Router.OnAttempt = func(a router.Attempt) {
		r.count(a)
		if prevAttempt != nil {
			prevAttempt(a)
		}
	}
	r.Router.OnFailover = func(h router.Hop) {
		r.failovers.Add(1)
		if prevHop != nil {
			prevHop(h)
		}
	}
	defer func() { r.Router.OnAttempt, r.Router.OnFailover = prevAttempt, prevHop }()
	r.Router.Init() // its defaults, before the workers share it

	jobs := make(chan job)
	var werr error
	var werrOnce sync.Once
	fail := func(err error) { werrOnce.Do(func() { werr = err }) }
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for j := range jobs {
				if o := r.send(runCtx, clk, j.it, j.route); o != nil {
					if err := out.Write(o.encode(in.Format, clk.Now())); err != nil {
						fail(err)
						stopRun()
					}
				}
				r.inFly.Add(-1)
			}
		})
	}
	progressDone := make(chan struct{})
	stopProgress := make(chan struct{})
	go func() {
		defer close(progressDone)
		r.report(clk, stopProgress)
	}()

	ferr := r.feed(runCtx, in, out, clk, jobs, fail)
	close(jobs)
	wg.Wait()
	close(stopProgress)
	<-progressDone

	sum := Summary{Progress: r.progress(clk.Now(), true), Canceled: int(r.canceled.Load()),
		Torn: out.Torn, Dropped: out.Dropped, Unreadable: out.Unreadable}
	r.mu.Lock()
	sum.RetryAt = r.retryAt
	r.mu.Unlock()
	if r.OnProgress != nil {
		r.OnProgress(sum.Progress)
	}
	switch {
	case werr != nil:
		return sum, werr
	case ferr != nil:
		return sum, ferr
	}
	return sum, ctx.Err()
}

func (r *Runner) reset(total int, now time.Time) {
	r.total, r.started = total, now
	for _, c := range []*atomic.Int64{&r.done, &r.answered, &r.failed, &r.pending, &r.invalid, &r.inFly,
		&r.skipped, &r.replayed, &r.canceled, &r.sends, &r.failovers} {
		c.Store(0)
	}
	r.mu.Lock()
	r.cost, r.retryAt, r.perReq = 0, time.Time{}, map[string]*reqCount{}
	r.mu.Unlock()
}

// feed reads in's lines, writes the input errors, skips what out holds,
// and hands the rest to the workers.
func (r *Runner) feed(ctx context.Context, in *Input, out *Output, clk clock.Clock, jobs chan<- job, fail func(error)) error {
	routes := map[string]*router.Route{} // resolved names
	routeErr := map[string]error{}
	var werr error
	err := in.each(func(n int, line []byte, tooLong bool) bool {
		if ctx.Err() != nil {
			return false
		}
		var it Item
		var ierr *InputError
		if tooLong {
			ierr = &InputError{Line: n, Msg: fmt.Sprintf("longer than %d MiB", maxLine>>20)}
		} else {
			var err error
			if it, _, err = ParseLine(line, n, in.Format); err != nil {
				errors.As(err, &ierr)
			}
		}
		id := it.ID // unique in the file: OpenInput refuses a file that repeats one
		if ierr != nil {
			id = ierr.ID
		}
		var route *router.Route
		if ierr == nil {
			name := it.Route
			if name == "" || r.ForceRoute {
				name = r.DefaultRoute
			}
			var err error
			if route, err = r.routeFor(name, routes, routeErr); err != nil {
				ierr = &InputError{Line: n, ID: id, Msg: err.Error()}
			}
		}
		key := doneKey(id, 0)
		if ierr != nil {
			key = doneKey("", n)
		}
		if out.Has(key) {
			r.skipped.Add(1)
			r.done.Add(1)
			return true
		}
		if ierr != nil {
			if r.OnInvalid != nil {
				r.OnInvalid(ierr)
			}
			o := &outcome{id: ierr.ID, line: n, status: StatusError, kind: KindInvalidInput, msg: ierr.Error()}
			if werr = out.Write(o.encode(in.Format, clk.Now())); werr != nil {
				fail(werr)
				return false
			}
			r.invalid.Add(1)
			r.done.Add(1)
			return true
		}
		r.inFly.Add(1)
		select {
		case jobs <- job{it: it, route: route}:
			return true
		case <-ctx.Done():
			r.inFly.Add(-1)
			return false
		}
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", in.Path, err)
	}
	return werr
}

// routeFor resolves name once, preparing its route for the run.
func (r *Runner) routeFor(name string, routes map[string]*router.Route, errs map[string]error) (*router.Route, error) {
	if rt, ok := routes[name]; ok {
		return rt, nil
	}
	if err, ok := errs[name]; ok {
		return nil, err
	}
	if name == "" {
		return nil, errors.New("names no route, and the run has no default route")
	}
	if len(routes)+len(errs) >= maxRoutes {
		return nil, fmt.Errorf("route %q: the file names more than %d routes and targets", name, maxRoutes)
	}
	rt, err := r.Route(name)
	if err != nil {
		errs[name] = fmt.Errorf("route %q: %w", name, err)
		return nil, errs[name]
	}
	rt.Budget.Queue = false // batch waits for resets itself (Wait), or writes the item pending
	if r.Limits != nil {
		r.Limits.Wrap(rt)
	}
	routes[name] = rt
	return rt, nil
}

// count adds an attempt to the run's counts and its request's.
func (r *Runner) count(a router.Attempt) {
	if r.Limits != nil {
		r.Limits.Observe(a)
	}
	if a.Action == policy.Skip {
		return
	}
	r.sends.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cost += a.Cost
	c := r.perReq[a.RequestID]
	if c == nil {
		c = &reqCount{}
		r.perReq[a.RequestID] = c
	}
	c.sends++
	c.cost += a.Cost
}

// take returns and forgets what request id's attempts cost.
func (r *Runner) take(id string) reqCount {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.perReq[id]
	delete(r.perReq, id)
	if c == nil {
		return reqCount{}
	}
	return *c
}

// send runs one item to its outcome; nil when the run was cancelled
// before it had one (it is not written: a rerun sends it).
func (r *Runner) send(ctx context.Context, clk clock.Clock, it Item, route *router.Route) *outcome {
	opts := router.Options{NonIdempotent: it.NonIdempotent}
	kept := false
	if r.Scope != "" {
		opts.IdempotencyKey = r.Scope + "/" + it.ID
		kept = r.release(route, opts.IdempotencyKey)
	}
	o := &outcome{id: it.ID}
	var waited time.Duration
	for {
		if ctx.Err() != nil {
			r.canceled.Add(1)
			return nil
		}
		opts.RequestID = randomHex(8)
		cctx, rt, ok := r.plan(ctx, clk, route, kept)
		if !ok {
			r.canceled.Add(1)
			return nil
		}
		res, err := r.Router.Complete(cctx, rt, it.Request, opts)
		c := r.take(opts.RequestID)
		o.attempts += c.sends
		o.cost += c.cost
		o.requestID = opts.RequestID
		if err == nil {
			o.status, o.res, o.target = StatusOK, res, res.Target.ID()
			if res.Replayed {
				r.replayed.Add(1)
			}
			r.answered.Add(1)
			r.done.Add(1)
			return o
		}
		if ctx.Err() != nil {
			r.canceled.Add(1)
			return nil
		}
		var re *router.Error
		if errors.As(err, &re) && errors.Is(err, router.ErrAllFailed) && re.Exhaustion == router.RateLimited && !re.RetryAt.IsZero() {
			d := max(re.RetryAt.Sub(clk.Now()), 0)
			if r.Wait && waited+d <= r.MaxWait {
				if !clk.Sleep(ctx, d) {
					r.canceled.Add(1)
					return nil
				}
				waited += d
				continue
			}
			o.status, o.kind, o.retryAt = StatusPending, string(re.Kind), re.RetryAt
			o.msg = describe(re)
			r.mu.Lock()
			if r.retryAt.IsZero() || re.RetryAt.Before(r.retryAt) {
				r.retryAt = re.RetryAt
			}
			r.mu.Unlock()
			r.pending.Add(1)
			r.done.Add(1)
			return o
		}
		o.status = StatusError
		o.kind, o.msg, o.httpStatus, o.errType, o.errCode = failure(err)
		r.failed.Add(1)
		r.done.Add(1)
		return o
	}
}

// plan returns the route one send of an item goes down, and ctx carrying
// the turn its first candidate waited for, when Limits pace it. A
// candidate whose provider's next turn is more than Patience away is held
// back: marked Paced in a copy of route (a recorded skip,
// skipped_paced), so that the item flows down the chain as it would
// past a parked target, while the paced provider gets its share. When
// every candidate is held back, the item waits for the first one's turn.
// ok is false when ctx ended first. kept skips it all: the answer is kept,
// nothing will be sent.
func (r *Runner) plan(ctx context.Context, clk clock.Clock, route *router.Route, kept bool) (context.Context, *router.Route, bool) {
	if kept || r.Limits == nil || !r.Limits.Paced() {
		return ctx, route, true
	}
	now := clk.Now()
	var held []int
	take := func(i int, wait time.Duration) (context.Context, *router.Route, bool) {
		if !r.Limits.clk.Sleep(ctx, wait) {
			return ctx, route, false
		}
		if len(held) > 0 {
			cp := *route
			cp.Chain = append([]router.Target(nil), route.Chain...)
			for _, h := range held {
				p := cp.Chain[h].Provider
				cp.Chain[h].Paced = fmt.Sprintf("detour batch's pace for %s (%.0f a minute; its next turn is past the %s an item waits)",
					p, r.Limits.RPM(p), r.patience())
			}
			route = &cp
		}
		return withTicket(ctx, route.Chain[i].Provider), route, true
	}
	first := -1
	for i := range route.Chain {
		t := &route.Chain[i]
		if t.Client == nil || t.Disabled != "" || t.Paced != "" || (r.Router.Health != nil && parked(r.Router.Health, t, now)) {
			continue
		}
		if first < 0 {
			first = i
		}
		if wait, ok := r.Limits.reserve(t.Provider, r.patience()); ok {
			return take(i, wait)
		}
		held = append(held, i)
	}
	if first < 0 {
		return ctx, route, true // nothing to send to: the router says why
	}
	held = nil
	if err := r.Limits.Wait(ctx, route.Chain[first].Provider); err != nil {
		return ctx, route, false
	}
	return take(first, 0)
}

// patience is Patience, or its default.
func (r *Runner) patience() time.Duration {
	if r.Patience > 0 {
		return r.Patience
	}
	return time.Second
}

// parked reports whether t, its account or its endpoint is parked (or
// on trial with a probe out), as the router reads it.
func parked(hb *health.Breaker, t *router.Target, now time.Time) bool {
	for _, k := range t.HealthKeys() {
		if e := hb.Get(k, now); e.State == health.Open || e.State == health.HalfOpen && !e.ProbeUntil.IsZero() {
			return true
		}
	}
	return false
}

// release reports whether an answer is kept under an idempotency key on
// route, and drops a claim still in flight, which only a run that died can
// have left (the results file's lock keeps out any other run of the same
// Scope). Without this, the router would wait for that claim to expire
// (15 minutes).
func (r *Runner) release(route *router.Route, key string) (kept bool) {
	kept, _ = r.Router.ReleaseIdempotency(route, key)
	return kept
}

// describe is a router error on one line: its headline, then each
// candidate's reason.
func describe(re *router.Error) string {
	var b strings.Builder
	b.WriteString(re.Headline())
	for i, c := range re.Candidates {
		fmt.Fprintf(&b, "; %d. %s: %s", i+1, c.Target, c.Reason)
	}
	return b.String()
}

// failure reads a final error: its kind and message, and its OpenAI form
// (status, error type and code), as detour's gateway answers it.
func failure(err error) (kind, msg string, status int, typ, code string) {
	var re *router.Error
	switch {
	case errors.Is(err, router.ErrIdempotencyReused):
		return "idempotency_reused", err.Error(), 422, "invalid_request_error", "idempotency_key_reused"
	case !errors.As(err, &re):
		return "error", err.Error(), 500, "server_error", "internal_error"
	}
	kind, msg = string(re.Kind), describe(re)
	switch {
	case errors.Is(err, router.ErrFailClosed):
		status, typ, code = 400, "invalid_request_error", "failed_closed"
		if pe, ok := errors.AsType[*llm.ProviderError](err); ok && pe.Status >= 400 && pe.Status < 500 {
			status = pe.Status
			if pe.Type != "" {
				typ = pe.Type
			}
			if pe.Code != "" {
				code = pe.Code
			}
		}
	case re.Exhaustion == router.RateLimited:
		status, typ, code = 429, "rate_limit_error", "all_candidates_rate_limited"
	case re.Exhaustion == router.TimedOut:
		status, typ, code = 504, "server_error", "all_candidates_timed_out"
	default:
		status, typ, code = 503, "server_error", "all_candidates_failed"
	}
	return kind, msg, status, typ, code
}
