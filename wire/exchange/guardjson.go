package exchange

import (
	"bytes"
	"strings"
)

// RedactJSON appends s to dst with each key of ks replaced by
// "[redacted]", and reports true; when s holds no key it returns dst as
// it came and false, and nothing is written. s is JSON text, or
// server-sent events whose data are JSON (what an answer is on the wire).
// A key is found as its bytes, and also with any of them escaped as JSON
// allows without need (\/, \u002F, \u0041; a provider's encoder may write
// either): then the text around it is written with those escapes decoded,
// which is the same JSON. A match that would begin or end inside an
// escape (key "nabc..." in `\nabc...`) is not the key, and is left alone,
// so what comes out is JSON whenever s was: the mark holds neither a
// quote nor a backslash.
//
// When s holds no key (the common case) the cost is one search per key
// and one look at each backslash, with no allocation.
func (ks *KeySet) RedactJSON(dst, s []byte) ([]byte, bool) {
	if ks == nil || len(s) < minKeyLen || !ks.mayHold(s) {
		return dst, false
	}
	out := ks.redactJSON(dst, s)
	if out == nil {
		return dst, false
	}
	return out, true
}

// mayHold reports whether s holds a key's probe (then maybe the key), or
// an escape that a key may hide behind: one search a key (a probe begins
// with a byte rare in answers, so the search skips far), and a look at
// each backslash. A single pass over s looking up every byte in a table
// was tried: slower up to 8 keys.
func (ks *KeySet) mayHold(s []byte) bool {
	text := Borrow(s) // read here only
	for _, p := range ks.probes {
		if strings.Contains(text, p) {
			return true // maybe: redactJSON tells
		}
	}
	for i := bytes.IndexByte(s, '\\'); i >= 0 && i+1 < len(s); {
		if _, _, ok := ks.needless(s, i); ok {
			return true
		}
		i += 2 // past the escaped byte: `\\\\` is one backslash
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			break
		}
		i += j
	}
	return false
}

// needless reads the escape at s[i] (a backslash that begins one) and
// reports whether it stands for a byte of a key that needs no escape: c,
// written in n bytes.
func (ks *KeySet) needless(s []byte, i int) (c byte, n int, ok bool) {
	if i+1 >= len(s) {
		return 0, 0, false
	}
	switch s[i+1] {
	case '/':
		return '/', 2, ks.esc['/']
	case 'u':
		if i+6 <= len(s) && s[i+2] == '0' && s[i+3] == '0' {
			hi, lo := digitValue(s[i+4]), digitValue(s[i+5])
			if hi >= 0 && lo >= 0 {
				c = byte(hi<<4 | lo)
				return c, 6, ks.esc[c]
			}
		}
	}
	return 0, 0, false
}

// redactJSON appends s to dst with the keys replaced, and the needless
// escapes decoded, when it holds a key; nil when it holds none.
func (ks *KeySet) redactJSON(dst, s []byte) []byte {
	// plain is s with the needless escapes of key bytes decoded; esc marks
	// the bytes of plain that are inside an escape left as it was.
	plain := make([]byte, 0, len(s))
	esc := make([]bool, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			plain, esc = append(plain, s[i]), append(esc, false)
			i++
			continue
		}
		if c, n, ok := ks.needless(s, i); ok {
			plain, esc = append(plain, c), append(esc, false)
			i += n
			continue
		}
		n := 2
		if i+1 < len(s) && s[i+1] == 'u' {
			n = 6
		}
		n = min(n, len(s)-i)
		plain = append(plain, s[i:i+n]...)
		esc = append(esc, false) // the backslash itself cannot begin a key
		for range n - 1 {
			esc = append(esc, true)
		}
		i += n
	}
	text := Borrow(plain)
	var spans []span
	for _, k := range ks.keys {
		for _, sp := range occurrences(nil, text, k, 0) {
			// Neither end inside an escape: the mark never leaves half of
			// one (a lone `"` of `\"` would end the string).
			if !esc[sp.lo] && (sp.hi == len(esc) || !esc[sp.hi]) {
				spans = append(spans, sp)
			}
		}
	}
	if spans == nil {
		return nil
	}
	return append(dst, replace(plain, mergeSpans(spans))...)
}
