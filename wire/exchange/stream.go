package exchange

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/detourhq/detour/llm"
)

// ErrStreamClosed is wrapped by the error a Stream's Next returns after
// Close, unless the stream had already ended. Each adapter's
// ErrStreamClosed is this same error.
var ErrStreamClosed = errors.New("stream closed")

// Stream is the lifecycle of a stream over a response body, the part of
// an adapter's llm.Stream that knows no dialect: a sticky end, the key
// kept out of errors, and a Close that is idempotent and may come from
// another goroutine. An adapter's stream type embeds a Stream, readied by
// Init, and is its ChunkSource.
//
// Next is not safe for concurrent use; Close is safe to call at any time,
// from any goroutine, and aborts a Next blocked reading the body.
type Stream struct {
	// OnEnd, when set, runs once, in Next, after decode returned its last
	// result (io.EOF or an error): the adapter gives its read buffers back
	// there (sse.Reader.Release). Set it before the first Next.
	OnEnd func()

	name string
	body io.Closer
	key  string
	src  ChunkSource
	rl   *llm.RateLimit // set by the Decoder before the stream is returned
	rid  string         // the provider's request id, set as rl is
	err  error          // sticky: io.EOF after the end, or the error that ended it
	// skipped counts the events left out (Skip); last is what became of
	// the last event with data.
	skipped int
	last    lastEvent

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error // the body's Close result; written once, under closeOnce
}

// ChunkSource decodes the chunks of a Stream: the adapter's stream type
// that embeds it (see Init).
type ChunkSource interface {
	// NextChunk returns the next chunk, io.EOF at the stream's complete
	// end, or the error that ended it. It is not called again once it
	// returned an error.
	NextChunk() (llm.Chunk, error)
}

// Init readies s, a zero Stream embedded by value in src, an adapter's
// stream type, to read the chunks src decodes from body. name prefixes
// its errors ("openai: stream closed"); key, when set, is redacted from
// every error Next returns. Embedded so, the two (and the sse.Reader src
// embeds in turn) are one allocation: the memory a stream touches at each
// chunk is in one place, not scattered over the heap where thousands of
// streams each bring their own pages back into the CPU's caches.
func (s *Stream) Init(name string, body io.Closer, key string, src ChunkSource) {
	s.name, s.body, s.key, s.src = name, body, key, src
}

// Next returns the next chunk. Once the stream has ended it returns the
// same error on every later call: io.EOF after the complete end, or the
// error that ended it, with the key redacted. After Close it returns an
// error wrapping ErrStreamClosed, unless the stream had ended before.
func (s *Stream) Next() (llm.Chunk, error) {
	if s.err == nil && s.closed.Load() {
		s.err = s.closedError()
	}
	if s.err != nil {
		return llm.Chunk{}, s.err
	}
	c, err := s.src.NextChunk()
	if err != nil {
		s.err = Redact(err, s.key)
		if end := s.OnEnd; end != nil {
			s.OnEnd = nil
			end()
		}
		return llm.Chunk{}, s.err
	}
	return c, nil
}

// Close closes the body; later calls do nothing and return the first
// call's result.
func (s *Stream) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() { s.closeErr = s.body.Close() })
	return s.closeErr
}

// RateLimit implements llm.RateLimiter: what the response's header said
// of the provider's rate limits (see RateLimitOf), when the stream was
// made by a Decoder; else nil.
func (s *Stream) RateLimit() *llm.RateLimit { return s.rl }

// setRateLimit is how a Decoder hands a stream its response's RateLimit.
func (s *Stream) setRateLimit(rl *llm.RateLimit) { s.rl = rl }

// ProviderRequestID implements llm.RequestIDer: the provider's own id
// for the exchange in the response's header (llm.ProviderRequestID),
// when the stream was made by a Decoder; else "".
func (s *Stream) ProviderRequestID() string { return s.rid }

// setRequestID is how a Decoder hands a stream its response's request id.
func (s *Stream) setRequestID(id string) { s.rid = id }

// rateLimitSetter is a stream that embeds a *Stream.
type rateLimitSetter interface {
	setRateLimit(*llm.RateLimit)
	setRequestID(string)
}

// lastEvent is what became of a stream's last event with data.
type lastEvent uint8

const (
	noEvent      lastEvent = iota // none came yet
	readEvent                     // it was read (Parsed)
	skippedEvent                  // it was left out (Skip)
)

// Parsed notes that the adapter read an event's data: an unreadable event
// after it may be left out (Skip). The adapter calls it for each event
// whose data it read, whatever it makes of it.
func (s *Stream) Parsed() { s.last = readEvent }

// Skip reports whether an event whose data the adapter could not read
// (not JSON, say), and that the end of the body did not cut off (that is
// a truncation, checked first), is to be left out, and counts it when so:
// the adapter then reads on, and the answer lacks what the event carried.
// One bad event between readable ones is left out; the stream fails (Skip
// reports false, and the adapter returns its malformed error) when the
// provider's output stopped being readable: no event was read before this
// one (nothing says the body is an answer at all), or the one before it
// was left out too (two in a row).
func (s *Stream) Skip() bool {
	if s.last != readEvent {
		return false
	}
	s.last = skippedEvent
	s.skipped++
	return true
}

// Skipped implements llm.Skipper: how many events Skip left out so far.
func (s *Stream) Skipped() int { return s.skipped }

// Closed reports whether Close was called.
func (s *Stream) Closed() bool { return s.closed.Load() }

// Truncated is the error of a body that ended, or failed with err, before
// the stream's terminal event: after Close, an error wrapping
// ErrStreamClosed (the read failed because of it); else one wrapping both
// llm.ErrStreamTruncated and err, where io.EOF (a clean end of the body)
// becomes io.ErrUnexpectedEOF, so that a cut never passes for the end.
func (s *Stream) Truncated(err error) error {
	if s.closed.Load() {
		return s.closedError()
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%s: %w: %w", s.name, llm.ErrStreamTruncated, err)
}

func (s *Stream) closedError() error {
	return fmt.Errorf("%s: %w", s.name, ErrStreamClosed)
}
