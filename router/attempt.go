package router

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detourhq/detour/llm"
)

// limits are one attempt's time limits, each measured from the send; 0
// means none.
type limits struct {
	// header bounds the wait for the response headers.
	header time.Duration
	// firstToken bounds the wait for a stream's first output.
	firstToken time.Duration
	// room is what the request's deadline leaves this attempt before its
	// answer starts (see walk.room); a non-streamed answer starts only
	// once its body is whole, so room bounds a trickling body too.
	room time.Duration
	// idle bounds each gap in a non-streamed body once headers are in (a
	// stream's gaps are timed by routedStream).
	idle time.Duration
	// maxDuration bounds the whole attempt, output included.
	maxDuration time.Duration
}

// limits are the time limits of a send to the walk's idx-th candidate at
// now: the route's, and what the deadline leaves it (room). A stream's
// sender adds its first-token limit.
func (w *walk) limits(idx int, now time.Time) limits {
	header, _, idle := w.route.Timeouts()
	return limits{header: header, room: max(w.room(idx, now), time.Nanosecond), idle: idle, maxDuration: max(w.route.MaxDuration, 0)}
}

// room is the time the deadline leaves a send to the walk's idx-th
// candidate at now before its answer starts. The reserve belongs to the
// candidates after it: while one that may be sent to remains, the send
// gets the time left less the reserve, but never less than an even share
// of the time left among the candidates still to try (it and each of
// those). So the reserve is kept whole while more than twice it is left,
// and once less is, what is left is shared: a run of silent targets
// cannot starve the last one. [hang, hang, hang, ok] at the interactive
// defaults (deadline 60 s, reserve 10 s, header_timeout 30 s): 30 s, 20 s
// (60 - 30 - 10), 5 s (half of the 10 s left), and ok has 5 s.
func (w *walk) room(idx int, now time.Time) time.Duration {
	b := w.ask.budget
	left := w.ask.started.Add(b.Deadline).Sub(now)
	if left <= 0 || !w.followed(idx) {
		return left
	}
	if left >= 2*b.Reserve {
		// left - reserve is at least half of left: no share is larger.
		return left - b.Reserve
	}
	k := w.untried(idx, now)
	if k == 0 {
		return left
	}
	return max(left-b.Reserve, left/time.Duration(k+1))
}

// followed reports whether a candidate with a key comes after idx.
func (w *walk) followed(idx int) bool {
	for _, t := range w.chain.cands[idx+1:] {
		if t.Client != nil {
			return true
		}
	}
	return false
}

// untried counts the candidates after idx that eligible lets be sent to
// at now: those still to have their turn.
func (w *walk) untried(idx int, now time.Time) int {
	n := 0
	for _, t := range w.chain.cands[idx+1:] {
		if w.eligible(t, now, false).status == "" {
			n++
		}
	}
	return n
}

// The phases of an attempt, as its watch times them.
const (
	phaseSent    = iota // waiting for the response headers
	phaseHeaders        // a stream's headers are in: waiting for output
	phaseFlowing        // the answer started: only idle and max_duration
)

// watch times one attempt's phases with one timer, and ends the attempt
// with an *llm.LimitError cause when a limit expires. It is the
// llm.Progress of the attempt's context: the client reports the headers
// and the body's reads. Safe for concurrent use.
type watch struct {
	mu     sync.Mutex
	cancel context.CancelCauseFunc
	lim    limits
	stream bool
	sent   time.Time // monotonic time of the send
	phase  int
	// bodyAt is the time since the send of the last read of a
	// non-streamed body; it moves without the lock, and the timer catches
	// up with it only when it fires (a read costs no timer reset).
	bodyAt atomic.Int64
	timer  *time.Timer
	at     time.Duration // since the send: when the armed limit expires
	// nextErr and nextLimit are the limit the armed timer ends the
	// attempt with (nextErr nil: none armed).
	nextErr   error
	nextLimit time.Duration
	fired     *llm.LimitError // the limit that did end it
	done      bool
}

// newWatch starts timing an attempt sent now, whose context's cancel is
// cancel, and arms its first limit.
func newWatch(cancel context.CancelCauseFunc, lim limits, stream bool) *watch {
	w := &watch{cancel: cancel, lim: lim, stream: stream, sent: time.Now()}
	w.mu.Lock()
	w.armLocked()
	w.mu.Unlock()
	return w
}

// armLocked sets the timer to the nearest limit of the current phase, or
// stops it when the phase has none.
func (w *watch) armLocked() {
	w.nextErr = nil
	consider := func(d time.Duration, err error, from time.Duration) {
		if d <= 0 {
			return
		}
		if end := from + d; w.nextErr == nil || end < w.at {
			w.at, w.nextErr, w.nextLimit = end, err, d
		}
	}
	switch w.phase {
	case phaseSent:
		consider(w.lim.header, llm.ErrHeaderTimeout, 0)
		if w.stream {
			consider(w.lim.firstToken, llm.ErrFirstTokenTimeout, 0)
		}
		consider(w.lim.room, llm.ErrDeadline, 0)
	case phaseHeaders:
		consider(w.lim.firstToken, llm.ErrFirstTokenTimeout, 0)
		consider(w.lim.room, llm.ErrDeadline, 0)
	case phaseFlowing:
		if !w.stream {
			// A non-streamed answer starts when its body is whole:
			// one that keeps trickling is bounded by room like a
			// silent one.
			consider(w.lim.idle, llm.ErrStreamStalled, time.Duration(w.bodyAt.Load()))
			consider(w.lim.room, llm.ErrDeadline, 0)
		}
	}
	consider(w.lim.maxDuration, llm.ErrMaxDuration, 0)
	if w.nextErr == nil {
		if w.timer != nil {
			w.timer.Stop()
		}
		return
	}
	d := max(w.at-time.Since(w.sent), 0)
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.expire)
	} else {
		w.timer.Reset(d)
	}
}

// expire ends the attempt with the armed limit's cause.
func (w *watch) expire() {
	w.mu.Lock()
	if w.done || w.fired != nil || w.nextErr == nil {
		w.mu.Unlock()
		return
	}
	// The limit moved (a body read, or a re-arm while this call waited
	// for the lock): arm it again where it is now.
	w.armLocked()
	if w.nextErr == nil || w.at > time.Since(w.sent) {
		w.mu.Unlock()
		return
	}
	w.fired = &llm.LimitError{Err: w.nextErr, Limit: w.nextLimit}
	w.mu.Unlock()
	w.cancel(w.fired)
}

// Headers implements llm.Progress: a stream now waits for its first
// output; a non-streamed answer has started.
func (w *watch) Headers() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.fired != nil || w.phase != phaseSent {
		return
	}
	if w.stream {
		w.phase = phaseHeaders
	} else {
		w.phase = phaseFlowing
		w.bodyAt.Store(int64(time.Since(w.sent)))
	}
	w.armLocked()
}

// Body implements llm.Progress: bytes of a non-streamed body arrived, so
// its idle limit starts again. It only notes the time: the timer, when it
// fires, sees the read and waits on.
func (w *watch) Body() {
	if w.lim.idle > 0 && !w.stream {
		w.bodyAt.Store(int64(time.Since(w.sent)))
	}
}

// flowing marks a stream's first output: from now on only max_duration is
// timed here (routedStream times each gap). It reports false when a limit
// fired first: the output came too late, and the attempt is already over.
func (w *watch) flowing() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired != nil {
		return false
	}
	if w.done || w.phase == phaseFlowing {
		return true
	}
	w.phase = phaseFlowing
	w.armLocked()
	return true
}

// heard reports whether the response's headers came before a limit ended
// the attempt.
func (w *watch) heard() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.phase != phaseSent
}

// expired returns the limit that ended the attempt, or nil.
func (w *watch) expired() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired == nil {
		return nil
	}
	return w.fired
}

// stop ends the timing; a limit that already fired stays reported.
func (w *watch) stop() {
	w.mu.Lock()
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
}

// explain returns err, or the limit that ended the attempt when one did:
// the client then saw only its context end. A provider's own error (an
// *llm.ProviderError of an error status) that beat the limit is kept; a
// 2xx answer that did not read whole is the limit's doing (the cut may
// reach the body's reader as its end before the context's error).
func (w *watch) explain(err error) error {
	if err == nil {
		return nil
	}
	w.mu.Lock()
	fired := w.fired
	w.mu.Unlock()
	if fired == nil {
		return err
	}
	if pe, ok := errors.AsType[*llm.ProviderError](err); ok && (pe.Status < 200 || pe.Status > 299) {
		return err
	}
	return fired
}
