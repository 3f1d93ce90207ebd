package openai

import (
	"github.com/detourhq/detour/internal/jsonscan"
)

// This file holds a fast path for decoding the common shape of a
// chat.completion.chunk, as sent by OpenAI and most compatible servers:
//
//	{"id":"..","object":"chat.completion.chunk","created":1,"model":"..",
//	 "choices":[{"index":0,"delta":{"content":".."},"finish_reason":null}],
//	 "usage":null}
//
// parseChunkFast fills a chatChunk exactly as json.Unmarshal would, or
// reports false for anything it does not handle, and the caller then uses
// encoding/json. It reads the fields chatChunk has under their exact
// names, each at most once; it skips (checking them) the keys chatChunk
// does not have, and leaves to encoding/json a key that matches a field
// only when case is ignored, "error" and "x_groq", more than one choice,
// more than len(chunkScratch.calls) tool call fragments, and content or
// arguments that are not strings. FuzzChunkDecodeMatchesJSON checks it
// against json.Unmarshal.

// chunkScratch is the backing memory parseChunkFast fills slices and
// pointers of a chatChunk from, reused chunk after chunk.
type chunkScratch struct {
	choices [1]chunkChoice
	calls   [4]chunkToolCall
	index   [4]int
	usage   chatUsage
	fn      respFunction
}

// parseChunkFast decodes data into *cc, which must be zero, with its
// slices and pointers into *sc. It reports false when data is not of the
// handled shape; *cc is then undefined.
func parseChunkFast(data string, cc *chatChunk, sc *chunkScratch) bool {
	p := &jsonscan.Scanner{S: data}
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "id":
			return seen.First(1) && p.NullableString(&cc.ID)
		case "object":
			return seen.First(2) && p.NullableString(&cc.Object)
		case "model":
			return seen.First(4) && p.NullableString(&cc.Model)
		case "choices":
			return seen.First(8) && chunkChoices(p, cc, sc)
		case "usage":
			return seen.First(16) && usage(p, &cc.Usage, &sc.usage)
		}
		return p.SkipUnknown(key, "id", "object", "model", "choices", "usage", "x_groq", "error")
	}) && p.End()
}

// usage reads a usage object into *dst (backed by mem), or null.
func usage(p *jsonscan.Scanner, dst **chatUsage, mem *chatUsage) bool {
	return jsonscan.PtrInto(p, dst, mem, func(u *chatUsage) bool {
		var seen jsonscan.Seen
		return p.Object(func(key string) bool {
			switch key {
			case "prompt_tokens":
				return seen.First(1) && nullableInt(p, &u.PromptTokens)
			case "completion_tokens":
				return seen.First(2) && nullableInt(p, &u.CompletionTokens)
			case "prompt_tokens_details":
				var inner jsonscan.Seen
				return seen.First(4) && (p.Null() || p.Object(func(key string) bool {
					if key == "cached_tokens" {
						return inner.First(1) && nullableInt(p, &u.PromptTokensDetails.CachedTokens)
					}
					return p.SkipUnknown(key, "cached_tokens")
				}))
			}
			return p.SkipUnknown(key, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
		})
	})
}

// nullableInt reads an integer into *dst, or null (which leaves it).
func nullableInt(p *jsonscan.Scanner, dst *int) bool {
	return p.Null() || p.Int(dst)
}

// chunkChoices reads the "choices" array: empty, or one choice object.
func chunkChoices(p *jsonscan.Scanner, cc *chatChunk, sc *chunkScratch) bool {
	if p.Null() {
		return true
	}
	if !p.Consume('[') {
		return false
	}
	if p.Consume(']') {
		cc.Choices = sc.choices[:0]
		return true
	}
	ch := &sc.choices[0]
	*ch = chunkChoice{}
	var seen jsonscan.Seen
	ok := p.Object(func(key string) bool {
		switch key {
		case "index":
			return seen.First(1) && nullableInt(p, &ch.Index)
		case "delta":
			return seen.First(2) && chunkDeltaFast(p, &ch.Delta, sc)
		case "finish_reason":
			return seen.First(4) && p.NullableString(&ch.FinishReason)
		}
		return p.SkipUnknown(key, "index", "delta", "finish_reason")
	})
	if !ok || !p.Consume(']') {
		return false
	}
	cc.Choices = sc.choices[:1]
	return true
}

// chunkDeltaFast reads a choice's delta object.
func chunkDeltaFast(p *jsonscan.Scanner, d *chunkDelta, sc *chunkScratch) bool {
	if p.Null() {
		return true
	}
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "role":
			return seen.First(1) && p.NullableString(&d.Role)
		case "content":
			return seen.First(2) && stringContent(p, &d.Content)
		case "refusal":
			return seen.First(4) && nullableStringPtr(p, &d.Refusal)
		case "tool_calls":
			return seen.First(8) && chunkToolCalls(p, d, sc)
		case "function_call":
			return seen.First(16) && function(p, &d.FunctionCall, &sc.fn)
		}
		return p.SkipUnknown(key, "role", "content", "refusal", "tool_calls", "function_call")
	})
}

// stringContent reads a content that is a string or null (an array of
// parts is left to encoding/json).
func stringContent(p *jsonscan.Scanner, dst *textContent) bool {
	if p.Null() {
		*dst = ""
		return true
	}
	s, ok := p.Str()
	*dst = textContent(s)
	return ok
}

// nullableStringPtr reads a string into a new *string, or null (nil).
func nullableStringPtr(p *jsonscan.Scanner, dst **string) bool {
	return jsonscan.Ptr(p, dst, func(s *string) bool {
		v, ok := p.Str()
		*s = v
		return ok
	})
}

// chunkToolCalls reads a delta's "tool_calls" array.
func chunkToolCalls(p *jsonscan.Scanner, d *chunkDelta, sc *chunkScratch) bool {
	if p.Null() {
		return true
	}
	d.ToolCalls = sc.calls[:0]
	n := 0
	return p.Array(func() bool {
		if n == len(sc.calls) {
			return false
		}
		tc := &sc.calls[n]
		*tc = chunkToolCall{}
		if !chunkToolCall1(p, tc, &sc.index[n]) {
			return false
		}
		n++
		d.ToolCalls = sc.calls[:n]
		return true
	})
}

// chunkToolCall1 reads one tool call fragment; index backs tc.Index.
func chunkToolCall1(p *jsonscan.Scanner, tc *chunkToolCall, index *int) bool {
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "index":
			if !seen.First(1) {
				return false
			}
			if p.Null() {
				tc.Index = nil
				return true
			}
			if !p.Int(index) {
				return false
			}
			tc.Index = index
			return true
		case "id":
			return seen.First(2) && p.NullableString(&tc.ID)
		case "function":
			return seen.First(4) && functionFields(p, &tc.Function)
		}
		return p.SkipUnknown(key, "index", "id", "function")
	})
}

// function reads a function_call object into *dst (backed by mem), or
// null (nil).
func function(p *jsonscan.Scanner, dst **respFunction, mem *respFunction) bool {
	return jsonscan.PtrInto(p, dst, mem, func(f *respFunction) bool { return functionFields(p, f) })
}

// functionFields reads a function object with string arguments into f,
// or null (which leaves f).
func functionFields(p *jsonscan.Scanner, f *respFunction) bool {
	if p.Null() {
		return true
	}
	var seen jsonscan.Seen
	return p.Object(func(key string) bool {
		switch key {
		case "name":
			return seen.First(1) && p.NullableString(&f.Name)
		case "arguments":
			if !seen.First(2) {
				return false
			}
			if p.Null() {
				f.Arguments = ""
				return true
			}
			s, ok := p.Str()
			f.Arguments = argText(s)
			return ok
		}
		return p.SkipUnknown(key, "name", "arguments")
	})
}
