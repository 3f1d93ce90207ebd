package openai

import (
	"encoding/json"
	"unicode/utf8"
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
// encoding/json. It handles only exact, known keys (encoding/json also
// matches keys case-insensitively; any other key falls back), each at most
// once, scalar values for the skipped keys, at most one choice, up to
// len(chunkScratch.calls) tool call fragments with string arguments, and
// null for usage and function_call. FuzzChunkDecodeMatchesJSON checks it
// against json.Unmarshal.

// chunkScratch is the backing memory parseChunkFast fills slices and
// pointers of a chatChunk from, reused chunk after chunk.
type chunkScratch struct {
	choices [1]chunkChoice
	calls   [4]chunkToolCall
	index   [4]int
}

// Bits of the keys seen in one object, to fall back on a repeated key
// (encoding/json merges or overwrites; not worth copying here).
const (
	keyID = 1 << iota
	keyObject
	keyModel
	keyChoices
	keyUsage
)

// parseChunkFast decodes data into *cc, which must be zero, with its
// slices and pointers into *sc. It reports false when data is not of the
// handled shape; *cc is then undefined.
func parseChunkFast(data string, cc *chatChunk, sc *chunkScratch) bool {
	p := scanner{s: data}
	var seen int
	ok := p.object(func(key string) bool {
		var bit int
		switch key {
		case "id":
			bit = keyID
		case "object":
			bit = keyObject
		case "model":
			bit = keyModel
		case "choices":
			bit = keyChoices
		case "usage":
			bit = keyUsage
		case "created", "service_tier", "system_fingerprint", "obfuscation", "provider":
			return p.skipScalar()
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch bit {
		case keyID:
			return p.nullableString(&cc.ID)
		case keyObject:
			return p.nullableString(&cc.Object)
		case keyModel:
			return p.nullableString(&cc.Model)
		case keyChoices:
			return p.choices(cc, sc)
		default: // keyUsage
			return p.null()
		}
	})
	if !ok {
		return false
	}
	p.ws()
	return p.i == len(p.s)
}

// choices reads the "choices" array: empty, or one choice object.
func (p *scanner) choices(cc *chatChunk, sc *chunkScratch) bool {
	if !p.consume('[') {
		return false
	}
	if p.consume(']') {
		cc.Choices = sc.choices[:0]
		return true
	}
	ch := &sc.choices[0]
	*ch = chunkChoice{}
	const (
		kIndex = 1 << iota
		kDelta
		kFinish
	)
	var seen int
	ok := p.object(func(key string) bool {
		var bit int
		switch key {
		case "index":
			bit = kIndex
		case "delta":
			bit = kDelta
		case "finish_reason":
			bit = kFinish
		case "logprobs", "native_finish_reason":
			return p.skipScalar()
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch bit {
		case kIndex:
			return p.smallInt(&ch.Index)
		case kDelta:
			return p.delta(&ch.Delta, sc)
		default:
			return p.nullableString(&ch.FinishReason)
		}
	})
	if !ok || !p.consume(']') {
		return false
	}
	cc.Choices = sc.choices[:1]
	return true
}

// delta reads a choice's delta object.
func (p *scanner) delta(d *chunkDelta, sc *chunkScratch) bool {
	const (
		kRole = 1 << iota
		kContent
		kRefusal
		kToolCalls
		kFunctionCall
	)
	var seen int
	return p.object(func(key string) bool {
		var bit int
		switch key {
		case "role":
			bit = kRole
		case "content":
			bit = kContent
		case "refusal":
			bit = kRefusal
		case "tool_calls":
			bit = kToolCalls
		case "function_call":
			bit = kFunctionCall
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch bit {
		case kRole:
			return p.nullableString(&d.Role)
		case kContent:
			var s string
			if !p.nullableString(&s) {
				return false
			}
			d.Content = textContent(s)
			return true
		case kRefusal:
			if p.null() {
				return true
			}
			s, ok := p.str()
			if ok {
				d.Refusal = &s
			}
			return ok
		case kToolCalls:
			return p.null() || p.toolCalls(d, sc)
		default: // function_call: null only
			return p.null()
		}
	})
}

// toolCalls reads a delta's "tool_calls" array.
func (p *scanner) toolCalls(d *chunkDelta, sc *chunkScratch) bool {
	if !p.consume('[') {
		return false
	}
	d.ToolCalls = sc.calls[:0]
	if p.consume(']') {
		return true
	}
	for n := 0; ; n++ {
		if n == len(sc.calls) {
			return false
		}
		tc := &sc.calls[n]
		*tc = chunkToolCall{}
		if !p.toolCall(tc, &sc.index[n]) {
			return false
		}
		d.ToolCalls = sc.calls[:n+1]
		if p.consume(',') {
			continue
		}
		return p.consume(']')
	}
}

// toolCall reads one tool call fragment; index backs tc.Index.
func (p *scanner) toolCall(tc *chunkToolCall, index *int) bool {
	const (
		kIndex = 1 << iota
		kID
		kType
		kFunction
	)
	var seen int
	return p.object(func(key string) bool {
		var bit int
		switch key {
		case "index":
			bit = kIndex
		case "id":
			bit = kID
		case "type":
			bit = kType
		case "function":
			bit = kFunction
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch bit {
		case kIndex:
			if p.null() {
				return true
			}
			if !p.smallInt(index) {
				return false
			}
			tc.Index = index
			return true
		case kID:
			return p.nullableString(&tc.ID)
		case kType:
			return p.skipScalar()
		default:
			return p.null() || p.function(&tc.Function)
		}
	})
}

// function reads a tool call's function object with string arguments.
func (p *scanner) function(f *respFunction) bool {
	const (
		kName = 1 << iota
		kArguments
	)
	var seen int
	return p.object(func(key string) bool {
		var bit int
		switch key {
		case "name":
			bit = kName
		case "arguments":
			bit = kArguments
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		if bit == kName {
			return p.nullableString(&f.Name)
		}
		var s string
		if !p.nullableString(&s) {
			return false
		}
		f.Arguments = argText(s)
		return true
	})
}

// scanner reads JSON tokens from s at i. Every method skips leading
// white space and reports false when the input is not what it handles.
type scanner struct {
	s string
	i int
}

func (p *scanner) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// consume reads the byte c.
func (p *scanner) consume(c byte) bool {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// object reads an object, calling field for each key with the scanner
// just after the colon; field reads the value.
func (p *scanner) object(field func(key string) bool) bool {
	if !p.consume('{') {
		return false
	}
	if p.consume('}') {
		return true
	}
	for {
		k, ok := p.key()
		if !ok || !p.consume(':') || !field(k) {
			return false
		}
		if p.consume(',') {
			continue
		}
		return p.consume('}')
	}
}

// key reads an object key made of printable ASCII without escapes.
func (p *scanner) key() (string, bool) {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", false
	}
	for j := p.i + 1; j < len(p.s); j++ {
		switch c := p.s[j]; {
		case c == '"':
			k := p.s[p.i+1 : j]
			p.i = j + 1
			return k, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return "", false
		}
	}
	return "", false
}

// str reads a string value. A plain one (valid UTF-8, no escapes or
// control bytes) is a substring of the input; any other is handed to
// encoding/json so that escapes and invalid UTF-8 read the same.
func (p *scanner) str() (string, bool) {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", false
	}
	plain := true
	for j := p.i + 1; j < len(p.s); j++ {
		switch c := p.s[j]; {
		case c == '"':
			tok := p.s[p.i : j+1]
			p.i = j + 1
			v := tok[1 : len(tok)-1]
			if plain && utf8.ValidString(v) {
				return v, true
			}
			var s string
			if json.Unmarshal([]byte(tok), &s) != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			plain = false
			j++ // the escaped byte cannot end the string
		case c < 0x20:
			plain = false
		}
	}
	return "", false
}

// literal reads the bare word lit.
func (p *scanner) literal(lit string) bool {
	p.ws()
	if len(p.s)-p.i >= len(lit) && p.s[p.i:p.i+len(lit)] == lit {
		p.i += len(lit)
		return true
	}
	return false
}

func (p *scanner) null() bool { return p.literal("null") }

// nullableString reads a string into *dst, or null (which leaves *dst as
// it is, as encoding/json does).
func (p *scanner) nullableString(dst *string) bool {
	if p.null() {
		return true
	}
	s, ok := p.str()
	if ok {
		*dst = s
	}
	return ok
}

// smallInt reads a non-negative integer of at most 9 digits, written as
// JSON writes integers (no sign, fraction, exponent or leading zero).
func (p *scanner) smallInt(dst *int) bool {
	p.ws()
	n, j := 0, p.i
	for j < len(p.s) && j-p.i < 10 && '0' <= p.s[j] && p.s[j] <= '9' {
		n = n*10 + int(p.s[j]-'0')
		j++
	}
	d := j - p.i
	if d == 0 || d > 9 || (d > 1 && p.s[p.i] == '0') {
		return false
	}
	p.i = j
	*dst = n
	return true
}

// skipScalar reads and discards a string, number, true, false or null.
func (p *scanner) skipScalar() bool {
	p.ws()
	if p.i >= len(p.s) {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		_, ok := p.str()
		return ok
	case c == 'n':
		return p.null()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	}
	return false
}

// number reads a JSON number.
func (p *scanner) number() bool {
	s, j := p.s, p.i
	digits := func() int {
		k := j
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(s) && s[j] == '-' {
		j++
	}
	if j < len(s) && s[j] == '0' {
		j++
	} else if digits() == 0 {
		return false
	}
	if j < len(s) && s[j] == '.' {
		j++
		if digits() == 0 {
			return false
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if digits() == 0 {
			return false
		}
	}
	p.i = j
	return true
}
