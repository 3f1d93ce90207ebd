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
// FirstToken limit; the router moved on before any byte reached the caller.
var ErrFirstTokenTimeout = fmt.Errorf("no first token in time: %w", context.DeadlineExceeded)

// streamWalk carries a stream request's outcome out of the walk.
type streamWalk struct {
	Result *Result
	Stream *routedStream
}

// Stream sends req down route's chain as a stream and returns once one target
// produced its first output (or, for a Buffered route, its whole answer).
// Failures before that fail over invisibly; on failure the error is an *Error
// as for Complete.
func (r *Router) Stream(ctx context.Context, route *Route, req *llm.Request, opts Options) (*StreamResult, error) {
	w, err := r.newWalk(route, opts, &streamWalk{})
	if err != nil {
		return nil, err
	}
	res, err := w.run(ctx, req)
	if err != nil {
		return nil, err
	}
	return &StreamResult{Result: res, Stream: w.stream.Stream}, nil
}

// committed reports whether c carries output a caller would see (a role-only
// or empty chunk does not commit the stream).
func committed(c llm.Chunk) bool {
	return c.Content != "" || len(c.ToolCalls) > 0 || c.FinishReason != ""
}

// openStream opens t's stream and reads up to its first output (all of it
// when the route is Buffered). Until then a failure is an ordinary failed
// attempt that may fail over.
func (w *walk) openStream(ctx context.Context, cancel context.CancelFunc, t *Target, req *llm.Request) (*routedStream, error) {
	var timedOut atomic.Bool
	var timer *time.Timer
	fired := make(chan struct{})
	if ft := w.route.FirstToken; ft > 0 {
		timer = time.AfterFunc(ft, func() { timedOut.Store(true); cancel(); close(fired) })
	}
	// stopTimer stops the limit, or waits until its func has run.
	stopTimer := func() {
		if timer != nil && !timer.Stop() {
			<-fired
		}
	}
	fail := func(err error) (*routedStream, error) {
		stopTimer()
		if timedOut.Load() {
			err = fmt.Errorf("%w (limit %s; %v)", ErrFirstTokenTimeout, w.route.FirstToken, err)
		}
		return nil, err
	}
	inner, err := t.Client.Stream(ctx, req)
	if err != nil {
		return fail(err)
	}
	s := &routedStream{w: w, t: t, inner: inner, cancel: cancel, idle: w.route.IdleTimeout}
	for {
		c, err := inner.Next()
		if err == io.EOF && len(s.pending) > 0 && w.route.Buffered {
			break
		}
		if err != nil {
			inner.Close()
			if err == io.EOF {
				err = fmt.Errorf("stream ended with no output: %w", llm.ErrStreamTruncated)
			}
			return fail(err)
		}
		s.note(c)
		s.pending = append(s.pending, c)
		if committed(c) && !w.route.Buffered {
			break
		}
	}
	stopTimer()
	if timedOut.Load() {
		// The limit fired as output arrived: the attempt's context is gone.
		inner.Close()
		return fail(context.DeadlineExceeded)
	}
	if w.route.Buffered {
		s.eof = true
	}
	return s, nil
}

// routedStream hands a target's stream to the caller and writes the
// attempt's record when it ends. Next and Close may be called from different
// goroutines; Next itself is not safe for concurrent use.
type routedStream struct {
	w       *walk
	t       *Target
	inner   llm.Stream
	cancel  context.CancelFunc
	idle    time.Duration
	attempt Attempt
	permit  health.Permit
	start   time.Time

	pending []llm.Chunk // chunks read ahead, served first
	eof     bool        // inner already ended cleanly (buffered)
	usage   llm.Usage

	once sync.Once // guards the final record
	err  error     // sticky final error

	// idleTimer cancels the attempt when the target sends nothing for
	// idle; made at the first Next that has to wait, re-armed by each
	// such Next. stalled says it fired.
	idleTimer *time.Timer
	stalled   atomic.Bool
}

func (s *routedStream) note(c llm.Chunk) {
	if c.Usage != nil {
		s.usage = *c.Usage
	}
}

// Next returns the next chunk; io.EOF after a complete answer.
func (s *routedStream) Next() (llm.Chunk, error) {
	if len(s.pending) > 0 {
		c := s.pending[0]
		s.pending = s.pending[1:]
		return c, nil
	}
	if s.err != nil {
		return llm.Chunk{}, s.err
	}
	if s.eof {
		s.finish(nil)
		return llm.Chunk{}, io.EOF
	}
	// A chunk the target already sent cannot stall: no timer for it.
	armed := s.idle > 0 && !llm.Ready(s.inner)
	if armed {
		if s.idleTimer == nil {
			s.idleTimer = time.AfterFunc(s.idle, func() { s.stalled.Store(true); s.cancel() })
		} else {
			s.idleTimer.Reset(s.idle)
		}
	}
	c, err := s.inner.Next()
	if armed && !s.idleTimer.Stop() && s.stalled.Load() && err != nil {
		err = fmt.Errorf("%w (no chunk for %s; %v)", llm.ErrStreamStalled, s.idle, err)
	}
	if err == io.EOF {
		s.finish(nil)
		s.err = io.EOF
		return llm.Chunk{}, io.EOF
	}
	if err != nil {
		s.finish(err)
		s.err = err
		return llm.Chunk{}, err
	}
	s.note(c)
	return c, nil
}

// Ready reports whether Next will return without waiting for the target:
// a chunk read ahead, the end already seen, or a chunk the target's stream
// has buffered (llm.Readier). Like Next, it is not safe for concurrent use.
func (s *routedStream) Ready() bool {
	return len(s.pending) > 0 || s.eof || s.err != nil || llm.Ready(s.inner)
}

// Close releases the upstream stream. Closing before the end records the
// attempt as cancelled by the caller, which is never the target's fault.
func (s *routedStream) Close() error {
	s.finish(context.Canceled)
	err := s.inner.Close()
	s.cancel()
	return err
}

// finish writes the attempt's record once: ok on a clean end, else the
// failure (after output started: never replayed, so the action is fail).
func (s *routedStream) finish(err error) {
	s.once.Do(func() {
		w, a := s.w, s.attempt
		now := w.clk.Now()
		a.Duration = now.Sub(s.start)
		a.Usage, a.Cost = s.usage, s.t.Cost(s.usage)
		out := health.Outcome{}
		if err == nil {
			a.Status, a.Action = "ok", policy.Return
		} else {
			f := classify.Classify(err, now)
			if errors.Is(err, context.Canceled) && !errors.Is(err, llm.ErrStreamStalled) {
				f.Kind, f.Status, f.Reason = classify.Canceled, "canceled", "caller closed the stream"
			}
			a.Status, a.Kind, a.Action, a.Reason, a.Failure = f.Status, f.Kind, policy.Fail, f.Reason, &f
			out = health.Outcome{Kind: f.Kind, Reason: f.Reason}
		}
		w.r.health().Done(s.t.ID(), s.permit, out, now)
		w.record(a)
	})
}
