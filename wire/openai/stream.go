package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/sse"
	"github.com/detourhq/detour/wire/exchange"
)

// ErrStreamClosed is wrapped by the error Next returns after Close, unless
// the stream had already ended. It is exchange.ErrStreamClosed, the same
// error for every dialect.
var ErrStreamClosed = exchange.ErrStreamClosed

// chatChunk is a chat.completion.chunk object (or an error frame).
type chatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chatUsage    `json:"usage"`
	// XGroq carries Groq's usage on the last chunk when stream_options
	// is not honoured.
	XGroq *struct {
		Usage *chatUsage `json:"usage"`
	} `json:"x_groq"`
	Error json.RawMessage `json:"error"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Role         string          `json:"role"`
	Content      textContent     `json:"content"`
	Refusal      *string         `json:"refusal"`
	ToolCalls    []chunkToolCall `json:"tool_calls"`
	FunctionCall *respFunction   `json:"function_call"`
}

type chunkToolCall struct {
	// Index is a pointer because some servers leave it out; the position
	// in the list is used then.
	Index    *int         `json:"index"`
	ID       string       `json:"id"`
	Function respFunction `json:"function"`
}

// DecodeStream reads a streamed chat completions response.
//
// A non-2xx status reads at most MaxErrorBody of the body, closes it and
// returns ParseError's *llm.ProviderError. A 2xx JSON body (a server that
// ignored "stream": true) is decoded as DecodeResponse does and served as
// a one-chunk stream, or returned as its error. Otherwise the returned
// stream owns the body and reads it as server-sent events:
//
//   - each `data:` JSON chunk becomes one llm.Chunk from its first choice
//     (index 0; other choices are ignored): id, model, role, content (a
//     refusal delta counts as content), tool call fragments, finish reason,
//     and usage from the usage chunk (`"choices": []`) or Groq's x_groq;
//   - `data: [DONE]` ends it: Next returns io.EOF from then on;
//   - an error frame (`event: error`, a chunk with a non-null "error" key,
//     or vLLM's `"object": "error"`) returns ParseStreamError's error, or,
//     when that does not recognise it, an *llm.ProviderError with status
//     200 and phase stream; a chunk ending in finish_reason "error"
//     (OpenRouter) is an error too;
//   - the end of the body, or a read error, before [DONE] is a complete
//     end (io.EOF) when a finish reason was already seen (many compatible
//     servers omit [DONE]); else it returns an error wrapping both
//     llm.ErrStreamTruncated and the read error (io.ErrUnexpectedEOF for a
//     clean end of the body, never io.EOF), so a reset stays visible;
//   - a whole chunk that is not JSON, right after one that is, is left
//     out: the stream reads on and counts it (Skipped, llm.Skipper), and
//     the answer lacks what it carried. One with no chunk read before it,
//     or right after one left out (the output stopped being readable), or
//     an event past sse.DefaultMaxEventSize, returns an error wrapping
//     ErrMalformed and a ProviderError (or the truncation error when the
//     bad chunk is the cut-off end of the body).
//
// Once Next returns an error it returns the same error on every later
// call. Close closes the body and may be called more than once, and from
// another goroutine to abort a blocked Next; Next is not safe for
// concurrent use. Cancelling the request's context aborts a blocked Next.
func DecodeStream(resp *http.Response) (llm.Stream, error) {
	return decoder.DecodeStream(resp, "")
}

// stream decodes the chunks of an SSE body; the embedded exchange.Stream
// makes it an llm.Stream (see exchange.Stream.Init for why by value).
type stream struct {
	exchange.Stream
	r         sse.Reader
	header    http.Header
	sawFinish bool
	// raw is set for a request sent raw: every chunk keeps its data.
	raw bool
	// id and model are the last chunk's, strings of their own (exchange.Own).
	id, model string
}

// chunkState is what decoding one chunk fills in: the chunk and the memory
// its slices and pointers point into, so that the common chunk allocates
// no struct graph. A stream takes one from statePool for each chunk and
// gives it back once the chunk is made: a stream holds none between its
// chunks (thousands of slow streams would each keep half a kilobyte), and
// the one it takes was used a moment ago, still in the CPU's cache.
type chunkState struct {
	cc      chatChunk
	scratch chunkScratch
}

var statePool = sync.Pool{New: func() any { return new(chunkState) }}

// newStream returns the stream of body; key, when set, is redacted from
// its errors.
func newStream(body io.ReadCloser, header http.Header, key string) *stream {
	s := &stream{header: header}
	s.r.Init(body)
	s.Init(dialect, body, key, s)
	s.OnEnd = s.r.Release
	return s
}

// Ready reports whether the next chunk (or the end) is already buffered,
// so that Next returns without reading the body; see llm.Readier.
func (s *stream) Ready() bool { return s.r.Ready() }

// NextChunk reads events up to the next chunk, for the embedded Stream. For a request sent raw the
// chunk borrows the reader's buffer (see llm.Chunk): its Raw, Content and
// tool call fragments hold until the next call, and a long stream makes
// no garbage per event; ID and Model are kept as strings of their own.
func (s *stream) NextChunk() (llm.Chunk, error) {
	for {
		ev, err := s.r.NextView()
		if err != nil {
			return llm.Chunk{}, s.endError(err)
		}
		raw := bytes.TrimSpace(ev.Data)
		if ev.Event == "error" || len(raw) > 0 {
			c, err := s.chunk(ev.Event == "error", raw)
			if err != errSkipped {
				return c, err
			}
		}
	}
}

// errSkipped is chunk's word for an event left out (exchange.Stream.Skip):
// NextChunk reads on.
var errSkipped = errors.New("event skipped")

// chunk decodes one event's data, raw (an error event's when isError).
// It is a function of its own so that decode, under which every read of
// the body waits, keeps a small frame.
//
//go:noinline
func (s *stream) chunk(isError bool, raw []byte) (llm.Chunk, error) {
	if isError {
		return llm.Chunk{}, s.frameError(bytes.Clone(raw), "error event in stream")
	}
	if string(raw) == "[DONE]" {
		return llm.Chunk{}, io.EOF
	}
	var data string
	if s.raw {
		data = exchange.Borrow(raw)
	} else {
		data = string(raw)
	}
	st := statePool.Get().(*chunkState)
	defer statePool.Put(st)
	cc, err := st.decode(data)
	if err != nil {
		if s.r.Incomplete() {
			return llm.Chunk{}, s.endError(io.ErrUnexpectedEOF)
		}
		if s.Skip() {
			return llm.Chunk{}, errSkipped
		}
		return llm.Chunk{}, malformed(s.header, bytes.Clone(raw), llm.PhaseStream, "stream chunk", err)
	}
	s.Parsed()
	if present(cc.Error) || cc.Object == "error" {
		return llm.Chunk{}, s.frameError(bytes.Clone(raw), "error frame in stream")
	}
	c := llm.Chunk{ID: exchange.Own(&s.id, cc.ID), Model: exchange.Own(&s.model, cc.Model), Usage: cc.Usage.canonical()}
	if s.raw {
		c.Raw = data
	}
	if c.Usage == nil && cc.XGroq != nil {
		c.Usage = cc.XGroq.Usage.canonical()
	}
	if ch := firstChoice(cc.Choices); ch != nil {
		if ch.FinishReason == "error" {
			return llm.Chunk{}, s.frameError(bytes.Clone(raw), `stream ended with finish_reason "error"`)
		}
		fillDelta(&c, ch)
		if s.raw {
			c.Role = llm.Role(strings.Clone(string(c.Role)))
			c.FinishReason = llm.FinishReason(strings.Clone(string(c.FinishReason)))
		}
		if c.FinishReason != "" {
			s.sawFinish = true
		}
	}
	return c, nil
}

// decode decodes one chunk's JSON as json.Unmarshal into a zero
// chatChunk would, through parseChunkFast when data has the common shape.
// The result is valid until the next call, and while st is not given back.
func (st *chunkState) decode(data string) (*chatChunk, error) {
	cc := &st.cc
	*cc = chatChunk{}
	if parseChunkFast(data, cc, &st.scratch) {
		return cc, nil
	}
	*cc = chatChunk{}
	if err := json.Unmarshal([]byte(data), cc); err != nil {
		return nil, err
	}
	return cc, nil
}

// firstChoice returns the choice with index 0, or nil.
func firstChoice(choices []chunkChoice) *chunkChoice {
	for i := range choices {
		if choices[i].Index == 0 {
			return &choices[i]
		}
	}
	return nil
}

func fillDelta(c *llm.Chunk, ch *chunkChoice) {
	d := &ch.Delta
	c.Role = llm.Role(d.Role)
	c.Content = string(d.Content)
	if d.Refusal != nil {
		c.Content += *d.Refusal
	}
	for i, tc := range d.ToolCalls {
		idx := i
		if tc.Index != nil {
			idx = *tc.Index
		}
		c.ToolCalls = append(c.ToolCalls, llm.ToolCallDelta{
			Index: idx, ID: tc.ID, Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)})
	}
	if fc := d.FunctionCall; fc != nil && len(d.ToolCalls) == 0 {
		c.ToolCalls = []llm.ToolCallDelta{{Name: fc.Name, Arguments: string(fc.Arguments)}}
	}
	c.FinishReason = finishReason(ch.FinishReason)
}

// endError turns the end of the event stream into io.EOF (after a finish
// reason), the malformed error (an event past the size limit) or the
// truncation error.
func (s *stream) endError(err error) error {
	if s.sawFinish {
		return io.EOF
	}
	if errors.Is(err, sse.ErrTooLong) && !s.Closed() {
		return malformed(s.header, nil, llm.PhaseStream, "stream", err)
	}
	return s.Truncated(err)
}

// frameError reads an error frame.
func (s *stream) frameError(data []byte, fallback string) error {
	pe, ok := ParseStreamError(data)
	if !ok {
		pe = nil
	}
	pe = providerError(pe, s.header, data, llm.PhaseStream)
	if pe.Message == "" {
		pe.Message = errorMessage(data, fallback)
	}
	return pe
}
