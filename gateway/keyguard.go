package gateway

import (
	"slices"

	"github.com/detourhq/detour/internal/jsonscan"
	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

// Keys never reach a client in an answer either: an upstream that echoes
// its Authorization header into the text it answers (a faulty proxy, a
// hostile endpoint) would otherwise hand a provider's key to every client.
// The keys are the secrets detour holds (view.answerKeys): every
// provider's key, the client keys named by key_env, the admin and metrics
// keys. What is promised, exactly (docs/gateway.md, "Keys in answers"):
//
//   - a plain answer, raw or written by detour, goes out with every key
//     that stands in it, as it is or JSON-escaped, replaced by
//     "[redacted]" (exchange.KeySet.RedactJSON);
//   - a streamed answer likewise, event by event, and its text (content,
//     each tool call's arguments) is read across events: a key cut between
//     events is replaced too, and of it at most exchange.HoldLen-1 = 7
//     bytes (its provider's public prefix) go out before detour sees the
//     rest (exchange.Guard). To keep that bound a chunk whose text ends in
//     8 bytes or more of a key's start waits for the next one;
//   - embeddings carry no text but the model's name, which is redacted.
//
// Not promised: a key changed by the model (cut, in another case, spelled
// out, base64): no exact rule stops an upstream set on leaking a key it
// holds, and a loose one would mangle answers. Errors are scrubbed by the
// wider rule of Server.scrub.

// answerKeys returns the keys an answer must not carry; nil when detour
// holds none.
func (c *call) answerKeys() *exchange.KeySet { return c.s.v().answerKeys }

// redactAnswer returns body, a whole answer, with the keys replaced: a new
// slice when it held one, body itself (never written to) when not.
func redactAnswer(ks *exchange.KeySet, body []byte) []byte {
	if out, changed := ks.RedactJSON(nil, body); changed {
		return out
	}
	return body
}

// redactEvents redacts the events an encoder appended to b after start.
func redactEvents(ks *exchange.KeySet, b []byte, start int) []byte {
	if out, changed := ks.RedactJSON(nil, b[start:]); changed {
		return append(b[:start], out...)
	}
	return b
}

// Caps of what a guardOut keeps per stream, against an upstream that
// would make it keep much: past maxHeld chunks held at once the held ones
// go out as they are (a start of a key, 8 bytes or more, may then go
// out), and the arguments of tool calls past maxToolGuards are checked
// only event by event (a whole key in one event).
const (
	maxHeld       = 256
	maxToolGuards = 64
)

// guardOut is the streamEncoder that keeps keys out of a stream, around
// the one that writes it (raw or the dialect's own): it reads each chunk's
// content and each tool call's arguments through an exchange.Guard,
// holds the chunk back while one ends in the start of a key (Guard.Hold),
// writes each chunk it lets go with its keys replaced, and runs what was
// written through KeySet.RedactJSON (a key in any other field: an id, a
// name, the fields of a raw event detour does not read). A raw event
// whose text changed gets the new text in place of the old string;
// failing that, it goes out through the dialect's own encoder. Not safe
// for concurrent use.
type guardOut struct {
	next  streamEncoder
	ks    *exchange.KeySet
	text  exchange.Guard
	tools []toolGuard
	held  []llm.Chunk // chunks held back, owned (Clone), oldest first
}

// toolGuard guards the arguments of the tool call of one Index.
type toolGuard struct {
	index int
	g     exchange.Guard
}

// init readies o to guard what next writes against the keys of ks (not
// nil).
func (o *guardOut) init(next streamEncoder, ks *exchange.KeySet) {
	o.next, o.ks = next, ks
	o.text.Reset(ks)
}

func (o *guardOut) usage() llm.Usage { return o.next.usage() }

func (o *guardOut) chunk(b []byte, ch llm.Chunk) []byte {
	if o.read(&ch) && len(o.held) < maxHeld {
		o.held = append(o.held, ch.Clone())
		return b
	}
	start := len(b)
	b = o.release(b)
	b = o.write(b, ch)
	return redactEvents(o.ks, b, start)
}

func (o *guardOut) end(b []byte) []byte {
	start := len(b)
	b = o.release(b)
	return redactEvents(o.ks, o.next.end(b), start)
}

func (o *guardOut) fail(b []byte, e *apiError) []byte {
	start := len(b)
	b = o.release(b)
	return redactEvents(o.ks, o.next.fail(b, e), start)
}

// read gives ch's text to the guards, and reports whether the text so far
// ends in the start of a key: ch must be held.
func (o *guardOut) read(ch *llm.Chunk) bool {
	if ch.Content != "" {
		o.text.Next(ch.Content)
	}
	for i := range ch.ToolCalls {
		if tc := &ch.ToolCalls[i]; tc.Arguments != "" {
			if g := o.tool(tc.Index); g != nil {
				g.Next(tc.Arguments)
			}
		}
	}
	hold := o.text.Hold()
	for i := range o.tools {
		hold = hold || o.tools[i].g.Hold()
	}
	return hold
}

// tool returns the guard of the arguments of tool call index; nil past
// maxToolGuards.
func (o *guardOut) tool(index int) *exchange.Guard {
	for i := range o.tools {
		if o.tools[i].index == index {
			return &o.tools[i].g
		}
	}
	if len(o.tools) == maxToolGuards {
		return nil
	}
	o.tools = append(o.tools, toolGuard{index: index})
	g := &o.tools[len(o.tools)-1].g
	g.Reset(o.ks)
	return g
}

// release writes the chunks held back, oldest first.
func (o *guardOut) release(b []byte) []byte {
	for i := range o.held {
		b = o.write(b, o.held[i])
		o.held[i] = llm.Chunk{}
	}
	o.held = o.held[:0]
	return b
}

// write writes ch as the guards let it go out.
func (o *guardOut) write(b []byte, ch llm.Chunk) []byte {
	if ch.Content != "" {
		if s, changed := o.text.Out(ch.Content); changed {
			ch.Raw = rawText(ch.Raw, contentNames, ch.Content, s)
			ch.Content = s
		}
	}
	copied := false
	for i := range ch.ToolCalls {
		tc := ch.ToolCalls[i]
		if tc.Arguments == "" {
			continue
		}
		g := o.tool(tc.Index)
		if g == nil {
			continue
		}
		if s, changed := g.Out(tc.Arguments); changed {
			if !copied { // the stream's own slice: not ours to write
				ch.ToolCalls, copied = slices.Clone(ch.ToolCalls), true
			}
			ch.Raw = rawText(ch.Raw, argumentNames, tc.Arguments, s)
			ch.ToolCalls[i].Arguments = s
		}
	}
	return o.next.chunk(b, ch)
}

// The names of the strings that hold a raw event's text: OpenAI's
// delta.content (and refusal), Anthropic's delta.text and a text block's
// text, Gemini's parts' text, the Responses API's delta (and a .done
// event's text); OpenAI's function.arguments, Anthropic's
// delta.partial_json and the Responses API's delta and arguments.
var (
	contentNames  = []string{"content", "text", "refusal", "delta"}
	argumentNames = []string{"arguments", "partial_json", "delta"}
)

// rawText returns raw, a stream event's JSON as the provider sent it, with
// the one string of a field of names whose value is was written as now;
// "" (the chunk then goes out through the dialect's own encoder) when raw
// is "" or no one such string holds was (Gemini's text of two parts).
func rawText(raw string, names []string, was, now string) string {
	if raw == "" {
		return ""
	}
	p := &jsonscan.Scanner{S: raw}
	var at [2]int
	n := 0
	if !findString(p, names, was, &at, &n, 0) || n != 1 {
		return ""
	}
	b := make([]byte, 0, len(raw)+len(now))
	b = append(b, raw[:at[0]]...)
	b = jsonw.String(b, now)
	return string(append(b, raw[at[1]:]...))
}

// findString reads the value at p, noting in at the place of each string
// of a field of names whose value is was, and counting them in n.
func findString(p *jsonscan.Scanner, names []string, was string, at *[2]int, n *int, depth int) bool {
	switch p.Peek() {
	case '{':
		return depth < jsonscan.MaxDepth && p.Object(func(k string) bool {
			if slices.Contains(names, k) && p.Peek() == '"' {
				from := p.I
				v, ok := p.Str()
				if ok && v == was {
					*at, *n = [2]int{from, p.I}, *n+1
				}
				return ok
			}
			return findString(p, names, was, at, n, depth+1)
		})
	case '[':
		return depth < jsonscan.MaxDepth && p.Array(func() bool { return findString(p, names, was, at, n, depth+1) })
	}
	return p.SkipValue()
}
