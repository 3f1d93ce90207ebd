package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"testing"
)

func TestWriter_Output(t *testing.T) {
	tests := []struct {
		name  string
		write func(w *Writer) error
		want  string
	}{
		{"event with name", func(w *Writer) error { return w.WriteEvent("message_start", `{"a":1}`) }, "event: message_start\ndata: {\"a\":1}\n\n"},
		{"event without name", func(w *Writer) error { return w.WriteEvent("", "x") }, "data: x\n\n"},
		{"empty data", func(w *Writer) error { return w.WriteEvent("ping", "") }, "event: ping\ndata:\n\n"},
		{"multi-line data", func(w *Writer) error { return w.WriteEvent("", "a\nb\r\nc\rd\n") }, "data: a\ndata: b\ndata: c\ndata: d\ndata:\n\n"},
		{"leading space kept", func(w *Writer) error { return w.WriteEvent("", " x") }, "data:  x\n\n"},
		{"data fast path", func(w *Writer) error { return w.WriteData([]byte(`{"choices":[]}`)) }, "data: {\"choices\":[]}\n\n"},
		{"data with newline", func(w *Writer) error { return w.WriteData([]byte("a\nb")) }, "data: a\ndata: b\n\n"},
		{"done", func(w *Writer) error { return w.WriteData([]byte("[DONE]")) }, "data: [DONE]\n\n"},
		{"comment", func(w *Writer) error { return w.WriteComment("ping") }, ": ping\n\n"},
		{"multi-line comment", func(w *Writer) error { return w.WriteComment("a\nb") }, ": a\n: b\n\n"},
		{"empty comment", func(w *Writer) error { return w.WriteComment("") }, ":\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(NewWriter(&buf)); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("wrote %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWriter_RejectsEventNameWithLineBreak(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, name := range []string{"a\nb", "a\r", "\n"} {
		if err := w.WriteEvent(name, "x"); !errors.Is(err, ErrInvalidEventName) {
			t.Errorf("WriteEvent(%q) err = %v, want ErrInvalidEventName", name, err)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %q for rejected events", buf.String())
	}
}

func TestWriter_FlushesResponseWriterAfterEachEvent(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewWriter(rec)
	if err := w.WriteData([]byte("{}")); err != nil {
		t.Fatal(err)
	}
	if !rec.Flushed {
		t.Error("ResponseRecorder not flushed after WriteData")
	}
}

type countingFlusher struct {
	bytes.Buffer
	flushes int
}

func (c *countingFlusher) Flush() { c.flushes++ }

func TestWriter_FlushesEveryEvent(t *testing.T) {
	var c countingFlusher
	w := NewWriter(&c)
	_ = w.WriteEvent("a", "1")
	_ = w.WriteData([]byte("2"))
	_ = w.WriteComment("ping")
	if c.flushes != 3 {
		t.Errorf("flushes = %d, want 3", c.flushes)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("broken pipe")
}

func TestWriter_ErrorSticks(t *testing.T) {
	f := &failWriter{}
	w := NewWriter(f)
	err1 := w.WriteData([]byte("x"))
	err2 := w.WriteComment("ping")
	if err1 == nil || err2 != err1 {
		t.Fatalf("errors = %v, %v; want the same write error twice", err1, err2)
	}
	if f.n != 1 {
		t.Errorf("writes after failure: %d, want 1 in all", f.n)
	}
}

func TestWriter_RoundTrip(t *testing.T) {
	events := []Event{
		{Event: "message_start", Data: `{"type":"message_start"}`},
		{Data: "line one\nline two\n\nline four"},
		{Data: ""},
		{Data: " leading and trailing "},
		{Event: "error", Data: `{"error":{"message":"boom"}}`},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, ev := range events {
		if err := w.WriteEvent(ev.Event, ev.Data); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteComment("ping"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readAll(t, NewReader(&buf))
	if err != io.EOF {
		t.Fatalf("final error = %v", err)
	}
	if len(got) != len(events) {
		t.Fatalf("read %d events, want %d", len(got), len(events))
	}
	for i := range events {
		if got[i] != events[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], events[i])
		}
	}
}
