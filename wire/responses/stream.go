package responses

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

// event is the data of one Responses stream event; which fields are set
// depends on its type.
type event struct {
	Type        string          `json:"type"`
	Response    *response       `json:"response"`     // response.created, .completed, .incomplete, .failed
	OutputIndex *int            `json:"output_index"` // output_item.*, output_text.*, function_call_arguments.*
	Item        *outputItem     `json:"item"`         // output_item.added, .done
	Delta       string          `json:"delta"`        // output_text.delta, refusal.delta, function_call_arguments.delta
	Text        string          `json:"text"`         // output_text.done
	Refusal     string          `json:"refusal"`      // refusal.done
	Arguments   *string         `json:"arguments"`    // function_call_arguments.done
	Code        json.RawMessage `json:"code"`         // error
	Message     string          `json:"message"`      // error
	Error       json.RawMessage `json:"error"`        // error (wrapped form)
}

// itemState is what the stream knows of one output item, by output_index.
type itemState struct {
	call bool
	// tool is the ordinal of a function_call item among the response's
	// function calls: the Index of its ToolCallDeltas.
	tool int
	// sent is set once text (a message) or an arguments fragment (a call)
	// of the item was passed on: its .done events then add nothing.
	sent bool
}

// DecodeStream reads a streamed Responses API response.
//
// A non-2xx status reads at most MaxErrorBody of the body, closes it and
// returns ParseError's *llm.ProviderError. A 2xx JSON body (a server that
// ignored "stream": true) is decoded as DecodeResponse does and served as
// a one-chunk stream, or returned as its error. Otherwise the returned
// stream owns the body and reads it as server-sent events, by the data's
// "type" (the `event:` name when the data has none):
//
//   - response.created: a chunk with the response's id, the model and
//     Role assistant. Every later chunk carries the same id and model;
//   - response.output_item.added of a function_call: a ToolCallDelta with
//     its call_id and name, whose Index is the call's ordinal among the
//     response's function calls, and its arguments when it came with
//     some; of a message, reasoning or another item: nothing;
//   - response.output_text.delta and response.refusal.delta: Content;
//   - response.function_call_arguments.delta: ToolCallDelta.Arguments;
//   - response.output_text.done, response.function_call_arguments.done and
//     response.output_item.done: the whole text or arguments, when no
//     delta of that item came before (a server that sends only the ends),
//     else nothing;
//   - response.completed: a chunk with the FinishReason (tool_calls when a
//     function was called, else stop) and the Usage, cached and reasoning
//     tokens included; response.incomplete: the same with FinishReason
//     length at max_output_tokens (an answer cut at its cap, not a
//     failure) or content_filter when the filter stopped it. Either is the
//     end: Next returns io.EOF from then on;
//   - response.failed returns ParseStreamError's *llm.ProviderError
//     (status 200, phase stream, Code from response.error.code, e.g.
//     server_error, rate_limit_exceeded, invalid_prompt, bio_policy);
//   - error (`event: error`, or data of type "error") returns the same;
//   - reasoning events (summaries, reasoning text), built-in tool events,
//     response.in_progress, keep-alives and unknown types are skipped; so
//     is `data: [DONE]` after the end. A [DONE] before it is a truncation;
//   - the end of the body, or a read error, before response.completed or
//     response.incomplete returns an error wrapping both
//     llm.ErrStreamTruncated and the read error (io.ErrUnexpectedEOF for a
//     clean end, never io.EOF);
//   - a whole event whose data is not JSON, right after one that is, is
//     left out (never the terminal event): the stream reads on and counts
//     it (Skipped, llm.Skipper). One with no event read before it, or right
//     after one left out, or an event past sse.DefaultMaxEventSize, returns
//     an error wrapping ErrMalformed and a ProviderError (or the
//     truncation error when the bad event is the cut-off end of the body).
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

	id, model string
	items     map[int]*itemState // by output_index
	tools     int                // function_call items so far
	// ended is set once the terminal event was passed on.
	ended bool
	// last is the data of the terminal event, for the error of a refusal.
	last []byte
	// endBuffered is set once Ready saw the end of the response buffered.
	endBuffered bool
	// raw is set for a request sent raw: every event comes as a chunk that
	// keeps its data and type.
	raw bool
}

// newStream returns the stream of body; key, when set, is redacted from
// its errors.
func newStream(body io.ReadCloser, header http.Header, key string) *stream {
	s := &stream{header: header, items: map[int]*itemState{}}
	s.r.Init(body)
	s.Init(Dialect, body, key, s)
	s.OnEnd = s.r.Release
	return s
}

// terminal are the events that end a response, well or not.
var terminal = []string{"response.completed", "response.incomplete", "response.failed", "error"}

// Ready reports whether the next chunk (or the end) is already buffered,
// so that Next returns without reading the body; see llm.Readier. Most
// events make no chunk; the end of the response buffered says Next cannot
// wait.
func (s *stream) Ready() bool {
	if s.ended {
		return true
	}
	if !s.endBuffered {
		s.endBuffered = s.r.HoldsEvent(terminal...)
	}
	return s.endBuffered
}

// NextChunk decodes the next chunk for the embedded Stream; see
// DecodeStream. For a request sent raw the chunk borrows the reader's
// buffer (see llm.Chunk): its Raw, Content and tool call fragments hold
// until the next call; what the stream keeps across events (id, model) is
// copied.
func (s *stream) NextChunk() (llm.Chunk, error) {
	if s.ended {
		return llm.Chunk{}, io.EOF
	}
	for {
		ev, err := s.r.NextView()
		if err != nil {
			return llm.Chunk{}, s.endError(err)
		}
		raw := bytes.TrimSpace(ev.Data)
		if len(raw) == 0 {
			continue
		}
		if string(raw) == "[DONE]" {
			// Some copies of the API end with it; before the terminal
			// event it ends nothing whole.
			return llm.Chunk{}, s.Truncated(errors.New("[DONE] before the response's end"))
		}
		var data string
		if s.raw {
			data = exchange.Borrow(raw)
		} else {
			data = string(raw)
		}
		var e event
		if err := json.Unmarshal(raw, &e); err != nil {
			if s.r.Incomplete() {
				return llm.Chunk{}, s.endError(io.ErrUnexpectedEOF)
			}
			if !isTerminal(ev.Event) && s.Skip() {
				continue
			}
			if ev.Event == "error" {
				return llm.Chunk{}, s.frameError(raw)
			}
			return llm.Chunk{}, malformed(s.header, bytes.Clone(raw), llm.PhaseStream, "stream event", err)
		}
		s.Parsed()
		typ := e.Type
		if typ == "" {
			typ = ev.Event
		}
		switch typ {
		case "error", "response.failed":
			return llm.Chunk{}, s.frameError(raw)
		}
		c, ok, err := s.apply(typ, &e, raw)
		if err != nil {
			return llm.Chunk{}, err
		}
		if s.raw {
			c.Raw, c.Event, ok = data, eventName(typ), true
		}
		if ok {
			c.ID, c.Model = s.id, s.model
			return c, nil
		}
	}
}

// isTerminal reports whether an event of that name ends the response.
func isTerminal(name string) bool {
	for _, t := range terminal {
		if name == t {
			return true
		}
	}
	return false
}

// item returns the state of the output item at index, made when new.
func (s *stream) item(index *int) *itemState {
	i := -1
	if index != nil {
		i = *index
	}
	it := s.items[i]
	if it == nil {
		it = &itemState{}
		s.items[i] = it
	}
	return it
}

// call returns the state of the function_call item at index, made a call
// (with the next tool ordinal) when it was not one yet.
func (s *stream) call(index *int) *itemState {
	it := s.item(index)
	if !it.call {
		it.call, it.tool = true, s.tools
		s.tools++
	}
	return it
}

// apply reads one event into the stream's state; ok is false when the
// event makes no chunk.
func (s *stream) apply(typ string, e *event, raw []byte) (c llm.Chunk, ok bool, err error) {
	switch typ {
	case "response.created":
		if e.Response != nil {
			s.id, s.model = strings.Clone(e.Response.ID), strings.Clone(e.Response.Model)
		}
		return llm.Chunk{Role: llm.RoleAssistant}, true, nil
	case "response.output_item.added":
		if e.Item == nil || e.Item.Type != "function_call" {
			return c, false, nil
		}
		it := s.call(e.OutputIndex)
		d := llm.ToolCallDelta{Index: it.tool, ID: e.Item.CallID, Name: e.Item.Name}
		if e.Item.Arguments != "" {
			d.Arguments, it.sent = e.Item.Arguments, true
		}
		return llm.Chunk{ToolCalls: []llm.ToolCallDelta{d}}, true, nil
	case "response.output_text.delta", "response.refusal.delta":
		if e.Delta == "" {
			return c, false, nil
		}
		s.item(e.OutputIndex).sent = true
		return llm.Chunk{Content: e.Delta}, true, nil
	case "response.output_text.done", "response.refusal.done":
		it := s.item(e.OutputIndex)
		text := e.Text
		if typ == "response.refusal.done" {
			text = e.Refusal
		}
		if it.sent || text == "" {
			return c, false, nil
		}
		it.sent = true
		return llm.Chunk{Content: text}, true, nil
	case "response.function_call_arguments.delta":
		if e.Delta == "" {
			return c, false, nil
		}
		it := s.call(e.OutputIndex)
		it.sent = true
		return llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: it.tool, Arguments: e.Delta}}}, true, nil
	case "response.function_call_arguments.done":
		it := s.call(e.OutputIndex)
		if it.sent || e.Arguments == nil {
			return c, false, nil
		}
		it.sent = true
		return llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: it.tool, Arguments: orEmptyObject(*e.Arguments)}}}, true, nil
	case "response.output_item.done":
		return s.itemDone(e)
	case "response.completed", "response.incomplete":
		s.ended = true
		s.last = bytes.Clone(raw)
		c.FinishReason = llm.FinishStop
		var calls bool
		for _, it := range s.items {
			calls = calls || it.call
		}
		if r := e.Response; r != nil {
			if s.id == "" {
				s.id = strings.Clone(r.ID)
			}
			if s.model == "" {
				s.model = strings.Clone(r.Model)
			}
			for i := range r.Output {
				calls = calls || r.Output[i].Type == "function_call"
			}
			status := r.Status
			if status == "" && typ == "response.incomplete" {
				status = "incomplete"
			}
			c.FinishReason = finishOf(status, r.IncompleteDetails, calls)
			c.Usage = r.Usage.canonical()
		} else if typ == "response.incomplete" {
			c.FinishReason = llm.FinishLength
		} else if calls {
			c.FinishReason = llm.FinishToolCalls
		}
		return c, true, nil
	}
	return c, false, nil
}

// itemDone reads response.output_item.done: the whole text or arguments
// of an item none of whose deltas came.
func (s *stream) itemDone(e *event) (c llm.Chunk, ok bool, err error) {
	if e.Item == nil {
		return c, false, nil
	}
	switch e.Item.Type {
	case "function_call":
		it := s.item(e.OutputIndex)
		if !it.call {
			// No output_item.added came for it: the whole call now.
			it = s.call(e.OutputIndex)
			it.sent = true
			return llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: it.tool, ID: e.Item.CallID, Name: e.Item.Name,
				Arguments: orEmptyObject(e.Item.Arguments)}}}, true, nil
		}
		if it.sent {
			return c, false, nil
		}
		it.sent = true
		return llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: it.tool, Arguments: orEmptyObject(e.Item.Arguments)}}}, true, nil
	case "message":
		it := s.item(e.OutputIndex)
		if it.sent {
			return c, false, nil
		}
		var text strings.Builder
		for i := range e.Item.Content {
			text.WriteString(e.Item.Content[i].text())
		}
		it.sent = true
		return llm.Chunk{Content: text.String()}, text.Len() > 0, nil
	}
	return c, false, nil
}

// orEmptyObject is args, or "{}" for a call without arguments.
func orEmptyObject(args string) string {
	if args == "" {
		return "{}"
	}
	return args
}

// eventNames are the event types a raw chunk names by a constant: the
// common ones, so that a raw chunk's Event is not a copy per event.
var eventNames = [...]string{"response.output_text.delta", "response.function_call_arguments.delta",
	"response.created", "response.in_progress", "response.output_item.added", "response.output_item.done",
	"response.content_part.added", "response.content_part.done", "response.output_text.done",
	"response.function_call_arguments.done", "response.completed", "response.incomplete",
	"response.reasoning_summary_text.delta", "response.reasoning_summary_part.added",
	"response.reasoning_summary_part.done", "response.reasoning_summary_text.done",
	"response.refusal.delta", "response.refusal.done"}

// eventName returns typ as a string of its own: the constant of a known
// event type, else a copy (a raw chunk's Event is not borrowed).
func eventName(typ string) string {
	for _, n := range eventNames {
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

// frameError reads an error or response.failed event: ParseStreamError's
// error, or a ProviderError with status 200, phase stream and the data as
// its body.
func (s *stream) frameError(data []byte) error {
	pe, ok := ParseStreamError(data)
	if !ok {
		pe = &llm.ProviderError{Dialect: Dialect, Status: http.StatusOK, Body: exchange.KeepBody(bytes.TrimSpace(data)), Phase: llm.PhaseStream}
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
