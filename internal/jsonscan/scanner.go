package jsonscan

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting SkipValue follows before it gives up
// (reports false) and leaves the input to encoding/json.
const MaxDepth = 64

// Scanner reads JSON tokens from S starting at byte I. The zero value
// with S set reads S from its start. Not safe for concurrent use.
type Scanner struct {
	// S is the input.
	S string
	// I is the offset of the next byte to read.
	I int
}

// WS skips white space.
func (p *Scanner) WS() {
	if p.I < len(p.S) && p.S[p.I] > ' ' {
		return // the common case, kept inline: no white space
	}
	p.ws()
}

// End reports whether only white space is left.
func (p *Scanner) End() bool {
	p.WS()
	return p.I == len(p.S)
}

// Consume reads the byte c.
func (p *Scanner) Consume(c byte) bool {
	p.WS()
	if p.I < len(p.S) && p.S[p.I] == c {
		p.I++
		return true
	}
	return false
}

// Peek returns the next byte after white space, or 0 at the end.
func (p *Scanner) Peek() byte {
	p.WS()
	if p.I < len(p.S) {
		return p.S[p.I]
	}
	return 0
}

// Object reads an object, calling field for each key with the scanner
// just after the colon; field must read the value.
func (p *Scanner) Object(field func(key string) bool) bool {
	if !p.Consume('{') {
		return false
	}
	if p.Consume('}') {
		return true
	}
	for {
		k, ok := p.Key()
		if !ok || !p.Consume(':') || !field(k) {
			return false
		}
		if p.Consume(',') {
			continue
		}
		return p.Consume('}')
	}
}

// Array reads an array, calling elem for each element with the scanner
// at the element; elem must read it. An empty array calls elem never.
func (p *Scanner) Array(elem func() bool) bool {
	if !p.Consume('[') {
		return false
	}
	if p.Consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.Consume(',') {
			continue
		}
		return p.Consume(']')
	}
}

// Key reads an object key made of printable ASCII without escapes (any
// other key is left to encoding/json, which folds case and escapes).
func (p *Scanner) Key() (string, bool) {
	p.WS()
	if p.I >= len(p.S) || p.S[p.I] != '"' {
		return "", false
	}
	for j := plainRun(p.S, p.I+1); j < len(p.S); j = plainRun(p.S, j+1) {
		switch c := p.S[j]; {
		case c == '"':
			k := p.S[p.I+1 : j]
			p.I = j + 1
			return k, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return "", false
		}
	}
	return "", false
}

// Str reads a string value. A plain one (valid UTF-8, no escapes or
// control bytes) is a substring of the input; any other is handed to
// encoding/json so that escapes and invalid UTF-8 read the same.
func (p *Scanner) Str() (string, bool) {
	p.WS()
	if p.I >= len(p.S) || p.S[p.I] != '"' {
		return "", false
	}
	// plain: no escape or control byte; ascii: no byte that needs the
	// UTF-8 check (most strings: one pass, not two).
	plain, ascii := true, true
	for j := plainRun(p.S, p.I+1); j < len(p.S); j = plainRun(p.S, j+1) {
		switch c := p.S[j]; {
		case c == '"':
			tok := p.S[p.I : j+1]
			p.I = j + 1
			v := tok[1 : len(tok)-1]
			if plain && (ascii || utf8.ValidString(v)) {
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
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// Literal reads the bare word lit.
func (p *Scanner) Literal(lit string) bool {
	p.WS()
	if len(p.S)-p.I >= len(lit) && p.S[p.I:p.I+len(lit)] == lit {
		p.I += len(lit)
		return true
	}
	return false
}

// Null reads null.
func (p *Scanner) Null() bool { return p.Literal("null") }

// NullableString reads a string into *dst, or null (which leaves *dst as
// it is, as encoding/json does).
func (p *Scanner) NullableString(dst *string) bool {
	if p.Null() {
		return true
	}
	s, ok := p.Str()
	if ok {
		*dst = s
	}
	return ok
}

// SmallInt reads a non-negative integer of at most 9 digits, written as
// JSON writes integers (no sign, fraction, exponent or leading zero).
func (p *Scanner) SmallInt(dst *int) bool {
	p.WS()
	n, j := 0, p.I
	for j < len(p.S) && j-p.I < 10 && '0' <= p.S[j] && p.S[j] <= '9' {
		n = n*10 + int(p.S[j]-'0')
		j++
	}
	d := j - p.I
	if d == 0 || d > 9 || (d > 1 && p.S[p.I] == '0') {
		return false
	}
	p.I = j
	*dst = n
	return true
}

// Int reads an integer (an optional minus and at most 9 digits, written
// as JSON writes integers: no fraction, exponent or leading zero) into
// *dst.
func (p *Scanner) Int(dst *int) bool {
	neg := p.Peek() == '-'
	if neg {
		p.I++
		if p.I == len(p.S) || p.S[p.I] < '0' || p.S[p.I] > '9' {
			return false
		}
	}
	var n int
	if !p.SmallInt(&n) {
		return false
	}
	if neg {
		n = -n
	}
	*dst = n
	return true
}

// Float reads a number into *dst as encoding/json does (strconv's
// ParseFloat of the token); out of range is left to encoding/json.
func (p *Scanner) Float(dst *float64) bool {
	p.WS()
	start := p.I
	if !p.Number() {
		return false
	}
	f, err := strconv.ParseFloat(p.S[start:p.I], 64)
	if err != nil {
		return false
	}
	*dst = f
	return true
}

// Bool reads true or false.
func (p *Scanner) Bool(dst *bool) bool {
	switch {
	case p.Literal("true"):
		*dst = true
	case p.Literal("false"):
		*dst = false
	default:
		return false
	}
	return true
}

// SkipScalar reads and discards a string, number, true, false or null.
func (p *Scanner) SkipScalar() bool {
	switch c := p.Peek(); {
	case c == '"':
		_, ok := p.Str()
		return ok
	case c == 'n':
		return p.Null()
	case c == 't':
		return p.Literal("true")
	case c == 'f':
		return p.Literal("false")
	case c == '-' || ('0' <= c && c <= '9'):
		return p.Number()
	}
	return false
}

// SkipValue reads and discards any JSON value, checking it as
// encoding/json would, down to MaxDepth levels of nesting.
func (p *Scanner) SkipValue() bool { return p.skip(0) }

func (p *Scanner) skip(depth int) bool {
	switch p.Peek() {
	case '{':
		if depth == MaxDepth {
			return false
		}
		p.I++
		if p.Consume('}') {
			return true
		}
		for {
			if !p.skipString() || !p.Consume(':') || !p.skip(depth+1) {
				return false
			}
			if p.Consume(',') {
				continue
			}
			return p.Consume('}')
		}
	case '[':
		if depth == MaxDepth {
			return false
		}
		p.I++
		if p.Consume(']') {
			return true
		}
		for {
			if !p.skip(depth + 1) {
				return false
			}
			if p.Consume(',') {
				continue
			}
			return p.Consume(']')
		}
	case '"':
		return p.skipString()
	}
	return p.SkipScalar()
}

// skipString reads a string token without decoding it, checking its
// escapes and control bytes as encoding/json does (invalid UTF-8 is
// allowed: encoding/json replaces it when it decodes).
func (p *Scanner) skipString() bool {
	if p.Peek() != '"' {
		return false
	}
	for j := plainRun(p.S, p.I+1); j < len(p.S); j = plainRun(p.S, j+1) {
		switch c := p.S[j]; {
		case c == '"':
			p.I = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			j++
			if j >= len(p.S) {
				return false
			}
			switch p.S[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(p.S) || !hex4(p.S[j+1:j+5]) {
					return false
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

func hex4(s string) bool {
	for i := range 4 {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Raw reads any value and returns its text as it stands in the input, as
// encoding/json fills a json.RawMessage.
func (p *Scanner) Raw() (string, bool) {
	p.WS()
	start := p.I
	if !p.SkipValue() {
		return "", false
	}
	return p.S[start:p.I], true
}

// Number reads a JSON number.
func (p *Scanner) Number() bool {
	p.WS()
	s, j := p.S, p.I
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
	p.I = j
	return true
}

// Folds reports whether key matches one of names ignoring case, as
// strings.EqualFold does: encoding/json would then fill that field, so a
// fast path that does not know key exactly must leave the input to it.
// names are ASCII (Go field names' JSON keys); a key of ASCII alone then
// matches only a name of its own length, which is checked first: a
// chunk's unknown keys meet a dozen names each.
func Folds(key string, names ...string) bool {
	ascii := true
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			ascii = false // folding may match a name of another length (ſ, K)
			break
		}
	}
	for _, n := range names {
		if ascii && len(n) != len(key) {
			continue
		}
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// Ptr reads null into *dst as nil, or a value into a new T with read, as
// encoding/json fills a pointer field.
func Ptr[T any](p *Scanner, dst **T, read func(*T) bool) bool {
	if p.Null() {
		*dst = nil
		return true
	}
	v := new(T)
	if !read(v) {
		return false
	}
	*dst = v
	return true
}

// Seen records by bit which keys of one object were read, so that a
// repeated key (which encoding/json merges or overwrites) can fall back.
type Seen uint

// First marks bit and reports whether it was not marked before.
func (s *Seen) First(bit uint) bool {
	if uint(*s)&bit != 0 {
		return false
	}
	*s |= Seen(bit)
	return true
}

// List reads null (leaving *dst) or an array into a new slice, *dst, with
// room for capHint elements: each element starts as T's zero value, which
// a null element keeps, and elem reads any other.
func List[T any](p *Scanner, dst *[]T, capHint int, elem func(*T) bool) bool {
	if p.Null() {
		return true
	}
	out := make([]T, 0, capHint)
	ok := p.Array(func() bool {
		var zero T
		out = append(out, zero)
		return p.Null() || elem(&out[len(out)-1])
	})
	*dst = out
	return ok
}

// SkipUnknown skips the value of key, a key the struct being filled does
// not read, unless key matches one of its fields (names) when case is
// ignored, or is one of them: encoding/json would fill that field, so the
// input is left to it (false).
func (p *Scanner) SkipUnknown(key string, names ...string) bool {
	return !Folds(key, names...) && p.SkipValue()
}

// PtrInto is Ptr reading into mem, zeroed first, instead of a new T: for a
// decoder that reuses its memory value after value.
func PtrInto[T any](p *Scanner, dst **T, mem *T, read func(*T) bool) bool {
	if p.Null() {
		*dst = nil
		return true
	}
	var zero T
	*mem = zero
	if !read(mem) {
		return false
	}
	*dst = mem
	return true
}
