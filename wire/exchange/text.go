package exchange

import (
	"strings"
	"unicode/utf8"
)

// MaxErrorText caps, in runes, the message taken from an error body that
// is not JSON.
const MaxErrorText = 300

// ErrorText is the message of an error body that is not JSON (a proxy's
// page, a plain-text error): for an HTML page (a body starting with '<'
// once trimmed), the text of its first <title>, else of its first <h1>,
// with tags removed and white space folded; else the first non-empty line
// of the body's text (tags replaced by spaces); cut with CutText. It is ""
// for an empty body, and never panics, whatever the bytes.
func ErrorText(body []byte) string {
	s := strings.TrimSpace(string(body))
	if strings.HasPrefix(s, "<") {
		for _, tag := range []string{"title", "h1"} {
			if t := strings.Join(strings.Fields(StripTags(Element(s, tag), ' ')), " "); t != "" {
				return CutText(t)
			}
		}
		s = StripTags(s, ' ')
	}
	return FirstLine(s)
}

// Element returns what lies between the first "<tag" of an HTML page and
// the next "</tag" after that start tag's '>', tags matched ignoring ASCII
// case; "" when there is no such element.
func Element(page, tag string) string {
	low := asciiLower(page)
	i := strings.Index(low, "<"+tag)
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(low[i:], '>')
	if j < 0 {
		return ""
	}
	rest := page[i+j+1:]
	k := strings.Index(low[i+j+1:], "</"+tag)
	if k < 0 {
		return ""
	}
	return rest[:k]
}

// asciiLower lowercases ASCII letters only, so that every index into the
// result is an index into s (strings.ToLower may change byte lengths on
// invalid UTF-8, which once made the title search slice out of range).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// StripTags removes everything from each '<' to the next '>', writing sep
// in place of each tag that ends.
func StripTags(s string, sep byte) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
			b.WriteByte(sep)
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FirstLine returns the first line of s that is not blank, trimmed and cut
// with CutText; "" when there is none.
func FirstLine(s string) string {
	for line := range strings.Lines(s) {
		if t := strings.TrimSpace(line); t != "" {
			return CutText(t)
		}
	}
	return ""
}

// CutText makes s valid UTF-8 (invalid bytes become U+FFFD) and cuts it to
// at most MaxErrorText runes, the last being "…" when it was cut.
func CutText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= MaxErrorText {
		return s
	}
	return string([]rune(s)[:MaxErrorText-1]) + "…"
}
