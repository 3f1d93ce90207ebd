package anthropic

import (
	"io"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

const (
	startEvents = "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}` + "\n\n" +
		"event: content_block_start\n" +
		`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n"
	deltaEvent = "event: content_block_delta\n" +
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word "}}` + "\n\n"
	stopEvents = "event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"type":"message_delta","stop_reason":"weird_reason"},"usage":{"output_tokens":7}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
)

// A raw stream's chunks borrow the reader's buffer: Raw and Content hold
// until the next Next, and Clone keeps them; what a chunk keeps past that
// (ID, Model, Event, FinishReason) is its own, and so is what the stream
// keeps across events.
func TestStream_RawChunksBorrowOnlyWhatTheyMay(t *testing.T) {
	body := startEvents + deltaEvent + strings.Replace(deltaEvent, "word ", "other", 1) + stopEvents
	s := newStream(io.NopCloser(strings.NewReader(body)), nil, "")
	s.raw = true
	var chunks []struct{ id, model, event, finish string }
	var kept []string
	for {
		c, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, struct{ id, model, event, finish string }{c.ID, c.Model, c.Event, string(c.FinishReason)})
		kept = append(kept, c.Clone().Content)
	}
	// Every buffer read after the chunks came was written over by then:
	// what the chunks kept must still read as it came.
	if len(chunks) != 6 {
		t.Fatalf("%d chunks, want 6 (start, block start, two deltas, block stop, message delta)", len(chunks))
	}
	for i, c := range chunks {
		if c.id != "msg_01" || c.model != "claude-sonnet-4-5" {
			t.Errorf("chunk %d: id %q model %q after later events: they must not borrow", i, c.id, c.model)
		}
	}
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta"}
	for i, c := range chunks {
		if c.event != want[i] {
			t.Errorf("chunk %d: event %q, want %q", i, c.event, want[i])
		}
	}
	if last := chunks[len(chunks)-1]; last.finish != "weird_reason" {
		t.Errorf("finish reason %q, want weird_reason", last.finish)
	}
	if kept[2] != "word " || kept[3] != "other" {
		t.Errorf("cloned contents %q", kept)
	}
	if s.stopReason != "weird_reason" {
		t.Errorf("the stream kept stop reason %q", s.stopReason)
	}
}

// A raw stream, the gateway's same-dialect pass-through, makes no garbage
// per event: thousands of slow streams then cost no garbage collections.
func TestStream_RawMakesNoGarbagePerEvent(t *testing.T) {
	s := newStream(wiretest.Repeat(startEvents, deltaEvent), nil, "")
	s.raw = true
	for range 2 {
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	wiretest.NoGarbagePerEvent(t, s, "word ")
}

// A stream is one allocation, its map of content blocks and the hook that
// gives its buffer back: the stream, its exchange.Stream and its
// sse.Reader share their memory (see the OpenAI adapter's test).
func TestNewStream_IsOneAllocation(t *testing.T) {
	body := wiretest.Repeat(startEvents, deltaEvent)
	allocs := testing.AllocsPerRun(100, func() { newStream(body, nil, "") })
	if allocs > 3 {
		t.Errorf("%.0f allocations to open a stream, want 3 (the stream, its blocks, its OnEnd)", allocs)
	}
}

// A JSON answer's text borrows the body it was read from (the decoder's
// own); its id and model are copies.
func TestDecodeBody_IDAndModelOutliveTheBody(t *testing.T) {
	decode := func(b []byte) (*llm.Response, error) { return decodeBody(nil, b) }
	body := []byte(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
		`"content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	wiretest.IDAndModelOutliveTheBody(t, decode, body, "msg_01", "claude-sonnet-4-5")
}
