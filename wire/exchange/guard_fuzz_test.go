package exchange

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// fuzzText makes a text of tmpl: each 0 byte becomes k1, each 1 byte k2,
// and '[' becomes '(' so that no mark comes from the input itself.
func fuzzText(tmpl, k1, k2 string) string {
	var b strings.Builder
	for i := 0; i < len(tmpl); i++ {
		switch c := tmpl[i]; c {
		case 0:
			b.WriteString(k1)
		case 1:
			b.WriteString(k2)
		case '[':
			b.WriteByte('(')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// fuzzCuts cuts text into pieces of the lengths cuts gives (each byte
// cut%24, 0 keeping an empty piece), the rest in one piece.
func fuzzCuts(text string, cuts []byte) []string {
	var out []string
	for _, c := range cuts {
		n := min(int(c%24), len(text))
		out = append(out, text[:n])
		text = text[n:]
	}
	return append(out, text)
}

// FuzzGuard: for any text around two keys (overlapping, repeated, or a
// prefix of the other when the fuzzer makes them so) cut into pieces
// anywhere, no key goes out whole, the text outside the keys goes out
// unchanged, at most HoldLen-1 bytes of a key go out before its mark
// when the key was cut, and none when no cut falls inside a key.
func FuzzGuard(f *testing.F) {
	f.Add("a \x00 b", []byte(guardKey), []byte("XYZ12345-beta"), []byte{3, 5, 9})
	f.Add("\x00\x00\x01", []byte("abcabcabcab"), []byte("cabcabcabca"), []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Add("x\x00\x01y", []byte("alpha-secret-XYZ1"), []byte("XYZ1-beta-secret"), []byte{10, 12, 7})
	f.Add("sk-proj-\x00", []byte(guardKey), []byte(guardKey[:12]), []byte{8, 8})
	f.Fuzz(func(t *testing.T, tmpl string, s1, s2, cuts []byte) {
		k1, k2 := strings.ReplaceAll(fuzzKey(s1), "[", "("), strings.ReplaceAll(fuzzKey(s2), "[", "(")
		if k1 == "" || len(tmpl) > 200 || len(cuts) > 200 {
			return
		}
		ks := NewKeySet(k1, k2)
		in := fuzzText(tmpl, k1, k2)
		pieces := fuzzCuts(in, cuts)
		out, _ := streamGuard(ks, pieces)
		got := strings.Join(out, "")
		if len(out) != len(pieces) {
			t.Fatalf("%d pieces in, %d out", len(pieces), len(out))
		}
		checkRedacted(t, ks, in, got)
		if ks.Redact(in) == in && got != in {
			t.Fatalf("no key in %q, yet it went out as %q", in, got)
		}
		// Keys that touch across a cut get a mark each, not one.
		if !cutInsideKey(ks, pieces) && collapseMarks(got) != ks.Redact(in) {
			t.Fatalf("no cut inside a key: got %q, want %q (pieces %q)", got, ks.Redact(in), pieces)
		}
		if n := keyBytesOut(ks, in, got); n > (HoldLen-1)*strings.Count(got, redacted) {
			t.Fatalf("%d bytes of keys went out beside %d marks: in %q, out %q (pieces %q)", n, strings.Count(got, redacted), in, got, pieces)
		}
	})
}

// collapseMarks writes marks that follow each other as one.
func collapseMarks(s string) string {
	for strings.Contains(s, redacted+redacted) {
		s = strings.ReplaceAll(s, redacted+redacted, redacted)
	}
	return s
}

// cutInsideKey reports whether a boundary between pieces falls strictly
// inside an occurrence of a key.
func cutInsideKey(ks *KeySet, pieces []string) bool {
	in := strings.Join(pieces, "")
	var spans []span
	for _, k := range ks.keys {
		spans = occurrences(spans, in, k, 0)
	}
	at := 0
	for _, p := range pieces[:len(pieces)-1] {
		at += len(p)
		for _, sp := range spans {
			if sp.lo < at && at < sp.hi {
				return true
			}
		}
	}
	return false
}

// keyBytesOut is how many bytes of the keys' occurrences in in went out
// in got: got without its marks is in less the key bytes dropped.
func keyBytesOut(ks *KeySet, in, got string) int {
	inKey := 0
	covered := make([]bool, len(in))
	for _, k := range ks.keys {
		for _, sp := range occurrences(nil, in, k, 0) {
			for i := sp.lo; i < sp.hi; i++ {
				covered[i] = true
			}
		}
	}
	for _, c := range covered {
		if c {
			inKey++
		}
	}
	kept := len(strings.ReplaceAll(got, redacted, ""))
	return kept - (len(in) - inKey)
}

// FuzzRedactJSON: a JSON string holding keys, with bytes escaped as JSON
// allows (\u00XX for any, \/ for a slash, as the mask says), comes out
// of RedactJSON as JSON whose value is the text with its keys redacted,
// exactly.
func FuzzRedactJSON(f *testing.F) {
	f.Add("key: \x00, again \x00\x01.", []byte(jsonKey), []byte(guardKey), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add("\n\x00\"\\\x01\t", []byte(jsonKey), []byte("abcdefgh"), []byte{255, 255, 255, 255})
	f.Add("\\\x00", []byte("nnnnnnnn"), []byte("u0041u0041"), []byte{})
	f.Fuzz(func(t *testing.T, tmpl string, s1, s2, mask []byte) {
		k1, k2 := fuzzKey(s1), fuzzKey(s2)
		if k1 == "" || len(tmpl) > 500 {
			return
		}
		ks := NewKeySet(k1, k2)
		text := fuzzText(tmpl, k1, k2)
		lit := escapeAsMasked(text, mask)
		event := `data: {"a":1,"text":"` + lit + `"}` + "\n\n"
		if !json.Valid([]byte(event[len("data: ") : len(event)-2])) {
			return // tmpl was not UTF-8: not an answer a provider sends
		}
		b, changed := ks.RedactJSON(nil, []byte(event))
		out := string(b)
		if !changed {
			out = event
		}
		data, ok := strings.CutPrefix(out, "data: ")
		if !ok || !strings.HasSuffix(data, "\n\n") {
			t.Fatalf("the framing changed: %q", out)
		}
		var v struct{ Text string }
		if err := json.Unmarshal([]byte(strings.TrimSuffix(data, "\n\n")), &v); err != nil {
			t.Fatalf("not JSON after: %v\n in: %q\nout: %q", err, event, out)
		}
		var want string
		json.Unmarshal([]byte(`"`+lit+`"`), &want) //nolint:errcheck // valid, checked above
		if want = ks.Redact(want); v.Text != want {
			t.Fatalf("value %q, want %q\n in: %q\nout: %q", v.Text, want, event, out)
		}
	})
}

// escapeAsMasked writes text inside a JSON string: what must be escaped
// escaped, and each byte the mask's bit for it sets written as \u00XX
// (or \/ for a slash) when JSON allows.
func escapeAsMasked(text string, mask []byte) string {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		set := len(mask) > 0 && mask[(i/8)%len(mask)]&(1<<(i%8)) != 0
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || (set && c < 0x7f):
			if c == '/' && i%2 == 0 {
				b.WriteString(`\/`)
				continue
			}
			fmt.Fprintf(&b, `\u%04X`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
