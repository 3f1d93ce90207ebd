package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
)

// ErrInvalidEventName is returned by Writer.WriteEvent for an event name
// that holds a line break, which would split the event's framing.
var ErrInvalidEventName = errors.New("sse: event name contains a line break")

// Writer writes server-sent events. Every event, comment included, is
// written with one Write call, ends with a blank line and is then flushed,
// so each reaches the client at once and no decoder ever holds an
// unterminated event.
//
// Flushing: when the destination is an http.ResponseWriter the Writer
// flushes through http.ResponseController (which finds a Flusher behind
// wrappers that have an Unwrap method); otherwise it calls the
// destination's Flush() error or http.Flusher's Flush(), when it has one.
//
// After a write or flush fails, every later call returns that error. A
// Writer is not safe for concurrent use.
type Writer struct {
	w     io.Writer
	flush func() error
	buf   []byte
	err   error
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer {
	sw := &Writer{w: w}
	switch f := w.(type) {
	case http.ResponseWriter:
		rc := http.NewResponseController(f)
		sw.flush = func() error {
			if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return err
			}
			return nil
		}
	case interface{ Flush() error }:
		sw.flush = f.Flush
	case http.Flusher:
		sw.flush = func() error { f.Flush(); return nil }
	}
	return sw
}

// WriteEvent writes one event: an `event:` line when event is not empty,
// one `data:` line for each line of data (data split at "\n", "\r\n" and
// "\r"; empty data gives one empty `data:` line, so the event is still
// dispatched), and a blank line. Then it flushes.
func (w *Writer) WriteEvent(event, data string) error {
	if w.err != nil {
		return w.err
	}
	if strings.ContainsAny(event, "\r\n") {
		return ErrInvalidEventName
	}
	b := w.buf[:0]
	if event != "" {
		b = append(b, "event: "...)
		b = append(b, event...)
		b = append(b, '\n')
	}
	b = appendLines(b, "data:", data)
	b = append(b, '\n')
	return w.send(b)
}

// WriteData writes one event without a name whose data is p: the fast path
// for a JSON chunk, written as "data: " + p + "\n\n" when p holds no line
// break, and split into one `data:` line per line otherwise. Then it
// flushes.
func (w *Writer) WriteData(p []byte) error {
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	if bytes.IndexByte(p, '\n') < 0 && bytes.IndexByte(p, '\r') < 0 {
		b = append(b, "data: "...)
		b = append(b, p...)
		b = append(b, '\n', '\n')
	} else {
		b = appendLines(b, "data:", string(p))
		b = append(b, '\n')
	}
	return w.send(b)
}

// WriteComment writes a comment, one `:` line per line of text, and a blank
// line, then flushes. Every decoder ignores comments, so WriteComment("ping")
// (": ping\n\n") is the keep-alive to send during long silences.
func (w *Writer) WriteComment(text string) error {
	if w.err != nil {
		return w.err
	}
	b := appendLines(w.buf[:0], ":", text)
	b = append(b, '\n')
	return w.send(b)
}

// Flush flushes the destination, when it can be flushed.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.flush != nil {
		w.err = w.flush()
	}
	return w.err
}

// send writes b in one call and flushes.
func (w *Writer) send(b []byte) error {
	if cap(b) <= 64<<10 {
		w.buf = b[:0] // keep a modest buffer for the next event
	}
	if _, err := w.w.Write(b); err != nil {
		w.err = err
		return err
	}
	return w.Flush()
}

// appendLines appends, for each line of text, prefix + " " + line + "\n"
// (prefix alone for an empty line). Lines end at "\n", "\r\n" or "\r".
func appendLines(b []byte, prefix, text string) []byte {
	for {
		i := strings.IndexAny(text, "\r\n")
		line := text
		if i >= 0 {
			line = text[:i]
		}
		b = append(b, prefix...)
		if line != "" {
			b = append(b, ' ')
			b = append(b, line...)
		}
		b = append(b, '\n')
		if i < 0 {
			return b
		}
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
}
