package exchange

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// oracleEscapes matches what oracleDecode reads: the escapes decode
// reads, found by a regular expression rather than by hand.
var oracleEscapes = regexp.MustCompile(`%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|\\[/\\"'bfnrt]|&#[0-9]{1,7};|&#[xX][0-9A-Fa-f]{1,7};`)

// oracleDecode decodes one level of escapes in s, independently of
// decode.
func oracleDecode(s string) string {
	return oracleEscapes.ReplaceAllStringFunc(s, func(e string) string {
		switch {
		case e[0] == '%':
			v, _ := strconv.ParseUint(e[1:], 16, 8)
			return string([]byte{byte(v)})
		case e[0] == '&':
			digits, base := strings.TrimSuffix(e[2:], ";"), 10
			if digits[0] == 'x' || digits[0] == 'X' {
				digits, base = digits[1:], 16
			}
			v, _ := strconv.ParseUint(digits, base, 32)
			if v > utf8.MaxRune {
				return e
			}
			return string(rune(v))
		case e[1] == 'u':
			v, _ := strconv.ParseUint(e[2:], 16, 32)
			return string(rune(v))
		case e[1] == 'x':
			v, _ := strconv.ParseUint(e[2:], 16, 8)
			return string([]byte{byte(v)})
		}
		if c := strings.IndexByte("bfnrt", e[1]); c >= 0 {
			return string("\b\f\n\r\t"[c])
		}
		return e[1:]
	})
}

// leaksOf says which forms of key s holds, by a slow reading of its own:
// a run of runLen(len(key)) of the key's bytes in any case, or a run of
// b64RunLen characters of a base64 encoding of the key (either alphabet,
// any alignment), in s or in s with one to maxDepth levels of escapes decoded.
// Each "[redacted]" is first made a NUL, so that the text on its two sides
// never joins.
func leaksOf(s, key string) []string {
	views := []string{strings.ReplaceAll(s, redacted, "\x00")}
	for range maxDepth {
		views = append(views, oracleDecode(views[len(views)-1]))
	}
	n := runLen(len(key))
	var cores []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for skip := range 3 {
			k := key[skip:]
			cores = append(cores, enc.EncodeToString([]byte(k[:len(k)/3*3])))
		}
	}
	w := b64RunLen(len(key))
	for _, c := range cores {
		w = min(w, len(c))
	}
	var found []string
	lowKey := strings.ToLower(key)
	for level, v := range views {
		low := strings.ToLower(v)
		for i := 0; i+n <= len(key); i++ {
			if strings.Contains(low, lowKey[i:i+n]) {
				found = append(found, fmt.Sprintf("level %d: run %q", level, key[i:i+n]))
				break
			}
		}
		for _, c := range cores {
			for i := 0; i+w <= len(c); i++ {
				if strings.Contains(v, c[i:i+w]) {
					found = append(found, fmt.Sprintf("level %d: base64 run %q", level, c[i:i+w]))
					break
				}
			}
		}
	}
	return found
}

func TestLeaksOf_SeesEveryFormAndNothingElse(t *testing.T) {
	for _, f := range forms(redactKey) {
		if leaksOf("x "+f.text+" y", redactKey) == nil {
			t.Errorf("%s: the oracle misses %q", f.name, f.text)
		}
	}
	if l := leaksOf("x "+redacted+" y "+redactKey[:5]+redacted+redactKey[5:11], redactKey); l != nil {
		t.Errorf("the oracle finds %v in pieces shorter than the rule", l)
	}
}

// keyAlphabet is what fuzzKey makes keys of: the characters of real keys.
const keyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+/=~"

// fuzzKey turns seed into a key of keyAlphabet, 8 to 80 bytes; "" when
// seed is shorter than 8.
func fuzzKey(seed []byte) string {
	if len(seed) < minKeyLen {
		return ""
	}
	seed = seed[:min(len(seed), 80)]
	b := make([]byte, len(seed))
	for i, c := range seed {
		b[i] = keyAlphabet[int(c)%len(keyAlphabet)]
	}
	return string(b)
}

// encodings are the ways transform writes a key; user is the user name
// of the Basic forms.
var encodings = []func(k, user string) string{
	func(k, _ string) string { return k },
	func(k, _ string) string { return strings.ReplaceAll(k, "/", `\/`) },
	func(k, _ string) string { return every(k, `\u%04x`) },
	func(k, _ string) string { return url.QueryEscape(k) },
	func(k, _ string) string { return every(k, "%%%02X") },
	func(k, _ string) string { return every(k, "%%%02x") },
	func(k, _ string) string { return every(k, "&#x%x;") },
	func(k, _ string) string { return every(k, `\x%02x`) },
	func(k, _ string) string { return url.QueryEscape(url.QueryEscape(k)) },
	func(k, _ string) string { return every(url.QueryEscape(k), `\u%04x`) },
	func(k, _ string) string { return base64.StdEncoding.EncodeToString([]byte("Bearer " + k)) },
	func(k, _ string) string { return base64.RawURLEncoding.EncodeToString([]byte("Bearer " + k)) },
	func(k, _ string) string { return base64.RawStdEncoding.EncodeToString([]byte(k)) },
	func(k, u string) string { return base64.StdEncoding.EncodeToString([]byte(u + ":" + k)) },
	func(k, u string) string { return base64.RawURLEncoding.EncodeToString([]byte(u + ":" + k)) },
}

// transform writes key the way how and cut say: cut by cut%4 bytes at
// the start or the end (cut&4), in its case, upper, lower or alternating
// (how%4), then in one of encodings (how/4).
func transform(key string, how, cut uint8, user string) string {
	c := int(cut % 4)
	k := key[:len(key)-c]
	if cut&4 != 0 {
		k = key[c:]
	}
	switch how % 4 {
	case 1:
		k = strings.ToUpper(k)
	case 2:
		k = strings.ToLower(k)
	case 3:
		b := []byte(k)
		for i := range b {
			if i%2 == 0 {
				b[i] = strings.ToUpper(string(b[i]))[0]
			}
		}
		k = string(b)
	}
	return encodings[int(how/4)%len(encodings)](k, user)
}

// FuzzRedactNeverLeaks: for any key of real keys' characters and any text
// around it, the key written in any of the ways transform knows leaves
// RedactString's output without a form of it leaksOf finds, whether the
// text is plain or a JSON string; and the redacted JSON stays JSON.
func FuzzRedactNeverLeaks(f *testing.F) {
	f.Add([]byte(redactKey), "upstream said: ", ". Try again.", uint8(0), uint8(0), "user")
	for how := range uint8(len(encodings) * 4) {
		f.Add([]byte("sk-proj-aB3dE6gH9jK2aB3dE6gH"), `{"error":{"message":"key `, `"}}`, how, how%8, "u")
	}
	f.Add([]byte("0123456789abcdef"), `\n%`, `\u00`, uint8(9), uint8(5), "")
	f.Add([]byte("abcdefgh"), "&#", ";", uint8(24), uint8(0), "admin")
	f.Fuzz(func(t *testing.T, seed []byte, before, after string, how, cut uint8, user string) {
		key := fuzzKey(seed)
		if key == "" || len(before)+len(after)+len(user) > 4<<10 {
			return // the oracle is slow: keep each input quick
		}
		in := before + transform(key, how, cut, user) + after
		if out := RedactString(in, key); leaksOf(out, key) != nil {
			t.Fatalf("key %q\n in: %q\nout: %q\nleaks %v", key, in, out, leaksOf(out, key))
		}
		j, _ := json.Marshal(in)
		out := RedactString(string(j), key)
		if !json.Valid([]byte(out)) {
			t.Fatalf("key %q: the redacted JSON is not JSON\n in: %s\nout: %s", key, j, out)
		}
		if leaks := leaksOf(out, key); leaks != nil {
			t.Fatalf("key %q\n in: %s\nout: %s\nleaks %v", key, j, out, leaks)
		}
	})
}
