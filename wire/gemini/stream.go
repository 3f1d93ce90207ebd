package gemini

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

// DecodeStream reads a :streamGenerateContent?alt=sse response.
//
// A non-2xx status reads at most MaxErrorBody of the body, closes it and
// returns ParseError's *llm.ProviderError. A 2xx JSON body (a server that
// did not stream) is decoded as DecodeResponse does and served as a
// one-chunk stream, or returned as its error. Otherwise the returned
// stream owns the body and reads it as server-sent events, each `data:`
// a GenerateContentResponse:
//
//   - each chunk becomes one llm.Chunk from its first candidate: ID
//     (responseId), Model (modelVersion), Role assistant on the first
//     chunk only, Content (text parts, thoughts left out), and one
//     ToolCallDelta per functionCall part carrying the whole call: Index n
//     for the n-th call of the stream (0-based), ID the part's id or
//     "call_<n>", Name, and Arguments the compact JSON of args. Chunks
//     that carry nothing (thoughts only) are skipped;
//   - the chunk with a finishReason has FinishReason (STOP is tool_calls
//     when the stream called functions, MAX_TOKENS length) and Usage from
//     the latest usageMetadata (Gemini repeats the running totals on
//     every chunk; detour reports them once, at the end); a chunk after
//     it that carries usageMetadata has Usage again, which then replaces
//     the earlier one;
//   - a safety block (promptFeedback.blockReason, or a blocking finish
//     reason such as SAFETY) returns an *llm.ProviderError with Status
//     200, Phase stream, Type "safety" and Code the reason; a failed
//     finish (MALFORMED_FUNCTION_CALL, ...) likewise with Code the reason;
//   - a chunk that is an error object ({"error":{...}} or an array of
//     one) returns ParseStreamError's error. So does such an object sent
//     bare, without `data:` framing, as go-genai also accepts: lines of a
//     body that start like JSON are read as data lines;
//   - Gemini sends no terminal event: the end of the body after a chunk
//     with a finishReason is the complete end (io.EOF). The end of the
//     body, or a read error, before any finishReason returns an error
//     wrapping both llm.ErrStreamTruncated and the read error
//     (io.ErrUnexpectedEOF for a clean end of the body, never io.EOF);
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
	lines     jsonLines // r's source
	header    http.Header
	started   bool // the first chunk (with Role) was returned
	sawFinish bool
	calls     int        // function calls returned so far
	usage     *llm.Usage // the latest usageMetadata
	// raw keeps each event's data in its chunk (Chunk.Raw): the request
	// was sent raw, and its client reads Gemini's own events.
	raw bool
	// id and model are the last chunk's, strings of their own (exchange.Own).
	id, model string
}

// newStream returns the stream of body; key, when set, is redacted from
// its errors.
func newStream(body io.ReadCloser, header http.Header, key string) *stream {
	s := &stream{header: header, lines: jsonLines{r: body, lineStart: true}}
	s.r.Init(&s.lines)
	s.Init(dialect, body, key, s)
	s.OnEnd = s.r.Release
	return s
}

// NextChunk decodes the next chunk for the embedded Stream; see DecodeStream.
func (s *stream) NextChunk() (llm.Chunk, error) {
	for {
		// The event's data is a view of the reader's buffer, valid until
		// the next read: what outlives it is copied (text, KeepBody).
		ev, err := s.r.NextView()
		if err != nil {
			return llm.Chunk{}, s.endError(err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 || string(data) == "[DONE]" {
			continue
		}
		// One copy of the event: the decoded strings are substrings of
		// it, and a raw chunk's Raw is it.
		text := string(data)
		var r generateResponse
		if !parseResponseFast(text, &r) {
			r = generateResponse{}
			if err := json.Unmarshal(data, &r); err != nil {
				if pe, ok := ParseStreamError(data); ok {
					// The array form [{"error":{...}}].
					pe.Header = s.header
					return llm.Chunk{}, pe
				}
				if s.r.Incomplete() {
					return llm.Chunk{}, s.endError(io.ErrUnexpectedEOF)
				}
				if s.Skip() {
					continue
				}
				return llm.Chunk{}, malformed(s.header, data, llm.PhaseStream, "stream chunk", err)
			}
		}
		s.Parsed()
		if ev.Event == "error" && !present(r.Error) {
			return llm.Chunk{}, &llm.ProviderError{Dialect: dialect, Status: http.StatusOK, Header: s.header,
				Body: exchange.KeepBody(data), Phase: llm.PhaseStream, Message: "error event in stream"}
		}
		if pe := r.failure(s.header, data, llm.PhaseStream); pe != nil {
			return llm.Chunk{}, pe
		}
		if c, ok := s.chunk(&r); ok || s.raw {
			if s.raw {
				c.Raw = text
				s.started = true
			}
			return c, nil
		}
	}
}

// chunk turns one GenerateContentResponse into a Chunk; ok is false when
// it carries nothing.
func (s *stream) chunk(r *generateResponse) (llm.Chunk, bool) {
	c := llm.Chunk{ID: exchange.Own(&s.id, r.ResponseID), Model: exchange.Own(&s.model, r.ModelVersion)}
	if !s.started {
		c.Role = llm.RoleAssistant
	}
	var text strings.Builder
	cand := r.first()
	if cand != nil && cand.Content != nil {
		for _, p := range cand.Content.Parts {
			if fc := p.FunctionCall; fc != nil {
				c.ToolCalls = append(c.ToolCalls, llm.ToolCallDelta{
					Index: s.calls, ID: callID(fc.ID, s.calls), Name: fc.Name, Arguments: exchange.ArgsText(fc.Args)})
				s.calls++
				continue
			}
			if !p.Thought {
				text.WriteString(p.Text)
			}
		}
	}
	c.Content = text.String()
	if u := r.UsageMetadata.canonical(); u != nil {
		s.usage = u
		if s.sawFinish {
			c.Usage = u // usage sent after the finish reason
		}
	}
	if cand != nil && cand.FinishReason != "" {
		c.FinishReason = finishReason(cand.FinishReason, s.calls > 0)
		s.sawFinish = true
		c.Usage = s.usage
	}
	if c.Role == "" && c.Content == "" && len(c.ToolCalls) == 0 && c.FinishReason == "" && c.Usage == nil {
		return c, false
	}
	s.started = true
	return c, true
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

// jsonLines passes an event stream through, turning each line that starts
// like JSON ('{', '}', '[', ']', '"', space or tab) into a `data:` line,
// so that an error object Gemini writes bare, one or many lines, reaches
// the decoder as one event (its lines joined by "\n", as they were). No
// SSE field starts with those bytes, so real events pass unchanged.
type jsonLines struct {
	r         io.Reader
	in        []byte
	out       []byte
	pos       int
	lineStart bool
	err       error
}

func (j *jsonLines) Read(p []byte) (int, error) {
	for j.pos >= len(j.out) {
		if j.err != nil {
			return 0, j.err
		}
		if j.in == nil {
			j.in = make([]byte, 4096)
		}
		n, err := j.r.Read(j.in)
		j.out, j.pos = j.out[:0], 0
		for _, b := range j.in[:n] {
			if j.lineStart {
				switch b {
				case '{', '}', '[', ']', '"', ' ', '\t':
					j.out = append(j.out, "data: "...)
				}
			}
			j.out = append(j.out, b)
			j.lineStart = b == '\n' || b == '\r'
		}
		j.err = err
		if n == 0 && err == nil {
			return 0, nil
		}
	}
	n := copy(p, j.out[j.pos:])
	j.pos += n
	return n, nil
}
