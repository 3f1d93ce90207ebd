package llm

import (
	"io"
	"testing"
	"unsafe"
)

// borrowing is a raw stream whose chunks borrow one buffer, written over
// by each Next, as a decoder reading events in place makes them.
type borrowing struct {
	buf    []byte
	events []string // each: tool call id and name, 8 bytes each, then arguments
}

func (s *borrowing) Next() (Chunk, error) {
	if len(s.events) == 0 {
		return Chunk{}, io.EOF
	}
	s.buf = append(s.buf[:0], s.events[0]...)
	s.events = s.events[1:]
	view := unsafe.String(unsafe.SliceData(s.buf), len(s.buf))
	d := ToolCallDelta{ID: view[:8], Name: view[8:16], Arguments: view[16:]}
	if d.ID == "________" { // a later fragment: arguments only
		d.ID, d.Name = "", ""
	}
	return Chunk{Raw: view, ToolCalls: []ToolCallDelta{d}}, nil
}

func (s *borrowing) Close() error { return nil }

// Assemble keeps what it takes from a raw stream's chunks (a tool call's
// id and name come once, in the first fragment): it copies them out of
// the buffer the next chunk writes over.
func TestAssemble_KeepsNothingBorrowed(t *testing.T) {
	s := &borrowing{buf: make([]byte, 0, 64), events: []string{"call_001get_time{\"tz\":", "________________\"UTC\"}"}}
	r, err := Assemble(s)
	if err != nil {
		t.Fatal(err)
	}
	tc := r.Message.ToolCalls
	if len(tc) != 1 || tc[0].ID != "call_001" || tc[0].Name != "get_time" || tc[0].Arguments != `{"tz":"UTC"}` {
		t.Fatalf("tool calls %+v: want call_001 get_time {\"tz\":\"UTC\"}", tc)
	}
}
