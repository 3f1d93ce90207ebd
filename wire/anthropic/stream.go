package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/sse"
	"github.com/detourhq/detour/wire/exchange"
)

// ErrStreamClosed is wrapped by the error Next returns after Close, unless
// the stream had already ended. It is exchange.ErrStreamClosed, the same
// error for every dialect.
var ErrStreamClosed = exchange.ErrStreamClosed

// streamEvent is the data of one Messages stream event; which fields are
// set depends on its type.
type streamEvent struct {
	Type         string          `json:"type"`
	Message      *message        `json:"message"`       // message_start
	Index        *int            `json:"index"`         // content_block_*
	ContentBlock *contentBlock   `json:"content_block"` // content_block_start
	Delta        *eventDelta     `json:"delta"`         // content_block_delta, message_delta
	Usage        *usage          `json:"usage"`         // message_delta
	Error        json.RawMessage `json:"error"`         // error
}

// eventDelta is the delta of a content_block_delta (text_delta,
// input_json_delta, thinking_delta, ...) or of a message_delta (stop_reason).
type eventDelta struct {
	Type        string       `json:"type"`
	Text        string       `json:"text"`
	PartialJSON string       `json:"partial_json"`
	StopReason  string       `json:"stop_reason"`
	StopDetails *stopDetails `json:"stop_details"`
}

// blockKind is what the stream does with a content block.
type blockKind int

const (
	blockIgnored blockKind = iota // thinking, server tools, unknown types
	blockText
	blockTool
)

// blockState is one content block of the stream.
type blockState struct {
	kind blockKind
	// tool is the ordinal of a tool_use block among the message's tool_use
	// blocks: the Index of its ToolCallDeltas.
	tool int
	// args is set once an argument fragment was sent.
	args bool
}

// DecodeStream reads a streamed Messages API response.
//
// A non-2xx status reads at most MaxErrorBody of the body, closes it and
// returns ParseError's *llm.ProviderError. A 2xx JSON body (a server that
// ignored "stream": true) is decoded as DecodeResponse does and served as
// a one-chunk stream, or returned as its error. Otherwise the returned
// stream owns the body and reads it as server-sent events, by the data's
// "type" (the `event:` name when the data has none):
//
//   - message_start: a chunk with the id, the model and Role assistant; its
//     usage is kept. Every later chunk carries the same id and model;
//   - content_block_start: a text block's initial text, if any, as Content;
//     a tool_use block as a ToolCallDelta with its id and name, whose Index
//     is the block's ordinal among the tool_use blocks (0 for the first
//     tool call, whatever the content block index);
//   - content_block_delta: text_delta as Content; input_json_delta of a
//     tool_use block as ToolCallDelta.Arguments (empty fragments are
//     skipped); thinking, signature, citations deltas and the input of
//     server tools are ignored;
//   - content_block_stop: for a tool_use block that sent no argument
//     fragment, one ToolCallDelta with Arguments "{}" (a call without
//     parameters), else nothing;
//   - message_delta: a chunk with the stop_reason as FinishReason (mapped
//     as DecodeResponse does; refusal is content_filter) and the Usage so
//     far: message_start's counts updated by the event's own, input
//     counting cache tokens;
//   - message_stop: the end. Next returns io.EOF from then on;
//   - ping and unknown event types are skipped;
//   - error (`event: error`, or data of type "error") returns
//     ParseStreamError's *llm.ProviderError (status 200, phase stream,
//     Type from error.type, e.g. overloaded_error);
//   - the end of the body, or a read error, before message_stop returns an
//     error wrapping both llm.ErrStreamTruncated and the read error
//     (io.ErrUnexpectedEOF for a clean end, never io.EOF), even after a
//     message_delta: the API always ends with message_stop;
//   - a whole event whose data is not JSON, right after one that is, is
//     left out (never message_stop, the end): the stream reads on and counts it (Skipped, llm.Skipper),
//     and the answer lacks what it carried. One with no event read before
//     it, or right after one left out (the output stopped being
//     readable), or an event past sse.DefaultMaxEventSize, returns an
//     error wrapping ErrMalformed and a ProviderError (or the truncation
//     error when the bad event is the cut-off end of the body).
//
// Once Next returns an error it returns the same error on every later
// call. Close closes the body and may be called more than once, and from
// another goroutine to abort a blocked Next; Next is not safe for
// concurrent use. Cancelling the request's context aborts a blocked Next.
func DecodeStream(resp *http.Response) (llm.Stream, error) {
	return decoder.DecodeStream(resp, "")
}

// stream decodes the events of an SSE body; the embedded exchange.Stream
// makes it an llm.Stream (see exchange.Stream.Init for why by value).
type stream struct {
	exchange.Stream
	r      sse.Reader
	header http.Header

	id, model   string
	usage       tally
	blocks      map[int]*blockState // by content block index
	tools       int                 // tool_use blocks so far
	stopReason  string
	stopDetails *stopDetails
	// scratch backs the pointers of the events parseEventFast decodes.
	scratch eventScratch
	// endBuffered is set once Ready saw the end of the message buffered.
	endBuffered bool
	// raw is set for a request sent raw: every event but ping comes as a
	// chunk that keeps its data and name.
	raw bool
}

// newStream returns the stream of body; key, when set, is redacted from
// its errors.
func newStream(body io.ReadCloser, header http.Header, key string) *stream {
	s := &stream{header: header, blocks: map[int]*blockState{}}
	s.r.Init(body)
	s.Init(dialect, body, key, s)
	s.OnEnd = s.r.Release
	return s
}

// Ready reports whether the next chunk (or the end) is already buffered,
// so that Next returns without reading the body; see llm.Readier. Events
// that make no chunk (ping, ...) are skipped, so a buffered event says
// little; the end of the message (message_stop, or an error event)
// buffered says Next cannot wait. That is the case that matters: an
// upstream that sent a short answer at once.
func (s *stream) Ready() bool {
	if !s.endBuffered { // once buffered, the end stays so until Next reaches it
		s.endBuffered = s.r.HoldsEvent("message_stop", "error")
	}
	return s.endBuffered
}

// NextChunk decodes the next chunk for the embedded Stream; see DecodeStream.
// For a request sent raw the chunk borrows the reader's buffer (see
// llm.Chunk): its Raw, Content and tool call fragments hold until the next
// call, and a long stream makes no garbage per event; what the stream
// keeps across events (id, model, stop reason) is copied.
func (s *stream) NextChunk() (llm.Chunk, error) {
	for {
		ev, err := s.r.NextView()
		if err != nil {
			return llm.Chunk{}, s.endError(err)
		}
		var data string
		if s.raw {
			data = exchange.Borrow(bytes.TrimSpace(ev.Data))
		} else {
			data = string(bytes.TrimSpace(ev.Data))
		}
		if ev.Event == "error" {
			return llm.Chunk{}, s.frameError([]byte(data))
		}
		if data == "" {
			continue
		}
		var e streamEvent
		if !parseEventFast(data, &e, &s.scratch) {
			e, err = decodeEvent(data)
		}
		if err != nil {
			if s.r.Incomplete() {
				return llm.Chunk{}, s.endError(io.ErrUnexpectedEOF)
			}
			// The terminal event is never left out: a message_stop that
			// cannot be read does not end the answer as whole.
			if ev.Event != "message_stop" && s.Skip() {
				continue
			}
			return llm.Chunk{}, malformed(s.header, []byte(data), llm.PhaseStream, "stream event", err)
		}
		s.Parsed()
		typ := e.Type
		if typ == "" {
			typ = ev.Event
		}
		if typ == "error" {
			return llm.Chunk{}, s.frameError([]byte(data))
		}
		if typ == "message_stop" || ev.Event == "message_stop" {
			return llm.Chunk{}, io.EOF // by either name: Ready counts on the event's
		}
		c, ok := s.apply(typ, &e)
		if s.raw && typ != "ping" {
			c.Raw, c.Event, ok = data, eventName(typ), true
		}
		if ok {
			c.ID, c.Model = s.id, s.model
			return c, nil
		}
	}
}

// decodeEvent decodes an event parseEventFast does not handle, through
// encoding/json, into an event of its own: next's event stays on the stack.
func decodeEvent(data string) (streamEvent, error) {
	e := new(streamEvent)
	err := json.Unmarshal([]byte(data), e)
	return *e, err
}

// apply reads one event into the stream's state; ok is false when the event
// makes no chunk.
func (s *stream) apply(typ string, e *streamEvent) (c llm.Chunk, ok bool) {
	switch typ {
	case "message_start":
		if e.Message == nil {
			return c, false
		}
		s.id, s.model = strings.Clone(e.Message.ID), strings.Clone(e.Message.Model)
		s.usage.add(e.Message.Usage)
		return llm.Chunk{Role: llm.RoleAssistant}, true
	case "content_block_start":
		if e.Index == nil || e.ContentBlock == nil {
			return c, false
		}
		b := &blockState{}
		s.blocks[*e.Index] = b
		switch cb := e.ContentBlock; cb.Type {
		case "text":
			b.kind = blockText
			return llm.Chunk{Content: cb.Text}, cb.Text != ""
		case "tool_use":
			b.kind, b.tool = blockTool, s.tools
			s.tools++
			d := llm.ToolCallDelta{Index: b.tool, ID: cb.ID, Name: cb.Name}
			if args := exchange.ArgsText(cb.Input); args != "{}" {
				d.Arguments, b.args = args, true
			}
			return llm.Chunk{ToolCalls: []llm.ToolCallDelta{d}}, true
		}
	case "content_block_delta":
		if e.Delta == nil {
			return c, false
		}
		var b *blockState
		if e.Index != nil {
			b = s.blocks[*e.Index]
		}
		switch e.Delta.Type {
		case "text_delta":
			if b != nil && b.kind != blockText {
				return c, false
			}
			return llm.Chunk{Content: e.Delta.Text}, e.Delta.Text != ""
		case "input_json_delta":
			if b == nil || b.kind != blockTool || e.Delta.PartialJSON == "" {
				return c, false
			}
			b.args = true
			return llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: b.tool, Arguments: e.Delta.PartialJSON}}}, true
		}
	case "content_block_stop":
		if e.Index == nil {
			return c, false
		}
		if b := s.blocks[*e.Index]; b != nil && b.kind == blockTool && !b.args {
			b.args = true
			return llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: b.tool, Arguments: "{}"}}}, true
		}
	case "message_delta":
		s.usage.add(e.Usage)
		if e.Delta != nil && e.Delta.StopReason != "" {
			s.stopReason, s.stopDetails = strings.Clone(e.Delta.StopReason), e.Delta.StopDetails.clone()
			c.FinishReason = finishReason(s.stopReason)
		}
		c.Usage = s.usage.canonical()
		return c, c.FinishReason != "" || c.Usage != nil
	}
	return c, false
}

// eventName returns typ as a string of its own: the constant of a known
// event type, else a copy (a raw chunk's Event is not borrowed).
func eventName(typ string) string {
	for _, n := range [...]string{"content_block_delta", "message_start", "content_block_start",
		"content_block_stop", "message_delta", "message_stop", "ping", "error"} {
		if typ == n {
			return n
		}
	}
	return strings.Clone(typ)
}

// endError turns the end of the event stream into the malformed error (an
// event past the size limit) or the truncation error.
func (s *stream) endError(err error) error {
	if errors.Is(err, sse.ErrTooLong) && !s.Closed() {
		return malformed(s.header, nil, llm.PhaseStream, "stream", err)
	}
	return s.Truncated(err)
}

// frameError reads an error event: ParseStreamError's error, or a
// ProviderError with status 200, phase stream and the data as its body.
func (s *stream) frameError(data []byte) error {
	pe, ok := ParseStreamError(data)
	if !ok {
		pe = &llm.ProviderError{Dialect: dialect, Status: http.StatusOK, Body: exchange.KeepBody(data), Phase: llm.PhaseStream}
		if !json.Valid(data) {
			pe.Message = exchange.ErrorText(data)
		}
		if pe.Message == "" {
			pe.Message = "error event in stream"
		}
	}
	pe.Header = s.header
	return pe
}
