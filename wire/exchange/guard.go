package exchange

import (
	"cmp"
	"slices"
	"strings"
)

// The keys of an answer: what keeps the secrets detour holds out of the
// answers it passes on (gateway), where an upstream that echoes its
// Authorization header, by fault or on purpose, would put them.
//
// Unlike Redact, which reads an error's text for any trace of one key
// (case, runs, escapes, base64), this is exact and cheap, because it
// runs on every answer and every streamed piece: a key is found where its
// bytes stand in the answer's text as they are, and in JSON also escaped
// as JSON allows (\/ and \u00XX; RedactJSON). A key written in another
// case, cut short, spelled out or encoded by the model is text, not a key:
// no exact rule can stop an upstream set on leaking a key it holds, so
// this stops an echo, which is what a faulty upstream sends.

// HoldLen is how long the start of a key at the end of a streamed piece
// must be for a Guard to ask that the piece be held back until the next
// one shows whether the key goes on. A shorter start goes out at once: at
// most HoldLen-1 = 7 bytes of a key reach a client before the rest of it
// is seen, and those are no more than the public prefix of its provider's
// format ("sk-proj", "sk-ant-", "AIzaSy", "gsk_"), which names the
// provider and nothing secret. Holding from the first byte would hold
// back every piece that ends in "s".
const HoldLen = 8

// KeySet is the set of secrets an answer must not carry. Built once per
// config (NewKeySet), it is read-only after: safe for concurrent use. A
// nil *KeySet holds no key; its methods then change nothing.
type KeySet struct {
	keys []string // each minKeyLen (8) bytes or more, distinct
	// probes[i] is the 8 bytes of keys[i] that a search finds fastest
	// (probe): where the key is, its probe is.
	probes []string
	// shortest and longest are the lengths of the shortest and the
	// longest key; first holds the keys' first bytes.
	shortest, longest int
	first             [256]bool
	// esc holds the bytes of the keys that JSON may escape without
	// need: every printable ASCII byte but the quote and the backslash.
	esc [256]bool
}

// NewKeySet returns the set of keys, leaving out those shorter than 8
// bytes (local placeholders such as "ollama", which Redact leaves alone
// for the same reason: replacing them would mangle ordinary words) and
// repeats; nil when none is left.
func NewKeySet(keys ...string) *KeySet {
	ks := &KeySet{}
	for _, k := range keys {
		if len(k) >= minKeyLen && !slices.Contains(ks.keys, k) {
			ks.keys = append(ks.keys, k)
		}
	}
	if len(ks.keys) == 0 {
		return nil
	}
	ks.shortest = len(ks.keys[0])
	for _, k := range ks.keys {
		ks.shortest, ks.longest = min(ks.shortest, len(k)), max(ks.longest, len(k))
		ks.first[k[0]] = true
		ks.probes = append(ks.probes, probe(k))
		for i := 0; i < len(k); i++ {
			if c := k[i]; c > 0x20 && c < 0x7f && c != '"' && c != '\\' {
				ks.esc[c] = true
			}
		}
	}
	return ks
}

// probe returns the 8 bytes of key (minKeyLen or more) whose first byte
// is the least common in answers (rarity): a search skips from one place
// of a probe's first byte to the next, and "sk-" keys begin with a byte
// found in nearly every word.
func probe(key string) string {
	best := 0
	for i := 1; i+minKeyLen <= len(key); i++ {
		if rarity(key[i]) > rarity(key[best]) {
			best = i
		}
	}
	return key[best : best+minKeyLen]
}

// rarity ranks how seldom c comes in an answer's events (English text in
// JSON: its keys, ids and numbers), from 0 (everywhere: lower-case
// letters of common words, space, quotes, JSON's punctuation, 0 and 1 of
// timestamps) to 3 (upper-case letters and the symbols keys may hold).
func rarity(c byte) int {
	switch {
	case 'A' <= c && c <= 'Z' || c == '~' || c == '+' || c == '=' || c == '/':
		return 3
	case '2' <= c && c <= '9' || strings.IndexByte("jkqvxz", c) >= 0:
		return 2
	case strings.IndexByte("bfgmpwy_-.", c) >= 0:
		return 1
	}
	return 0
}

// Len returns the number of keys in ks.
func (ks *KeySet) Len() int {
	if ks == nil {
		return 0
	}
	return len(ks.keys)
}

// Redact returns s with every occurrence of a key of ks replaced by
// "[redacted]" (occurrences that overlap or touch by one); s itself,
// with no allocation, when it holds none.
func (ks *KeySet) Redact(s string) string {
	if ks == nil || len(s) < minKeyLen {
		return s
	}
	var spans []span
	for _, k := range ks.keys {
		spans = occurrences(spans, s, k, 0)
	}
	if spans == nil {
		return s
	}
	return string(replace(s, mergeSpans(spans)))
}

// occurrences appends to spans every place key stands in s, overlapping
// ones too, that ends after from.
func occurrences(spans []span, s, key string, from int) []span {
	for i := max(0, from-len(key)+1); i <= len(s)-len(key); i++ {
		j := strings.Index(s[i:], key)
		if j < 0 {
			break
		}
		i += j
		spans = append(spans, span{lo: i, hi: i + len(key)})
	}
	return spans
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	out := spans[:1]
	for _, sp := range spans[1:] {
		if last := &out[len(out)-1]; sp.lo <= last.hi {
			last.hi = max(last.hi, sp.hi)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// Guard finds the keys of a KeySet in one text that reaches it in pieces:
// the content of a streamed answer, or one tool call's arguments. A key
// may be cut anywhere between pieces, even into many. For each piece in
// turn the caller calls Next; then, while Hold reports true, it holds the
// piece back, and once Hold is false it sends each held piece, and this
// one, as Out returns it. Out replaces each key with "[redacted]" (keys
// that overlap or touch by one, one mark): in the piece where the key
// begins, or, when that piece went out before the key was whole, in the
// first piece that had not. So of a key cut between pieces at most
// HoldLen-1 bytes reach the client (the start of it in a piece that went
// out before the rest came), and a whole key in one piece none; the text
// around keys is passed on unchanged. A start of a key that the text
// never completes (the stream ends, or the text goes on otherwise) is
// text, and goes out as it was.
//
// The work per piece is, per key, one search of the piece for the key and
// one look at its last len(key)-1 bytes for the key's first byte; no
// allocation unless a piece ends in the start of a key or holds one.
// The zero Guard finds nothing; Reset readies one. Not safe for
// concurrent use.
type Guard struct {
	ks *KeySet
	// win is the text's longest end that begins a key: where a key not
	// yet whole may have started (at most the longest key's length - 1).
	win []byte
	buf []byte // win and the next piece, when win is not empty
	// end is the text's length so far; sent how much of it went out
	// (Out), the offset of the first piece not out.
	end, sent int64
	// spans are the parts of the text that stand for a key and are not
	// all out yet, sorted and apart.
	spans []guardSpan
}

// guardSpan is a part [lo, hi) of a Guard's text that stands for a key;
// marked once its "[redacted]" went out.
type guardSpan struct {
	lo, hi int64
	marked bool
}

// Reset readies g for a new text, looking for the keys of ks (none when
// nil); it keeps g's buffers.
func (g *Guard) Reset(ks *KeySet) {
	*g = Guard{ks: ks, win: g.win[:0], buf: g.buf[:0], spans: g.spans[:0]}
}

// Next reads the text's next piece p.
func (g *Guard) Next(p string) {
	base := g.end
	g.end += int64(len(p))
	if g.ks == nil || p == "" {
		return
	}
	x := p
	if len(g.win) > 0 {
		g.buf = append(append(g.buf[:0], g.win...), p...)
		x = Borrow(g.buf) // read here only
		base -= int64(len(g.win))
	}
	var found []span
	if len(x) >= g.ks.shortest { // most pieces are shorter than any key
		from := len(x) - len(p) // a key that ended before p was found then
		for i, k := range g.ks.keys {
			if strings.Contains(x[max(0, from-len(k)+1):], g.ks.probes[i]) {
				found = occurrences(found, x, k, from)
			}
		}
	}
	for _, sp := range found {
		g.spans = append(g.spans, guardSpan{lo: base + int64(sp.lo), hi: base + int64(sp.hi)})
	}
	if found != nil {
		g.settle()
	}
	g.win = append(g.win[:0], x[len(x)-g.ks.startsKey(x):]...)
}

// startsKey returns the length of the longest end of x that is the start
// of a key of ks, shorter than that key; 0 when none is. It looks at the
// last bytes of x for a key's first byte, and only there compares.
func (ks *KeySet) startsKey(x string) int {
	for i := max(0, len(x)-ks.longest+1); i < len(x); i++ {
		if !ks.first[x[i]] {
			continue
		}
		for _, k := range ks.keys {
			if len(x)-i < len(k) && strings.HasPrefix(k, x[i:]) {
				return len(x) - i
			}
		}
	}
	return 0
}

// settle sorts g's spans and merges those that overlap or touch; a merged
// span is marked if a part of it was.
func (g *Guard) settle() {
	slices.SortFunc(g.spans, func(a, b guardSpan) int { return cmp.Compare(a.lo, b.lo) })
	out := g.spans[:1]
	for _, sp := range g.spans[1:] {
		if last := &out[len(out)-1]; sp.lo <= last.hi {
			last.hi = max(last.hi, sp.hi)
			last.marked = last.marked || sp.marked
			continue
		}
		out = append(out, sp)
	}
	g.spans = out
}

// Hold reports whether the text read so far ends in HoldLen bytes or
// more of the start of a key: the piece Next just read must not go out
// until the next one shows whether the key goes on.
func (g *Guard) Hold() bool { return len(g.win) >= HoldLen }

// Out returns p, the oldest piece Next read that has not gone out, as it
// goes out: with each key found so far replaced. changed is false when p
// is returned as it came (no allocation). The caller sends it: g counts
// it as out.
func (g *Guard) Out(p string) (out string, changed bool) {
	start := g.sent
	end := start + int64(len(p))
	g.sent = end
	if len(g.spans) == 0 {
		return p, false
	}
	var b []byte
	last := 0
	for i := range g.spans {
		sp := &g.spans[i]
		if sp.hi <= start || sp.lo >= end {
			continue
		}
		lo, hi := int(max(sp.lo, start)-start), int(min(sp.hi, end)-start)
		b = append(b, p[last:lo]...)
		if !sp.marked {
			b = append(b, redacted...)
			sp.marked = true
		}
		last, changed = hi, true
	}
	g.spans = slices.DeleteFunc(g.spans, func(sp guardSpan) bool { return sp.hi <= g.sent })
	if !changed {
		return p, false
	}
	return string(append(b, p[last:]...)), true
}
