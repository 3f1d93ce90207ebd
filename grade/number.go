package grade

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/detourhq/detour/internal/lazyregexp"
)

// Number is a number found in an answer's text.
type Number struct {
	// Value is the number, thousands separators dropped.
	Value float64
	// Text is the number as written after NFKC, sign included.
	Text string
	// Percent is true when a "%" follows it.
	Percent bool
}

// numberRE matches an unsigned decimal number, with or without thousands
// separators ("1,234.5"); the sign is read by hand.
var numberRE = lazyregexp.New(`[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?`)

// currency are the signs that may stand between a minus and the digits
// ("-$3", "−¥300").
const currency = "$¥€£₩"

// Numbers returns the numbers of s in order. s is NFKC-normalized first,
// so full-width digits ("１２．５") read too. A minus ("-" or "−") is a
// sign when it is not right after a letter or digit, so "2027-01-11"
// holds no negative numbers; currency signs between it and the digits are
// skipped.
func Numbers(s string) []Number {
	s = norm.NFKC.String(s)
	var out []Number
	for _, m := range numberRE().FindAllStringIndex(s, -1) {
		start, end := m[0], m[1]
		if start > 0 && (s[start-1] == '.' || isDigitByte(s[start-1])) {
			continue // the tail of "1.2.3" or of a long digit run
		}
		text := strings.ReplaceAll(s[start:end], ",", "")
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			continue
		}
		if negative(s[:start]) {
			v, text = -v, "-"+text
		}
		rest := strings.TrimLeft(s[end:], " ")
		out = append(out, Number{Value: v, Text: text, Percent: strings.HasPrefix(rest, "%")})
	}
	return out
}

// LastNumber returns the last number of s; ok is false when s has none.
func LastNumber(s string) (n Number, ok bool) {
	ns := Numbers(s)
	if len(ns) == 0 {
		return Number{}, false
	}
	return ns[len(ns)-1], true
}

// negative reports whether before (the text ahead of a number) ends in a
// minus sign, past any currency signs and spaces between them.
func negative(before string) bool {
	s := strings.TrimRight(before, currency+" ")
	r, size := utf8.DecodeLastRuneInString(s)
	if r != '-' && r != '−' {
		return false
	}
	s = s[:len(s)-size]
	if s == "" {
		return true
	}
	p, _ := utf8.DecodeLastRuneInString(s)
	return !unicode.IsLetter(p) && !unicode.IsDigit(p) && p != '.' && p != ','
}

// isDigitByte reports whether c is an ASCII digit.
func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }
