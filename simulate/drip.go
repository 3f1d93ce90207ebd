package simulate

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// The waits of the faults that keep an answer alive without finishing it,
// when Fault.Gap names none.
const (
	// DefaultTrickleGap is a Trickle's wait between two bytes: the 500 ms
	// of the one-byte trickle seen answered 120 s into a 60 s deadline.
	DefaultTrickleGap = 500 * time.Millisecond
	// DefaultEmptyGap is an EmptyDeltas' wait between two empty events.
	DefaultEmptyGap = time.Second
)

// drip serves an EmptyDeltas or a Trickle fault: the answer OK would get,
// written through a dripWriter.
func (s *Server) drip(ctx context.Context, w http.ResponseWriter, t *target, req *chatReq, seq uint64, ec errCtx) {
	d := &dripWriter{ResponseWriter: w, s: s, ctx: ctx, gap: ec.f.Gap, frames: max(ec.f.Chunks, 0)}
	if ec.f.Kind == Trickle || !req.stream {
		d.frames = -1
		if d.gap <= 0 {
			d.gap = DefaultTrickleGap
		}
	} else if d.gap <= 0 {
		d.gap = DefaultEmptyGap
	}
	s.answer(ctx, d, t, req, seq, ec, endNormal)
}

// dripWriter writes an answer as a Trickle (frames < 0: one byte, then
// a wait of gap, and so on) or as EmptyDeltas (the first frames writes,
// each one stream event, pass; at the next, that event with its text
// emptied is sent every gap until ctx ends, and the answer never goes on).
type dripWriter struct {
	http.ResponseWriter
	s      *Server
	ctx    context.Context
	gap    time.Duration
	frames int
	// started is set once a Trickle wrote its first byte.
	started bool
}

func (d *dripWriter) Write(p []byte) (int, error) {
	if d.frames < 0 {
		return d.trickle(p)
	}
	if d.frames > 0 {
		d.frames--
		return d.ResponseWriter.Write(p)
	}
	// The stream waited its gap before this event: the first empty one
	// goes at once.
	empty := emptied(p)
	for writeFrame(d.ResponseWriter, empty) {
		if !d.s.sleep(d.ctx, d.gap, false) {
			break
		}
	}
	return 0, io.ErrClosedPipe
}

// trickle writes p one byte at a time, gap apart.
func (d *dripWriter) trickle(p []byte) (int, error) {
	for i := range p {
		if d.started && !d.s.sleep(d.ctx, d.gap, false) {
			return i, io.ErrClosedPipe
		}
		d.started = true
		if _, err := d.ResponseWriter.Write(p[i : i+1]); err != nil {
			return i, err
		}
		if !flush(d.ResponseWriter) {
			return i, io.ErrClosedPipe
		}
	}
	return len(p), nil
}

// Flush sends what the writer under d holds.
func (d *dripWriter) Flush() { flush(d.ResponseWriter) }

// Unwrap returns the writer under d, for http.ResponseController.
func (d *dripWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// emptied returns frame, one stream event, with the text of its first
// text field emptied (`"content":"Hello"` becomes `"content":""`, the same
// for Anthropic's and Gemini's text): a delta that carries nothing. A frame
// without text comes back as it is.
func emptied(frame []byte) []byte {
	for _, key := range textKeys {
		i := bytes.Index(frame, []byte(key))
		if i < 0 {
			continue
		}
		start := i + len(key)
		end := start
		for end < len(frame) && frame[end] != '"' {
			if frame[end] == '\\' {
				end++
			}
			end++
		}
		return append(bytes.Clone(frame[:start]), frame[min(end, len(frame)):]...)
	}
	return bytes.Clone(frame)
}
