package simulate

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/detourhq/detour/clock"
)

// answer writes a 200 answer in the provider's dialect, streamed or not,
// ending as e says; a LateFirstToken fault opens its stream at once.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, t *target, req *chatReq, seq uint64, ec errCtx, e end) {
	a := newAnswer(t, req, seq, clock.Or(s.Clock).Now().Unix(), e == endFiltered, ec.f.Pieces)
	var wa wireAnswer
	switch t.Dialect.or() {
	case DialectAnthropic:
		wa = a.anthropicWire(ec, req.stream)
	case DialectGemini:
		wa = a.geminiWire(req.stream)
	case DialectResponses:
		wa = a.responsesWire(ec, req.stream)
	default:
		wa = a.openaiWire(ec, req.stream)
	}
	applyHeader(w.Header(), wa.header)
	if req.stream {
		s.stream(ctx, w, t, &wa, ec, e)
		return
	}
	s.whole(ctx, w, t, len(a.pieces()), &wa, ec, e)
}

// whole writes a non-streamed answer whose stream would have had n content
// chunks, after the wait those chunks would have taken.
func (s *Server) whole(ctx context.Context, w http.ResponseWriter, t *target, n int, wa *wireAnswer, ec errCtx, e end) {
	lat := t.Latency
	wait := s.scale(lat.FirstToken + lat.PerChunk*time.Duration(n))
	if ec.f.Gap > 0 {
		wait = s.scale(lat.FirstToken) + ec.f.Gap*time.Duration(n)
	}
	if !s.sleep(ctx, wait, false) {
		return
	}
	h := w.Header()
	h.Set("Content-Type", wa.bodyType)
	if d := t.Dialect.or(); d == DialectOpenAI || d == DialectResponses {
		h.Set("Openai-Processing-Ms", strconv.FormatInt(wait.Milliseconds(), 10))
	}
	applyHeader(h, ec.f.Header)
	body := wa.body
	switch e {
	case endCut, endStall:
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body[:len(body)/2]) //nolint:errcheck // the cut follows
		flush(w)
		if e == endStall {
			<-ctx.Done()
		}
		abortConn(w, false)
		return
	case endMalformed:
		body = body[:len(body)/2]
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.Write(body) //nolint:errcheck // nothing to do for a gone client
}

// stream writes a streamed answer: the headers, the head events (the first
// Fault.Chunks of them when e stops there) and the end e says.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, t *target, wa *wireAnswer, ec errCtx, e end) {
	lat := t.Latency
	late := ec.f.Kind == LateFirstToken
	first := lat.FirstToken
	if late {
		first = 0
	}
	if !s.sleep(ctx, first, true) {
		return
	}
	h := w.Header()
	applyHeader(h, wa.streamHeader)
	if d := t.Dialect.or(); d == DialectOpenAI || d == DialectResponses {
		h.Set("Openai-Processing-Ms", strconv.FormatInt(s.scale(first).Milliseconds(), 10))
	}
	applyHeader(h, ec.f.Header)
	w.WriteHeader(http.StatusOK)
	if !flush(w) {
		return
	}

	gap := s.scale(lat.PerChunk)
	if ec.f.Gap > 0 {
		gap = ec.f.Gap
	}
	hold := -1 // the event that waits Delay: a LateFirstToken's first content
	if late {
		hold = wa.preamble
	}
	sent := 0
	send := func(frame []byte) bool {
		var wait time.Duration
		switch {
		case sent == hold:
			wait = ec.f.Delay
		case sent > hold && sent > 0:
			wait = gap
		}
		if (sent > 0 || wait > 0) && !s.sleep(ctx, wait, false) {
			return false
		}
		sent++
		return writeFrame(w, frame)
	}

	n := len(wa.head)
	if e.headOnly() || e == endGarbledOnce {
		n = min(max(ec.f.Chunks, 0), n)
	}
	for _, ev := range wa.head[:n] {
		if !send(ev) {
			return
		}
	}
	if e == endGarbledOnce {
		if g := wa.garbledAfter(n); g != nil && !send(g) {
			return
		}
		for _, ev := range wa.head[n:] {
			if !send(ev) {
				return
			}
		}
	}
	switch e {
	case endCut:
		abortConn(w, false)
		return
	case endStall:
		<-ctx.Done()
		abortConn(w, false) // whatever ended the wait, the stream does not end cleanly
		return
	case endMalformed:
		if g := wa.garbledAfter(n); g != nil {
			send(g)
		}
		return
	case endErrorFrame:
		data := wa.defaultErrorData
		if ec.f.Body != "" {
			data = []byte(ec.f.Body)
		}
		send(wa.errorFrame(data))
		return
	}
	tail := wa.tail
	if e == endNoDone && wa.stopLast {
		tail = tail[:len(tail)-1]
	}
	for _, ev := range tail {
		if !send(ev) {
			return
		}
	}
	if wa.done != nil && e != endNoDone {
		writeFrame(w, wa.done)
	}
}

// garbledAfter returns the malformed stand-in of the first content event
// not among the n sent (of the last content event when all were sent), or
// nil for an answer without content.
func (wa *wireAnswer) garbledAfter(n int) []byte {
	for _, g := range wa.garbled {
		if g.at >= n {
			return g.frame
		}
	}
	if len(wa.garbled) == 0 {
		return nil
	}
	return wa.garbled[len(wa.garbled)-1].frame
}

// textKeys are where the text of a content event starts, in each dialect's
// layout: OpenAI's content and arguments, Anthropic's text and partial_json,
// Gemini's text (with the printer's space), the Responses API's delta.
var textKeys = []string{`"content":"`, `"arguments":"`, `"text":"`, `"partial_json":"`, `"text": "`, `"delta":"`}

// cutShort cuts the JSON data of a content event inside its text, after at
// most three characters of it (`..."content":"Hel`), or in half when it has
// no text: a chunk garbled on the way, never valid JSON.
func cutShort(data []byte) []byte {
	for _, key := range textKeys {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			continue
		}
		j := i + len(key)
		for k := 0; k < 3 && j < len(data) && data[j] != '"' && data[j] != '\\'; k++ {
			_, size := utf8.DecodeRune(data[j:])
			j += size
		}
		return bytes.Clone(data[:j])
	}
	return bytes.Clone(data[:len(data)/2])
}
