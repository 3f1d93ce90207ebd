package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
)

// streamEncoder turns llm chunks into one dialect's SSE events. Each method
// appends whole events (each ending in a blank line) to b.
type streamEncoder interface {
	chunk(b []byte, ch llm.Chunk) []byte
	end(b []byte) []byte
	fail(b []byte, e *apiError) []byte
	usage() llm.Usage
}

// sseOut is a stream's response: the handler writes events, and a timer
// sends a ": ping" comment when a keep-alive interval passed without one.
// Before the first output the same timer commits the response headers, so
// a client waiting long for a first token (retries, failovers) still gets
// headers in time; who answered then goes out as trailers.
type sseOut struct {
	mu        sync.Mutex // guards everything below; the handler and the timer share w
	w         http.ResponseWriter
	flusher   http.Flusher
	committed bool
	early     bool // committed before the answer was known
	wrote     bool // an event went out since the last tick
	held      bool // written but not flushed: more is coming at once
	stopped   bool
	err       error // first write error: the client is gone
	timer     *time.Timer
	every     time.Duration
	// rc sets the socket's write deadline: a client that stops reading
	// fills the socket's buffers, a write waits, and writeTimeout after
	// it began the write fails (stalled says so). The deadline is moved
	// on at most every quarter of writeTimeout (setAt), not per write.
	rc           *http.ResponseController // &rcv, or nil
	rcv          http.ResponseController
	writeTimeout time.Duration
	setAt        time.Time
	stalled      bool
}

// init readies o, a zero sseOut, to write to w; a keep-alive goes out
// after every without an event.
func (o *sseOut) init(w http.ResponseWriter, every, writeTimeout time.Duration) {
	o.w, o.every, o.writeTimeout = w, every, writeTimeout
	if writeTimeout > 0 {
		o.rcv = *http.NewResponseController(w)
		o.rc = &o.rcv
	}
	o.flusher, _ = w.(http.Flusher)
	o.mu.Lock() // tick reads o.timer
	o.timer = time.AfterFunc(every, o.tick)
	o.mu.Unlock()
}

// streamOut is what a streamed answer is written with: the SSE writer,
// the encoder of the common client dialects and the raw pass-through
// around it, in one allocation. Each event of a slow stream touches them
// all with the stream's memory long out of the CPU's caches: in one
// place, they cost one miss, not four (see exchange.Stream.Init).
type streamOut struct {
	out sseOut
	raw rawStream
	oa  oaStream
	an  anStream
	kg  guardOut
}

// commitLocked writes the stream's headers.
func (o *sseOut) commitLocked() {
	h := o.w.Header()
	h["Content-Type"] = []string{"text/event-stream"}
	h["Cache-Control"] = []string{"no-cache"}
	h["X-Accel-Buffering"] = []string{"no"}
	if _, set := h["Trailer"]; !set {
		h["Trailer"] = []string{"X-Detour-Cost"} // what the request cost, known at the end
	}
	o.w.WriteHeader(http.StatusOK)
	o.committed = true
}

// sendLocked writes b and flushes it, unless hold: then b waits in the
// response's buffer for the events the upstream already has ready, and
// goes out with them in one write.
func (o *sseOut) sendLocked(b []byte, hold bool) error {
	if o.err != nil {
		return o.err
	}
	if !o.committed {
		o.commitLocked()
	}
	o.deadlineLocked()
	if _, err := o.w.Write(b); err != nil {
		o.failLocked(err)
		return o.err
	}
	o.wrote = true
	if hold {
		o.held = true
		return nil
	}
	o.flushLocked()
	return o.err
}

// flushLocked sends what the response has buffered. The caller moved the
// write deadline on (deadlineLocked) just before: one clock reading an
// event, not two.
func (o *sseOut) flushLocked() {
	o.held = false
	if o.rc != nil {
		if err := o.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			o.failLocked(err)
		}
		return
	}
	if o.flusher != nil {
		o.flusher.Flush()
	} else if err := http.NewResponseController(o.w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		o.err = err
	}
}

// deadlineLocked moves the write deadline on to writeTimeout from now,
// unless it was moved less than a quarter of writeTimeout ago.
func (o *sseOut) deadlineLocked() {
	if o.rc == nil {
		return
	}
	if now := time.Now(); now.Sub(o.setAt) >= o.writeTimeout/4 {
		if o.rc.SetWriteDeadline(now.Add(o.writeTimeout)) != nil {
			o.rc = nil // not supported: no deadline, as before
			return
		}
		o.setAt = now
	}
}

// failLocked keeps the first write error, and whether the write deadline
// (a client that stopped reading) caused it.
func (o *sseOut) failLocked(err error) {
	if o.err == nil {
		o.err = err
		o.stalled = errors.Is(err, os.ErrDeadlineExceeded)
	}
}

// write sends events; an error means the client is gone. With hold (the
// upstream's next chunk has already arrived: llm.Ready) they are only
// buffered, to go out with the next write or flush.
func (o *sseOut) write(b []byte, hold bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sendLocked(b, hold)
}

// flush sends events held by write.
func (o *sseOut) flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held && o.err == nil {
		o.deadlineLocked()
		o.flushLocked()
	}
	return o.err
}

var ping = []byte(": ping\n\n")

// tick sends a keep-alive when nothing went out for a whole interval.
func (o *sseOut) tick() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return
	}
	if !o.wrote {
		if !o.committed {
			o.early = true
			o.w.Header()["Trailer"] = []string{"X-Detour-Provider, X-Detour-Model, X-Detour-Attempts, X-Detour-Degraded, X-Detour-Dropped, X-Detour-Cost"}
		}
		o.sendLocked(ping, false) //nolint:errcheck // the handler sees the error on its next write
	}
	o.wrote = false
	o.timer.Reset(o.every)
}

// stop ends the keep-alives; no write happens after it returns. The write
// deadline is cleared: the connection may serve another request.
func (o *sseOut) stop() {
	o.mu.Lock()
	o.stopped = true
	o.timer.Stop()
	if o.rc != nil && !o.setAt.IsZero() {
		o.rc.SetWriteDeadline(time.Time{}) //nolint:errcheck // the connection may be gone
	}
	o.mu.Unlock()
}

// clientStalled reports whether a write failed on the write deadline.
func (o *sseOut) clientStalled() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stalled
}

// serveStream answers a request that asked for a stream. The router fails
// over invisibly until a target produces its first output; after that a
// failure ends the stream with an error event in the client's dialect,
// never with another model's text.
//
// The handler's goroutine waits on the upstream for the stream's whole
// life, and a goroutine's stack, once grown, stays grown while more than
// a quarter of it is in use: so every wait under it (for the answer's
// headers, for its first output, for each next chunk) has to fit in 8 KiB,
// as the plain proxy's does, or each open stream holds 16. The frames
// under those waits are kept small for that: serveStream strings together
// steps of their own, and the router's walk and stream, the decoders and
// ServeHTTP do their rare work (errors, failover, the first timed read)
// in functions of their own. Waiting takes about 6.6 KiB at most today
// (gdb on a held stream); a failover's record and health updates may take
// that one stream's stack past it. TestStream_HandlerStackStaysSmall keeps
// it so (docs/measurements.md, "Slow streams").
func (c *call) serveStream(ctx context.Context) {
	st := new(streamOut)
	out := &st.out
	out.init(c.w, c.s.v().gw.KeepAlive, c.s.writeTimeout())
	defer out.stop()
	enc := c.encoder(st)
	sr := c.startStream(ctx, out, enc)
	if sr == nil {
		return
	}
	defer sr.Stream.Close()
	c.relay(out, c.answering(st, sr, enc), sr)
	c.endStream(out, sr)
}

// encoder returns the stream encoder of the client's dialect: st's own
// for OpenAI and Anthropic.
func (c *call) encoder(st *streamOut) streamEncoder {
	switch c.d {
	case anthropicDialect:
		st.an.c = c
		return &st.an
	case responsesDialect:
		return &rsStream{c: c}
	case geminiDialect:
		return &gmStreamOut{c: c}
	default:
		st.oa.c = c
		return &st.oa
	}
}

// startStream opens the stream, or answers the failure and returns nil:
// a plain HTTP error while no header went out, else an error event.
//
//go:noinline
func (c *call) startStream(ctx context.Context, out *sseOut, enc streamEncoder) *router.StreamResult {
	sr, err := c.s.router.Stream(ctx, c.route, c.cr.req, c.opts)
	if err != nil {
		c.openFailed(out, enc, err)
		return nil
	}
	return sr
}

// openFailed answers a stream the router could not open: a plain HTTP
// error while no header went out, else an error event. Apart from
// startStream so that its frame, under the routing's waits, stays small
// (see serveStream).
//
//go:noinline
func (c *call) openFailed(out *sseOut, enc streamEncoder, err error) {
	out.mu.Lock()
	defer out.mu.Unlock()
	out.stopped = true // no ping, and no header, behind our back from now on
	if !out.committed {
		c.failed(err) // still a plain HTTP error: 429, 503, 504, 400, ...
		return
	}
	// Keep-alives are out, so the headers are: the failure goes in an
	// error event.
	e, gone := c.failure(err)
	c.status = http.StatusOK // logged with error_status and at WARN all the same
	if !gone {
		p := getBytes()
		b := enc.fail(*p, e)
		out.sendLocked(b, false) //nolint:errcheck // the client may be gone
		putBytes(p, b)
	}
}

// answering returns the encoder of the answer: enc, or the raw
// pass-through around it when the target speaks the client's dialect,
// inside the guard that keeps keys out (keyguard.go) when detour holds
// any. It sets who answers (headers, or trailers when the headers went
// out early) and lets go of the request once the answer started.
//
//go:noinline
func (c *call) answering(st *streamOut, sr *router.StreamResult, enc streamEncoder) streamEncoder {
	out := &st.out
	if c.passThrough(sr.Target) {
		st.raw = rawStream{inner: enc, c: c}
		enc = &st.raw
	}
	if ks := c.answerKeys(); ks != nil {
		st.kg.init(enc, ks)
		enc = &st.kg
	}
	if c.idem == "" {
		c.releaseBody() // the answer started: the request is sent for good
	}
	n := sends(sr.Attempts)
	if !lastResort(sr.Attempts) {
		n++ // the send that is answering
	}
	out.mu.Lock()
	if out.early {
		c.answered, c.sends = sr.Target, n
	} else {
		c.setWho(c.w.Header(), sr.Result, n)
	}
	out.mu.Unlock()
	c.status = http.StatusOK
	return enc
}

// relay writes the stream's chunks as they come, until its end, its
// failure or the client's leaving.
//
//go:noinline
func (c *call) relay(out *sseOut, enc streamEncoder, sr *router.StreamResult) {
	first := true
	for {
		ch, err := sr.Stream.Next()
		// Each event takes its buffer from the pool and gives it back once
		// written: a stream waiting for the upstream holds none.
		p := getBytes()
		if err != nil {
			c.streamEnded(out, enc, sr, p, err)
			return
		}
		b := enc.chunk(*p, ch)
		// Events the upstream sent together go out together: flush only
		// when the next chunk is not here yet, so a lone event still goes
		// out at once.
		more := llm.Ready(sr.Stream)
		if len(b) == 0 {
			putBytes(p, b)
			if !more && out.flush() != nil {
				c.outcome, c.errText = OutcomeCanceled, "the client went away"
				return
			}
			continue
		}
		if first {
			first = false
			c.firstOutput()
		}
		werr := out.write(b, more)
		putBytes(p, b)
		if werr != nil {
			c.outcome, c.errText = OutcomeCanceled, "the client went away"
			return
		}
	}
}

// firstOutput notes the time to the first token.
//
//go:noinline
func (c *call) firstOutput() {
	c.ttft = c.s.clk.Now().Sub(c.start)
	c.s.metrics.ttft.With(c.d.String()).Observe(c.ttft.Seconds())
}

// streamEnded writes the stream's end (err is io.EOF) or its failure, in
// the buffer p.
//
//go:noinline
func (c *call) streamEnded(out *sseOut, enc streamEncoder, sr *router.StreamResult, p *[]byte, err error) {
	b := *p
	if err != io.EOF {
		c.streamFailed(out, enc, &b, err)
		putBytes(p, b)
		return
	}
	// The end waits in the response's buffer: the handler returns at
	// once, and net/http sends it with the chunked terminator in one
	// write.
	b = enc.end(b)
	werr := out.write(b, true)
	putBytes(p, b)
	if werr != nil {
		c.outcome = OutcomeCanceled
		return
	}
	c.outcome = outcome(sr.Attempts, sr.Target)
	c.s.metrics.observeRecovery(sr.Attempts, sr.Target, enc.usage())
	c.hv.set(c.w.Header(), "X-Detour-Cost", costText(sr.Attempts)) // a trailer
}

// endStream notes a client that stopped reading, and sets who answered as
// trailers when the headers went out before the answer was known, or, when
// the answer ended more degraded than its headers said (its target's
// stream left out an unreadable event mid-answer), x-detour-degraded and
// x-detour-dropped as trailers.
//
//go:noinline
func (c *call) endStream(out *sseOut, sr *router.StreamResult) {
	if out.clientStalled() {
		c.clientStalled(sr.Stream)
	}
	out.mu.Lock()
	if out.early {
		c.whoHeaders(c.w.Header(), sr.Result, c.sends) // as trailers
	} else if res := sr.Result; res.Degraded != c.degraded || len(res.Dropped) != len(c.dropped) {
		h := c.w.Header()
		c.hv.set(h, http.TrailerPrefix+"X-Detour-Degraded", strconv.FormatBool(res.Degraded))
		c.hv.set(h, http.TrailerPrefix+"X-Detour-Dropped", strings.Join(res.Dropped, ", "))
		c.degraded, c.dropped = res.Degraded, res.Dropped
	}
	out.mu.Unlock()
}

// writeTimeout returns the limit of one streamed write
// (gateway.write_timeout).
func (s *Server) writeTimeout() time.Duration {
	v := s.v()
	if v.gw.WriteTimeout > 0 {
		return v.gw.WriteTimeout
	}
	return config.DefaultWriteTimeout
}

// clientStalled ends a stream whose client stopped reading: the upstream
// is cancelled at once, and the attempt is recorded client_stalled, not
// the target's fault.
func (c *call) clientStalled(st llm.Stream) {
	wt := c.s.writeTimeout()
	c.outcome, c.errText = OutcomeCanceled, fmt.Sprintf("the client stopped reading for %s (gateway.write_timeout)", wt)
	if a, ok := st.(llm.Aborter); ok {
		a.Abort(fmt.Errorf("%w for %s (gateway.write_timeout)", llm.ErrClientStalled, wt)) //nolint:errcheck // closing
	}
}

// streamFailed ends a stream whose upstream failed after its first output:
// an explicit error event, unless the client itself went away.
func (c *call) streamFailed(out *sseOut, enc streamEncoder, b *[]byte, err error) {
	s := c.s
	if c.r.Context().Err() != nil && s.hard.Err() == nil {
		c.outcome, c.errText = OutcomeCanceled, "the client went away"
		return
	}
	e := s.streamError(err)
	if s.hard.Err() != nil {
		e = &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down",
			Message: "detour: the gateway is shutting down; the answer is incomplete"}
	}
	c.errStatus, c.outcome, c.errText = e.Status, OutcomeInterrupted, e.Message
	*b = enc.fail((*b)[:0], e)
	out.write(*b, false) //nolint:errcheck // the client may be gone
}
