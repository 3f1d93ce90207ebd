package exchange

import (
	"cmp"
	"encoding/base64"
	"slices"
	"sync"
)

// The matching rule of Redact: which text stands for a key.
//
// A key of n bytes (n >= minKeyLen) is found wherever a run of at least
// runLen(n) consecutive bytes of it appears, in any ASCII case:
//
//	runLen(n) = max(8, min(ceil(n/2), 12))
//
// so a key of 8 to 16 bytes is found from any 8 of its bytes in a row (an
// 8-byte key only whole), a 20-byte key from any 10, and a key of 23 bytes
// or more from any 12. Twelve characters of a random key carry more than
// 60 bits: text that was not made from the key holds such a run by chance
// about never, so false positives stay rare (a provider's masked hint,
// "sk-proj-abc…wxyz", is left alone), while an echo cut by a few
// characters, or a good part of the key, is still found. A shorter run is
// not taken for the key: at most runLen(n)-1 bytes of it in a row can be
// left, never enough to identify it. A provider's fixed prefix is part of
// the key: where it has 12 characters or more (Anthropic's
// "sk-ant-api03-"), text holding it is redacted, a masked hint included.
//
// The text is also read with its escapes decoded, up to maxDepth levels
// deep (escape.go): percent-encoding (%2F, %2f), JSON and JavaScript
// escapes (\/, \uXXXX, \xXX, \n, ...) and HTML numeric entities (&#47;,
// &#x2F;), so the key JSON-escaped, URL-encoded, or both, is found too;
// what is replaced is the escaped text it came from. Base64 of the key
// (the Authorization header's "Bearer KEY", "KEY", Basic "user:KEY", in
// the standard or URL alphabet, padded or not: the key at any alignment in
// the encoded bytes) is found from a run of b64RunLen(n) characters of its
// encoding, case sensitive, as base64 is.
//
// A match is widened over the rest of the token that holds it (letters,
// digits and the key's own punctuation; for base64, its alphabet and
// trailing padding), so a key with a character changed leaves no piece of
// itself beside the mark, and a replacement never cuts an escape in half:
// JSON stays JSON.
const (
	// minKeyLen is the length of the shortest key Redact looks for.
	minKeyLen = 8
	// maxRunLen is the longest run of a key runLen ever asks for.
	maxRunLen = 12
)

// runLen is the shortest run of a key of n bytes that stands for the key.
func runLen(n int) int { return max(minKeyLen, min((n+1)/2, maxRunLen)) }

// b64RunLen is the shortest run of a base64 encoding of a key of n bytes
// that stands for the key: as many characters as encode runLen(n) bytes.
func b64RunLen(n int) int { return (runLen(n)*4 + 2) / 3 }

// span is a part [lo, hi) of a text that stands for the key.
type span struct {
	lo, hi int
	b64    bool // found as base64
}

// matcher finds one key in text. Built once per key (matcherFor), it is
// read-only after: safe for concurrent use.
type matcher struct {
	plain runs // runs of the key, ASCII case folded
	b64   runs // runs of the key's base64 encodings, exact
	// tok holds the bytes of a token that holds the key, over which a
	// plain match is widened.
	tok [256]bool
}

// newMatcher returns the matcher of key, which has at least minKeyLen
// bytes.
func newMatcher(key string) *matcher {
	m := &matcher{}
	m.plain.init(runLen(len(key)), &foldTable, []string{key})
	var cores []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for skip := 0; skip < 3; skip++ {
			// The bytes of key[skip:] that make whole 3-byte groups: their
			// encoding is part of any encoding of the key that starts them
			// on a group boundary, whatever comes before and after.
			k := key[skip:]
			cores = append(cores, enc.EncodeToString([]byte(k[:len(k)/3*3])))
		}
	}
	w := b64RunLen(len(key))
	for _, c := range cores {
		w = min(w, len(c))
	}
	m.b64.init(w, &sameTable, cores)
	m.tok = alnum
	for i := 0; i < len(key); i++ {
		if c := key[i]; keyPunct[c] {
			m.tok[c] = true
		}
	}
	return m
}

// maxDepth is how many levels of escapes find decodes: enough for a key
// URL-encoded, then JSON-escaped, in a JSON body.
const maxDepth = 3

// find returns the parts of s that stand for the key, widened, sorted and
// merged; nil when there are none.
func find[T ~string | ~[]byte](m *matcher, s T) []span {
	var found []span
	scan(m, s, func(sp span) { found = append(found, sp) })
	var levels [][]escape // levels[i] maps level i+1 back to level i (s is level 0)
	if hasEscape(s) {
		d, esc := decode(s)
		for esc != nil {
			levels = append(levels, esc)
			scan(m, d, func(sp span) {
				for i := len(levels) - 1; i >= 0; i-- {
					sp = origin(levels[i], sp)
				}
				found = append(found, sp)
			})
			if len(levels) == maxDepth || !hasEscape(d) {
				break
			}
			d, esc = decode(d)
		}
	}
	if found == nil {
		return nil
	}
	var esc1 []escape
	if levels != nil {
		esc1 = levels[0]
	}
	return settle(m, s, found, esc1)
}

// scan reports the runs of the key, plain and base64, in b.
func scan[T ~string | ~[]byte](m *matcher, b T, hit func(span)) {
	scanRuns(&m.plain, b, false, hit)
	scanRuns(&m.b64, b, true, hit)
}

// settle sorts found (parts of s), widens each over its token, never
// below the end of the one before (so the whole takes one pass over s),
// snaps its ends out of any escape of esc they fall inside, and merges
// the parts that touch.
func settle[T ~string | ~[]byte](m *matcher, s T, found []span, esc []escape) []span {
	slices.SortFunc(found, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	out := found[:0]
	for _, sp := range found {
		floor := 0
		if n := len(out); n > 0 {
			floor = out[n-1].hi
		}
		tok := &m.tok
		if sp.b64 {
			tok = &b64Tok
		}
		for sp.lo > floor && tok[s[sp.lo-1]] {
			sp.lo--
		}
		sp.hi = max(sp.hi, floor)
		for sp.hi < len(s) && tok[s[sp.hi]] {
			sp.hi++
		}
		for sp.b64 && sp.hi < len(s) && s[sp.hi] == '=' {
			sp.hi++
		}
		sp = snap(esc, sp)
		if n := len(out); n > 0 && sp.lo <= out[n-1].hi {
			out[n-1].lo = min(out[n-1].lo, sp.lo)
			out[n-1].hi = max(out[n-1].hi, sp.hi)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// maxMatchers bounds the matchers matcherFor keeps.
const maxMatchers = 64

// matchers keeps the matcher of each key Redact was given, so that the
// few hundred hashes of one are computed once, not per error.
var matchers struct {
	mu sync.Mutex
	m  map[string]*matcher // guarded by mu; emptied when it reaches maxMatchers
}

// matcherFor returns the matcher of key, which has at least minKeyLen
// bytes.
func matcherFor(key string) *matcher {
	matchers.mu.Lock()
	defer matchers.mu.Unlock()
	if m, ok := matchers.m[key]; ok {
		return m
	}
	if len(matchers.m) >= maxMatchers || matchers.m == nil {
		matchers.m = make(map[string]*matcher)
	}
	m := newMatcher(key)
	matchers.m[key] = m
	return m
}

// Byte tables: foldTable lowers ASCII letters, sameTable maps each byte to
// itself; alnum holds ASCII letters and digits, keyPunct the punctuation
// keys are made of, b64Tok the base64 alphabets (padding aside).
var (
	foldTable, sameTable = byteTables()
	alnum                = byteSet("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
	keyPunct             = byteSet("-_.+/=~")
	b64Tok               = byteSet("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/-_")
)

func byteTables() (fold, same [256]byte) {
	for i := range 256 {
		c := byte(i)
		same[i] = c
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		fold[i] = c
	}
	return fold, same
}

func byteSet(s string) (set [256]bool) {
	for i := 0; i < len(s); i++ {
		set[s[i]] = true
	}
	return set
}
