package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// StreamResult is a stream that reached its first output. Everything before
// that point (failures, retries, hops) is already over and invisible in the
// stream; after it, a failure ends the stream with an error, never with
// another model's text.
type StreamResult struct {
	*Result
	// Stream yields the answer's chunks. Next returns io.EOF after a
	// complete answer, or the error that cut it. The caller must Close it;
	// the attempt's ledger record is written when it ends or is closed.
	Stream llm.Stream
}

// ErrFirstTokenTimeout means a stream sent no output within the route's
// FirstToken limit; the router moved on before any byte reached the
// caller. It is llm.ErrFirstTokenTimeout.
var ErrFirstTokenTimeout = llm.ErrFirstTokenTimeout

// Stream sends req down route's chain as a stream and returns once one target
// produced its first output (or, for a Buffered route, its whole answer).
// Failures before that fail over invisibly; on failure the error is an *Error
// as for Complete.
func (r *Router) Stream(ctx context.Context, route *Route, req *llm.Request, opts Options) (*StreamResult, error) {
	if opts.IdempotencyKey != "" {
		return nil, errors.New("router: an idempotency key is for Complete: a stream's answer is not kept")
	}
	ss := &streamSender{}
	w, err := r.newWalk(route, opts, ss)
	if err != nil {
		return nil, err
	}
	w.startTrace(ctx, req, TraceRequest{Stream: true})
	res, err := w.run(ctx, req)
	return w.streamResult(req, res, ss.stream, err)
}

// streamResult returns st, the stream the walk opened, or the last
// resort's answer as a stream, or the walk's error. Apart from Stream so
// that its frame, under every send's wait, stays small (gateway
// serveStream).
//
//go:noinline
func (w *walk) streamResult(req *llm.Request, res *Result, st *routedStream, err error) (*StreamResult, error) {
	if err != nil {
		if lr := w.lastResort(req, err); lr != nil {
			w.endTrace(lr, nil)
			return &StreamResult{Result: lr, Stream: llm.ResponseStream(lr.Response)}, nil
		}
		w.endTrace(nil, err)
		return nil, err
	}
	// Output started: nothing is sent again, so the walk lets go of the
	// request (its messages, its raw body) for the stream's life.
	w.ask.req = nil
	for i := range w.chain.cs {
		w.chain.cs[i].fitted = nil
	}
	// The request's span ends with the stream (finish).
	return &StreamResult{Result: res, Stream: st}, nil
}

// committed reports whether c carries output a caller would see (a role-only
// or empty chunk does not commit the stream).
func committed(c llm.Chunk) bool {
	return c.Content != "" || len(c.ToolCalls) > 0 || c.FinishReason != ""
}

// openStream opens t's stream and reads up to its first output (all of it
// when the route is Buffered). Until then a failure is an ordinary failed
// attempt that may fail over. The attempt runs under lim: the header,
// first-token and deadline limits until the first output, then only the
// idle limit (each gap, while buffering too) and max_duration. headers
// reports that the response's status came (always, once the stream is
// open).
func (w *walk) openStream(ctx context.Context, t *Target, req *llm.Request, lim limits) (*routedStream, bool, error) {
	actx, cancel := context.WithCancelCause(ctx)
	wt := newWatch(cancel, lim, true)
	inner, err := t.Client.Stream(llm.WithProgress(actx, wt), req)
	if err != nil {
		wt.stop()
		cancel(nil)
		return nil, wt.heard(), wt.explain(err)
	}
	wt.Headers()
	_, _, idle := w.route.Timeouts()
	s := &routedStream{w: w, t: t, inner: inner, cancel: cancel, watch: wt, idle: idle, phase: policy.PhaseSent}
	return w.firstOutput(s)
}

// firstOutput reads s up to its first output (or, buffered, to its end or
// max_buffer), holding what it read for Next, or ends it with the failure
// that came first. A function of its own so that openStream, under which
// the HTTP exchange waits, keeps a small frame.
//
//go:noinline
func (w *walk) firstOutput(s *routedStream) (*routedStream, bool, error) {
	f := firstRead{buffering: w.route.Buffered}
	for {
		if done, err := w.take(s, &f, &s.cur, s.pull()); done {
			if err != nil {
				s.unhold()
				return nil, true, err
			}
			return s, true, nil
		}
	}
}

// firstRead is how far firstOutput got: whether it still holds the whole
// answer back (buffering), and the bytes of the chunks held.
type firstRead struct {
	buffering bool
	held      int
}

// take handles one read of firstOutput: c, or err. It reports whether the
// reading is done, with the failure that ended the attempt (its stream
// closed) if any. Apart from firstOutput so that its frame, under the
// reads it waits for, stays small (gateway serveStream).
//
//go:noinline
func (w *walk) take(s *routedStream, f *firstRead, c *llm.Chunk, err error) (bool, error) {
	if err == io.EOF && len(s.pending) > 0 && f.buffering {
		s.eof = true
		return true, nil
	}
	if err != nil {
		s.abandon()
		if err == io.EOF {
			err = fmt.Errorf("stream ended with no output: %w", llm.ErrStreamTruncated)
		}
		return true, err
	}
	if c.FinishReason == llm.FinishContentFilter && (f.buffering || !s.flowing) {
		// A refusal before anything reached the caller is a policy
		// failure, as the same answer unstreamed is: it fails
		// closed and is never routed around.
		s.abandon()
		return true, refusal()
	}
	if c.Raw != "" {
		*c = c.Clone() // held while the next chunks are read: see llm.Chunk
	}
	s.pending = append(s.pending, *c)
	if committed(*c) && !s.flowing {
		if !s.flow() {
			// A limit fired as the output arrived: the attempt's
			// context is gone, and nothing reached the caller.
			s.inner.Close()
			s.cancel(nil)
			return true, s.watch.expired()
		}
	}
	size := chunkSize(*c)
	if f.held += size; f.buffering && f.held > w.route.maxBuffer() {
		if w.route.FailOverPastBuffer {
			// Nothing reached the caller: the runaway answer is
			// dropped, and the walk moves on as after any failure.
			s.abandon()
			return true, &llm.LimitError{Err: llm.ErrMaxBuffer, Size: w.route.maxBuffer()}
		}
		// Past max_buffer the answer stops waiting to be whole: what
		// is held goes out, and the rest streams as it comes.
		f.buffering = false
	} else if f.buffering && !s.hold(size) {
		// Past the budget of every buffered stream (Router.Buffers),
		// the same, never a failover: the limit is the process's.
		f.buffering = false
		w.r.Buffers.bypassed.Add(1)
	}
	return s.flowing && !f.buffering, nil
}

// abandon ends an attempt whose stream failed before its first output
// reached the caller: the target's stream closed, the limits stopped,
// the attempt's context cancelled.
func (s *routedStream) abandon() {
	s.inner.Close()
	s.watch.stop()
	s.stopIdle()
	s.cancel(nil)
}

// hold counts n bytes of a buffered chunk against the router's Buffers,
// and reports false when the budget is spent.
func (s *routedStream) hold(n int) bool {
	if !s.w.r.Buffers.hold(int64(n)) {
		return false
	}
	s.held.Add(int64(n))
	return true
}

// unhold gives back what s counted against the router's Buffers: its
// held chunks went out, or it ended.
func (s *routedStream) unhold() {
	if n := s.held.Swap(0); n != 0 {
		s.w.r.Buffers.release(n)
	}
}

// chunkSize is what holding c costs, about: its text and its event.
func chunkSize(c llm.Chunk) int {
	n := len(c.Content) + len(c.Raw)
	for _, d := range c.ToolCalls {
		n += len(d.Arguments)
	}
	return n
}

// refusal is the error of a stream that ended in a content-filter refusal
// before its output reached the caller, read by classify as a policy
// failure like the same refusal in a whole answer.
func refusal() error {
	return &llm.ProviderError{Status: 200, Code: "content_filter", Type: "content_filter",
		Message: "response blocked by content filter", Phase: llm.PhaseStream}
}

// routedStream hands a target's stream to the caller and writes the
// attempt's record when it ends. Next and Close may be called from different
// goroutines; Next itself is not safe for concurrent use.
type routedStream struct {
	w       *walk
	t       *Target
	inner   llm.Stream
	cancel  context.CancelCauseFunc
	watch   *watch
	idle    time.Duration
	attempt Attempt
	permits permits
	start   time.Time
	// res is the request's Result, whose phase and attempts the stream's
	// end completes.
	res *Result
	// dropped is what the answer went without before it began
	// (Result.Dropped then), to which noteSkipped adds.
	dropped []string

	// cur is the chunk pull read last (the stream's, not a local of each
	// reader's: the frames under a read stay small, see gateway
	// serveStream); it may borrow the target stream's buffer (llm.Chunk).
	cur     llm.Chunk
	pending []llm.Chunk  // chunks read ahead, served first
	held    atomic.Int64 // bytes of pending counted in w.r.Buffers
	eof     bool         // inner already ended cleanly (buffered)
	flowing bool         // output started: each gap is timed by idle
	usage   llm.Usage
	model   string // the model the chunks named, if any
	// answerID is a Gemini answer's responseId, the first chunk's that
	// named one: Gemini sends no request-id header, so it is the id its
	// support can look up (Attempt.ProviderRequestID).
	answerID string
	// phase is how far the chunks handed to the caller took the attempt:
	// sent, output_started, then tool_started once a tool call's delta
	// went out.
	phase policy.Phase

	once sync.Once // guards the final record
	err  error     // sticky final error

	// idleTimer ends the attempt when a read waits idle for the target;
	// made at the first read after the first output that has to wait, it
	// looks at waitFrom no more often than every idle, so a read costs a
	// clock reading, not a timer reset.
	// waitFrom is when the gap the read in progress waits in began (time
	// since epoch, plus one; 0: no read waits): only output a caller sees
	// (committed) ends a gap, so an empty delta, a role-only chunk or a
	// keep-alive event keeps it open, and quiet is how long the reads of
	// an open gap waited so far (the caller's own time between reads is
	// not counted). idleMu orders the timer's re-arming with its stop at
	// the end; idleDone says it stopped. stalled says it fired.
	idleTimer *time.Timer
	idleMu    sync.Mutex
	idleDone  bool
	epoch     time.Time
	waitFrom  atomic.Int64
	quiet     time.Duration
	stalled   atomic.Bool
}

// flow marks the first output: from now on each gap is timed by idle. It
// reports false when a limit fired first.
func (s *routedStream) flow() bool {
	s.flowing = s.watch.flowing()
	return s.flowing
}

// startIdle makes the idle timer, at the first read that has to wait.
func (s *routedStream) startIdle() {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	if !s.idleDone {
		s.epoch = time.Now()
		s.idleTimer = time.AfterFunc(s.idle, s.checkIdle)
	}
}

// checkIdle runs on the idle timer: it ends the attempt when the read in
// progress has waited idle, else looks again when it would have.
func (s *routedStream) checkIdle() {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	if s.idleDone {
		return
	}
	next := s.idle
	if from := s.waitFrom.Load(); from > 0 {
		waited := time.Since(s.epoch) - time.Duration(from-1)
		if waited >= s.idle {
			s.idleDone = true
			s.stalled.Store(true)
			s.cancel(&llm.LimitError{Err: llm.ErrStreamStalled, Limit: s.idle})
			return
		}
		next = s.idle - waited
	}
	s.idleTimer.Reset(next)
}

// stopIdle stops the idle timer for good.
func (s *routedStream) stopIdle() {
	s.idleMu.Lock()
	s.idleDone = true
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	s.idleMu.Unlock()
}

// pull reads the next chunk from the target into cur, timing the gap
// once output started, and explains an error a limit caused. It and Next run under
// every wait for the target, so their frames are kept small: what is rare
// (the first timed read, an error) is done in functions of its own.
func (s *routedStream) pull() error {
	timed := s.flowing && s.idle > 0
	if timed && s.idleTimer == nil {
		timed = s.timeFirst()
	}
	if timed {
		s.waitFrom.Store(int64(time.Since(s.epoch)-s.quiet) + 1)
	}
	var err error
	s.cur, err = s.inner.Next()
	if timed {
		s.quiet = time.Since(s.epoch) - time.Duration(s.waitFrom.Swap(0)-1)
	}
	if err == nil && committed(s.cur) {
		s.quiet = 0
	}
	if err != nil {
		s.cur = llm.Chunk{}
		return s.explain(err)
	}
	s.note(&s.cur)
	return nil
}

// timeFirst makes the idle timer at the first read after the first output
// that has to wait, and reports whether this read is timed: a chunk the
// target already sent cannot stall, so a stream whose reads never wait (a
// short answer sent at once) makes no timer.
//
//go:noinline
func (s *routedStream) timeFirst() bool {
	if llm.Ready(s.inner) {
		return false
	}
	s.startIdle()
	return true
}

// explain returns the error a read of the target ended with, io.EOF
// unchanged, a stall as the idle limit's error.
//
//go:noinline
func (s *routedStream) explain(err error) error {
	if err == io.EOF {
		return err
	}
	if s.stalled.Load() {
		return &llm.LimitError{Err: llm.ErrStreamStalled, Limit: s.idle}
	}
	return s.watch.explain(err)
}

// note keeps what the record needs of a chunk: its usage and model.
func (s *routedStream) note(c *llm.Chunk) {
	if c.Usage != nil {
		s.usage = *c.Usage
	}
	if c.Model != "" {
		s.model = c.Model
	}
	if s.answerID == "" && c.ID != "" && s.t.Dialect == "gemini" {
		s.answerID = c.ID
	}
}

// Next returns the next chunk; io.EOF after a complete answer.
func (s *routedStream) Next() (llm.Chunk, error) {
	if len(s.pending) > 0 || s.err != nil || s.eof {
		return s.nextHeld()
	}
	if err := s.pull(); err != nil {
		return llm.Chunk{}, s.end(err)
	}
	s.handOut(&s.cur)
	return s.cur, nil
}

// nextHeld returns a chunk read ahead, or the end: the stream's sticky
// error, or io.EOF once a buffered stream's last chunk went out.
//
//go:noinline
func (s *routedStream) nextHeld() (llm.Chunk, error) {
	if len(s.pending) > 0 {
		c := s.pending[0]
		s.pending[0] = llm.Chunk{} // its strings are the caller's now
		if s.pending = s.pending[1:]; len(s.pending) == 0 {
			s.pending = nil // the array goes with the held chunks: a stream holds none once they are out
			s.unhold()
		}
		s.handOut(&c)
		return c, nil
	}
	if s.err != nil {
		return llm.Chunk{}, s.err
	}
	return llm.Chunk{}, s.end(io.EOF)
}

// end records the attempt's end, err (io.EOF: complete), which Next
// returns from now on.
//
//go:noinline
func (s *routedStream) end(err error) error {
	if err == io.EOF {
		s.finish(nil)
	} else {
		s.finish(err)
	}
	s.err = err
	return err
}

// handOut notes the phase that c, handed to the caller, takes the attempt
// to: a tool call's delta starts a tool (whatever came before), other
// output starts the answer.
func (s *routedStream) handOut(c *llm.Chunk) {
	if len(c.ToolCalls) > 0 {
		s.phase = policy.PhaseToolStarted
	} else if s.phase == policy.PhaseSent && committed(*c) {
		s.phase = policy.PhaseOutputStarted
	}
}

// Ready reports whether Next will return without waiting for the target:
// a chunk read ahead, the end already seen, or a chunk the target's stream
// has buffered (llm.Readier). Like Next, it is not safe for concurrent use.
func (s *routedStream) Ready() bool {
	return len(s.pending) > 0 || s.eof || s.err != nil || llm.Ready(s.inner)
}

// Abort ends the stream as Close does, with cause in its record: for
// llm.ErrClientStalled the attempt's status is client_stalled (the caller's
// client stopped reading), never the target's fault.
func (s *routedStream) Abort(cause error) error {
	s.finish(cause)
	err := s.inner.Close()
	s.cancel(nil)
	return err
}

// Close releases the upstream stream. Closing before the end records the
// attempt as cancelled by the caller, which is never the target's fault.
func (s *routedStream) Close() error {
	s.finish(context.Canceled)
	err := s.inner.Close()
	s.cancel(nil)
	return err
}

// finish writes the attempt's record once: ok (committed) on a clean end,
// else the failure (after output started: never replayed, so the action
// is fail) with the phase the chunks handed out reached.
func (s *routedStream) finish(err error) {
	s.once.Do(func() {
		s.unhold()
		s.watch.stop()
		s.stopIdle()
		if err == nil {
			s.noteSkipped()
		}
		w, a := s.w, s.attempt
		now := w.clk.Now()
		a.Duration = now.Sub(s.start)
		a.Usage, a.Cost = s.usage, s.t.Cost(s.usage)
		out := health.Outcome{}
		var scope classify.Scope
		a.Phase = s.phase
		if a.ProviderRequestID = llm.ProviderRequestIDOf(s.inner); a.ProviderRequestID == "" {
			a.ProviderRequestID = llm.ProviderRequestIDOfError(err) // an error event's body may name it
		}
		if a.ProviderRequestID == "" {
			a.ProviderRequestID = llm.CleanRequestID(s.answerID)
		}
		if err == nil {
			a.Status, a.Action, a.Phase = ledger.StatusOK, policy.Return, policy.PhaseCommitted
			a.RateLimit = llm.RateLimitOf(s.inner)
			a.Model = s.model
			if a.Model == "" {
				a.Model = s.t.Model
			}
		} else {
			f := classify.Classify(err, now)
			if errors.Is(err, context.Canceled) && !errors.Is(err, llm.ErrStreamStalled) {
				f.Kind, f.Status, f.Scope, f.Reason = classify.Canceled, classify.StatusCanceled, classify.ScopeAttempt, "caller closed the stream"
			}
			if errors.Is(err, llm.ErrClientStalled) {
				f.Kind, f.Status, f.Scope, f.Reason = classify.Canceled, ledger.StatusClientStalled, classify.ScopeAttempt, err.Error()
			}
			a.Status, a.Kind, a.Action, a.Reason, a.Failure = f.Status, f.Kind, policy.Fail, f.Reason, &f
			out, scope = outcome(f), f.Scope
		}
		s.res.Phase = a.Phase
		w.done(s.t, s.permits, scope, out, now)
		w.used(s.permits, s.usage)
		w.record(a)
		s.res.Attempts = w.attempts // the stream's own record too, once it ended
		w.endTrace(s.res, err)
	})
}
