package jsonscan

import "math/bits"

// Strings and indentation are read eight bytes at a time: a prompt of a
// few KiB, or a pretty-printed answer (OpenAI indents its JSON bodies),
// would otherwise be walked a byte per step, in every pass over the body.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	// spaces is eight ' ' bytes: a run of indentation.
	spaces = ones * ' '
)

// word returns the eight bytes of s at j as a little-endian uint64 (one
// load: the compiler combines the byte loads). j+8 <= len(s).
func word(s string, j int) uint64 {
	s = s[j : j+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// special flags (high bit set) the bytes of w a string scan must stop
// at: '"', '\\', a control byte (< 0x20) or a byte of a multi-byte UTF-8
// sequence (>= 0x80). The lowest flag is exact: the subtractions borrow
// only upward from a special byte, so a byte above the first special one
// may be flagged wrongly, none below it.
func special(w uint64) uint64 {
	q := w ^ (ones * '"')
	b := w ^ (ones * '\\')
	return ((q-ones)&^q | (b-ones)&^b | (w - ones*0x20) | w) & highs
}

// plainRun returns the index of the first byte of s at or after j that is
// '"', '\\', below 0x20 or at or above 0x80; len(s) when there is none.
func plainRun(s string, j int) int {
	for ; j+8 <= len(s); j += 8 {
		if m := special(word(s, j)); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for ; j < len(s); j++ {
		if c := s[j]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			return j
		}
	}
	return j
}

// ws skips white space from p.I; the indentation after a newline eight
// spaces at a time.
func (p *Scanner) ws() {
	s, i := p.S, p.I
	for i < len(s) {
		switch s[i] {
		case '\n':
			i++
			for i+8 <= len(s) && word(s, i) == spaces {
				i += 8
			}
		case ' ', '\t', '\r':
			i++
		default:
			p.I = i
			return
		}
	}
	p.I = i
}
