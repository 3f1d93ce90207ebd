package exchange

import (
	"sort"
	"unicode/utf8"
)

// escape is one escape that decode read: the decoded bytes out[at:at+n]
// came from the source's s[src:src+sn].
type escape struct{ at, n, src, sn int }

// hasEscape reports whether s may hold an escape decode reads.
func hasEscape[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '%' || c == '\\' || c == '&' {
			return true
		}
	}
	return false
}

// decode returns s with one level of escapes decoded, and the escapes, in
// order; nil and nil when s holds none. It reads percent-encoding (%XX),
// the backslash escapes of JSON and JavaScript (\uXXXX, \xXX, \/, \\, \",
// \', \b, \f, \n, \r, \t) and HTML numeric entities (&#NNN;, &#xHHH;);
// anything else is left as it is.
func decode[T ~string | ~[]byte](s T) ([]byte, []escape) {
	var out []byte
	var esc []escape
	copied := 0 // s[:copied] is in out
	for i := 0; i < len(s); {
		c := s[i]
		if c != '%' && c != '\\' && c != '&' {
			i++
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(s))
		}
		out = append(out, s[copied:i]...)
		at := len(out)
		var n int
		if out, n = unescape(out, s[i:]); n == 0 {
			out = out[:at]
			copied = i
			i++
			continue
		}
		esc = append(esc, escape{at: at, n: len(out) - at, src: i, sn: n})
		i += n
		copied = i
	}
	if esc == nil {
		return nil, nil
	}
	return append(out, s[copied:]...), esc
}

// unescape appends the value of the escape s starts with to out, and
// returns its length in s; 0 (and out as it was) when s starts with none.
func unescape[T ~string | ~[]byte](out []byte, s T) ([]byte, int) {
	if len(s) < 2 {
		return out, 0
	}
	switch s[0] {
	case '%':
		if v, ok := hexValue(s, 1, 2); ok {
			return append(out, byte(v)), 3
		}
	case '&':
		return entity(out, s)
	case '\\':
		switch c := s[1]; c {
		case 'u':
			if v, ok := hexValue(s, 2, 4); ok {
				return utf8.AppendRune(out, rune(v)), 6
			}
		case 'x':
			if v, ok := hexValue(s, 2, 2); ok {
				return append(out, byte(v)), 4
			}
		case '/', '\\', '"', '\'':
			return append(out, c), 2
		case 'b':
			return append(out, '\b'), 2
		case 'f':
			return append(out, '\f'), 2
		case 'n':
			return append(out, '\n'), 2
		case 'r':
			return append(out, '\r'), 2
		case 't':
			return append(out, '\t'), 2
		}
	}
	return out, 0
}

// entity appends the value of the HTML numeric entity s starts with
// (&#NNN; or &#xHHH;), and returns its length; 0 when there is none.
func entity[T ~string | ~[]byte](out []byte, s T) ([]byte, int) {
	if len(s) < 4 || s[1] != '#' {
		return out, 0
	}
	base, i := 10, 2
	if s[2] == 'x' || s[2] == 'X' {
		base, i = 16, 3
	}
	v, start := 0, i
	for ; i < len(s) && i-start < 7; i++ {
		d := digitValue(s[i])
		if d < 0 || d >= base {
			break
		}
		v = v*base + d
	}
	if i == start || i >= len(s) || s[i] != ';' || v > utf8.MaxRune {
		return out, 0
	}
	return utf8.AppendRune(out, rune(v)), i + 1
}

// hexValue reads the n hex digits of s at from.
func hexValue[T ~string | ~[]byte](s T, from, n int) (int, bool) {
	if len(s) < from+n {
		return 0, false
	}
	v := 0
	for i := from; i < from+n; i++ {
		d := digitValue(s[i])
		if d < 0 || d > 15 {
			return 0, false
		}
		v = v<<4 | d
	}
	return v, true
}

// digitValue is the value of c as a hex digit; -1 when it is none.
func digitValue(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// origin maps sp, a part of a text decode returned with esc, back to the
// part of the text it was decoded from: whole escapes.
func origin(esc []escape, sp span) span {
	sp.lo, _ = back(esc, sp.lo)
	_, sp.hi = back(esc, sp.hi-1)
	return sp
}

// back returns the part [lo, hi) of the source text that byte i of the
// decoded text came from.
func back(esc []escape, i int) (lo, hi int) {
	k := sort.Search(len(esc), func(k int) bool { return esc[k].at > i }) - 1
	if k < 0 {
		return i, i + 1
	}
	e := esc[k]
	if i < e.at+e.n {
		return e.src, e.src + e.sn
	}
	p := e.src + e.sn + i - (e.at + e.n)
	return p, p + 1
}

// snap widens sp so that neither end falls inside one of the escapes
// esc (in the coordinates of sp's text).
func snap(esc []escape, sp span) span {
	if e, ok := within(esc, sp.lo); ok {
		sp.lo = e.src
	}
	if e, ok := within(esc, sp.hi); ok {
		sp.hi = e.src + e.sn
	}
	return sp
}

// within returns the escape whose source starts before p and ends after
// it.
func within(esc []escape, p int) (escape, bool) {
	k := sort.Search(len(esc), func(k int) bool { return esc[k].src+esc[k].sn > p })
	if k < len(esc) && esc[k].src < p {
		return esc[k], true
	}
	return escape{}, false
}
