package llm

import (
	"io"
	"strings"
)

// Assemble drains s into one Response and closes it. It is how a stream
// reads as the answer it carried:
//
//   - ID and Model are the first non-empty ones of the chunks;
//   - Message.Role is RoleAssistant and Message.Content the chunks'
//     contents joined;
//   - tool call fragments are joined by Index into one ToolCall each, in
//     the order their first fragments came: a fragment's ID and Name
//     replace the call's when they are not empty, its Arguments are
//     appended;
//   - FinishReason is the last one sent, Usage the last one sent;
//   - RateLimit is s's, when s is a RateLimiter; ProviderRequestID is
//     s's, when s is a RequestIDer;
//   - Skipped is s's count of events left out, when s is a Skipper.
//
// Any error of Next other than io.EOF is returned as it is, with a nil
// Response: a truncated or failed stream never passes as an answer.
func Assemble(s Stream) (*Response, error) {
	defer s.Close()
	out := &Response{Message: Message{Role: RoleAssistant}, RateLimit: RateLimitOf(s),
		ProviderRequestID: ProviderRequestIDOf(s)}
	var content strings.Builder
	byIndex := map[int]int{} // tool call Index -> position in ToolCalls
	for {
		c, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if c.Raw != "" {
			c = c.Clone() // its names are kept: see Chunk
		}
		if out.ID == "" {
			out.ID = c.ID
		}
		if out.Model == "" {
			out.Model = c.Model
		}
		content.WriteString(c.Content)
		for _, d := range c.ToolCalls {
			pos, ok := byIndex[d.Index]
			if !ok {
				pos = len(out.Message.ToolCalls)
				byIndex[d.Index] = pos
				out.Message.ToolCalls = append(out.Message.ToolCalls, ToolCall{})
			}
			tc := &out.Message.ToolCalls[pos]
			if d.ID != "" {
				tc.ID = d.ID
			}
			if d.Name != "" {
				tc.Name = d.Name
			}
			tc.Arguments += d.Arguments
		}
		if c.FinishReason != "" {
			out.FinishReason = c.FinishReason
		}
		if c.Usage != nil {
			out.Usage = *c.Usage
		}
	}
	out.Message.Content = content.String()
	out.Skipped = SkippedOf(s)
	return out, nil
}

// ResponseStream returns a Stream that serves r as one Chunk, then io.EOF:
// the inverse of Assemble, for an answer that came whole where a stream was
// asked for. The chunk carries r's ID, Model, role, content and finish
// reason, its Usage (always set, zero counts included), and each tool call
// whole as a ToolCallDelta whose Index is its position. It is a
// RateLimiter that returns r's RateLimit, a RequestIDer that returns r's
// ProviderRequestID, and a Skipper that returns r's
// Skipped. Close does nothing.
func ResponseStream(r *Response) Stream {
	c := Chunk{ID: r.ID, Model: r.Model, Role: r.Message.Role, Content: r.Message.Content,
		FinishReason: r.FinishReason}
	u := r.Usage
	c.Usage = &u
	for i, tc := range r.Message.ToolCalls {
		c.ToolCalls = append(c.ToolCalls, ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	return &onceStream{chunk: c, rl: r.RateLimit, rid: r.ProviderRequestID, skipped: r.Skipped}
}

// onceStream serves one chunk, then io.EOF.
type onceStream struct {
	chunk   Chunk
	done    bool
	rl      *RateLimit
	rid     string
	skipped int
}

// RateLimit implements RateLimiter: the response's.
func (o *onceStream) RateLimit() *RateLimit { return o.rl }

// ProviderRequestID implements RequestIDer: the response's.
func (o *onceStream) ProviderRequestID() string { return o.rid }

// Skipped implements Skipper: the response's.
func (o *onceStream) Skipped() int { return o.skipped }

func (o *onceStream) Next() (Chunk, error) {
	if o.done {
		return Chunk{}, io.EOF
	}
	o.done = true
	return o.chunk, nil
}

func (o *onceStream) Close() error { return nil }
