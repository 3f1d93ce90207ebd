package llm

import "strings"

// FinishReason says why the model stopped, in detour's canonical words.
type FinishReason string

// The canonical finish reasons.
const (
	// FinishStop is a natural end or a stop sequence.
	FinishStop FinishReason = "stop"
	// FinishLength means the output cap was reached.
	FinishLength FinishReason = "length"
	// FinishToolCalls means the model is waiting for tool results.
	FinishToolCalls FinishReason = "tool_calls"
	// FinishContentFilter means the provider's filter cut or refused the answer.
	FinishContentFilter FinishReason = "content_filter"
)

// Usage counts tokens of one exchange.
type Usage struct {
	// InputTokens are all the prompt's tokens, those the cache served or
	// stored included.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CacheReadTokens are the input tokens the provider's prompt cache
	// served (OpenAI's prompt_tokens_details.cached_tokens, Anthropic's
	// cache_read_input_tokens, Gemini's cachedContentTokenCount).
	CacheReadTokens int `json:"cache_read_tokens,omitempty"`
	// CacheWriteTokens are the input tokens written to the cache
	// (Anthropic's cache_creation_input_tokens).
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens are the output tokens the model spent reasoning
	// before its visible answer, counted in OutputTokens too (the
	// Responses API's output_tokens_details.reasoning_tokens); 0 when the
	// provider did not say.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// Response is one complete answer.
type Response struct {
	// ID is the provider's id for the answer, when it gave one.
	ID string `json:"id,omitempty"`
	// Model is the model that really answered, as the provider named it.
	Model        string       `json:"model"`
	Message      Message      `json:"message"`
	FinishReason FinishReason `json:"finish_reason"`
	Usage        Usage        `json:"usage"`
	// Raw is the provider's body as it came, when the request was sent raw
	// (Request.Raw in the provider's dialect): a client of that dialect can
	// be given every field of it, the ones the fields above do not hold too.
	Raw *Raw `json:"-"`
	// RateLimit is what the provider said of its rate limits in the
	// response's headers; nil when it said nothing.
	RateLimit *RateLimit `json:"-"`
	// ProviderRequestID is the provider's own id for the exchange, the
	// one its support desk asks for (see ProviderRequestID); "" when it
	// gave none.
	ProviderRequestID string `json:"-"`
	// Skipped counts the events of a streamed answer that could not be
	// read and were left out (see Skipper): the answer is then missing
	// what they carried. 0 for an answer read whole.
	Skipped int `json:"-"`
}

// ToolCallDelta is a fragment of a streamed tool call. The first fragment of a
// call carries ID and Name; later ones append to Arguments.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Chunk is one piece of a streamed answer.
//
// A chunk that has Raw set (a stream of a request sent raw) may borrow
// its stream's read buffer: Raw, Content and the tool call fragments hold
// until the next call to the stream's Next or Close, which may write over
// them, so that a long stream makes no garbage per event. A caller that
// keeps such a chunk longer keeps c.Clone(). Every other field, and every
// field of a chunk without Raw, is a value of its own.
type Chunk struct {
	// ID and Model are set when the provider sent them.
	ID    string `json:"id,omitempty"`
	Model string `json:"model,omitempty"`
	// Role is set on the first chunk of a message.
	Role      Role            `json:"role,omitempty"`
	Content   string          `json:"content,omitempty"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
	// FinishReason is set on the chunk that ends the message.
	FinishReason FinishReason `json:"finish_reason,omitempty"`
	// Usage is set on the chunk that reports usage (often the last one).
	Usage *Usage `json:"usage,omitempty"`
	// Raw is the data of the stream event this chunk was read from, as the
	// provider sent it, when the request was sent raw (Request.Raw in the
	// provider's dialect); Event is the event's name (Anthropic's
	// "content_block_delta", ...; empty for OpenAI). Every event of such a
	// stream comes as a chunk, those that carry nothing the fields above
	// hold too (a thinking delta, a block's start), so that a client of
	// the same dialect can be given the stream as it was.
	Raw   string `json:"-"`
	Event string `json:"-"`
}

// Clone returns c with strings of its own: a chunk that may borrow its
// stream's buffer (see Chunk), made safe to keep.
func (c Chunk) Clone() Chunk {
	c.Raw = strings.Clone(c.Raw)
	c.Content = strings.Clone(c.Content)
	if c.ToolCalls != nil {
		tc := make([]ToolCallDelta, len(c.ToolCalls))
		for i, d := range c.ToolCalls {
			d.ID, d.Name, d.Arguments = strings.Clone(d.ID), strings.Clone(d.Name), strings.Clone(d.Arguments)
			tc[i] = d
		}
		c.ToolCalls = tc
	}
	if c.Usage != nil {
		u := *c.Usage
		c.Usage = &u
	}
	return c
}

// Stream is a streamed answer. Next returns io.EOF after the provider's
// explicit end of stream; a stream that ends without one returns an error
// wrapping ErrStreamTruncated. Not safe for concurrent use.
type Stream interface {
	Next() (Chunk, error)
	// Close releases the connection; it is safe to call more than once.
	Close() error
}

// Readier is an optional interface of a Stream that can tell whether its
// next chunk has already arrived. Ready reports whether the next call to
// Next will return without waiting for the network: a whole chunk is
// buffered, or the stream has ended. False says nothing, and is always a
// correct answer. A caller that batches its output flushes it when Ready is
// false, so a lone chunk never waits for the next one. Ready is called from
// the goroutine that calls Next, never concurrently with Next.
type Readier interface {
	Ready() bool
}

// Ready reports s's Ready when s implements Readier, else false.
func Ready(s Stream) bool {
	r, ok := s.(Readier)
	return ok && r.Ready()
}

// Skipper is an optional interface of a Stream that leaves out an event
// it cannot read (data that is not JSON, say) when the events around it
// can be read: one bad event between good ones does not end the answer,
// but the answer lacks what that event carried. Skipped returns how many
// events were left out so far; it is called from the goroutine that calls
// Next.
type Skipper interface {
	Skipped() int
}

// SkippedOf returns s's Skipped when s implements Skipper, else 0.
func SkippedOf(s Stream) int {
	if k, ok := s.(Skipper); ok {
		return k.Skipped()
	}
	return 0
}
