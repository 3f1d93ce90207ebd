package gateway

import (
	"net/http"
	"strconv"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
)

// passThrough reports whether the answer of t reaches the client as the
// provider wrote it: the client's request went on raw (llm.Raw) to a
// target of the client's own dialect. Every field of the answer then
// reaches the client, the ones detour does not know too.
func (c *call) passThrough(t *router.Target) bool {
	return c.cr.req.Raw != nil && t.Dialect == c.d.wire()
}

// rawHeader picks the client's headers that go with its body to a target
// of its dialect: Anthropic's anthropic-version and anthropic-beta.
func rawHeader(d dialect, h http.Header) http.Header {
	if d != anthropicDialect {
		return nil
	}
	var out http.Header
	for _, k := range []string{"Anthropic-Version", "Anthropic-Beta"} {
		if v := h.Values(k); len(v) > 0 {
			if out == nil {
				out = http.Header{}
			}
			out[k] = v
		}
	}
	return out
}

// writeRaw writes a whole answer of the client's dialect as the provider
// sent it, but for the keys detour holds (keyguard.go); false when the
// answer kept no body (it came as a stream).
func (c *call) writeRaw(resp *llm.Response) bool {
	if resp.Raw == nil || resp.Raw.Dialect != c.d.wire() {
		return false
	}
	body := redactAnswer(c.answerKeys(), resp.Raw.Body) // a copy when it held a key: the answer may be cached
	h := c.w.Header()
	c.hv.set(h, "Content-Type", "application/json")
	c.hv.set(h, "Content-Length", strconv.Itoa(len(body)))
	c.status = http.StatusOK
	c.w.WriteHeader(http.StatusOK)
	c.w.Write(body) //nolint:errcheck // nothing to do for a gone client
	return true
}

// rawStream passes a stream of the client's dialect on event by event as
// the provider sent it. A chunk that kept no event (a provider that
// answered a stream request with a whole JSON body) goes through the
// dialect's own encoder instead.
type rawStream struct {
	inner streamEncoder
	c     *call
	u     llm.Usage
	// raw is set once an event was passed on as it came; events counts
	// them.
	raw    bool
	events int
}

func (r *rawStream) usage() llm.Usage {
	if !r.raw {
		return r.inner.usage()
	}
	return r.u
}

// chunk appends ch's event as it came. OpenAI's final usage chunk is
// left out when the client did not ask for it (detour asked in its name).
func (r *rawStream) chunk(b []byte, ch llm.Chunk) []byte {
	if ch.Raw == "" {
		return r.inner.chunk(b, ch)
	}
	r.raw = true
	r.events++
	if ch.Usage != nil {
		r.u = *ch.Usage
	}
	switch r.c.d {
	case anthropicDialect, responsesDialect:
		if ch.Event != "" {
			b = event(b, ch.Event)
		} else {
			b = append(b, "data: "...)
		}
		b = append(b, ch.Raw...)
		return append(b, "\n\n"...)
	case geminiDialect:
		b = append(b, "data: "...)
		b = append(b, ch.Raw...)
		return append(b, "\n\n"...)
	}
	if ch.Usage != nil && !r.c.cr.includeUsage && ch.Role == "" && ch.Content == "" && len(ch.ToolCalls) == 0 &&
		ch.FinishReason == "" {
		return b // the usage chunk ("choices": []) detour asked for itself
	}
	b = append(b, "data: "...)
	b = append(b, ch.Raw...)
	return append(b, "\n\n"...)
}

// end appends the stream's end in the dialect's words: OpenAI's [DONE],
// Anthropic's message_stop; Gemini's stream has none (its last chunk
// carries the finishReason), nor has the Responses API's beyond its
// response.completed, passed on as it came.
func (r *rawStream) end(b []byte) []byte {
	if !r.raw {
		return r.inner.end(b)
	}
	switch r.c.d {
	case anthropicDialect:
		b = event(b, "message_stop")
		return append(b, `{"type":"message_stop"}`+"\n\n"...)
	case geminiDialect, responsesDialect:
		return b
	}
	return append(b, "data: [DONE]\n\n"...)
}

// fail appends the error events of a failure after the stream started. A
// Responses stream passed on raw already had its response.created: the
// failure follows with response.failed and the error event alone, numbered
// after the events that went out.
func (r *rawStream) fail(b []byte, e *apiError) []byte {
	if rs, ok := r.inner.(*rsStream); ok && r.raw {
		rs.started, rs.seq = true, r.events
	}
	return r.inner.fail(b, e)
}
