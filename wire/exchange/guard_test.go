package exchange

import (
	"strings"
	"testing"
)

// guardKey is the key of the Guard tests: 40 bytes, a public prefix of 8.
const guardKey = "sk-proj-Qm7xV2pL9sKd4Wz8RnT3bYc6HjF5gAe1"

// streamGuard sends pieces through a Guard as the gateway sends a stream's
// chunks: each piece held while Hold says so, then the held ones and it
// sent as Out returns them; the pieces left held at the end go out then.
// It returns what went out, piece by piece, and which pieces were held.
func streamGuard(ks *KeySet, pieces []string) (out []string, held []bool) {
	var g Guard
	g.Reset(ks)
	var queue []string
	for _, p := range pieces {
		g.Next(p)
		queue = append(queue, p)
		hold := g.Hold()
		held = append(held, hold)
		if hold {
			continue
		}
		for _, q := range queue {
			s, _ := g.Out(q)
			out = append(out, s)
		}
		queue = queue[:0]
	}
	for _, q := range queue {
		s, _ := g.Out(q)
		out = append(out, s)
	}
	return out, held
}

func TestGuard_KeyWholeInOnePieceIsReplacedThere(t *testing.T) {
	ks := NewKeySet(guardKey)
	out, held := streamGuard(ks, []string{"Hello. ", "Your key is " + guardKey + ", keep it.", " Bye."})
	want := []string{"Hello. ", "Your key is [redacted], keep it.", " Bye."}
	if strings.Join(out, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", out, want)
	}
	for i, h := range held {
		if h {
			t.Errorf("piece %d was held: a whole key holds nothing back", i)
		}
	}
}

// A key cut in two at each of its positions: the start of it goes out
// only while shorter than HoldLen; from HoldLen on the first piece is
// held until the second shows the key, and the mark takes its place.
func TestGuard_KeySplitInTwoAtEveryPosition(t *testing.T) {
	ks := NewKeySet(guardKey)
	text := "see " + guardKey + " there"
	for cut := 1; cut < len(text); cut++ {
		in := []string{text[:cut], text[cut:]}
		out, held := streamGuard(ks, in)
		j := cut - len("see ") // how much of the key the first piece holds
		leak := ""
		if j > 0 && j < HoldLen {
			leak = guardKey[:j]
		}
		if want := "see " + leak + "[redacted] there"; strings.Join(out, "") != want {
			t.Errorf("cut %d: got %q, want %q", cut, out, want)
		}
		if want := j >= HoldLen && j < len(guardKey); held[0] != want {
			t.Errorf("cut %d (%d bytes of the key in the first piece): held %v, want %v", cut, j, held[0], want)
		}
		if len(out) != 2 {
			t.Errorf("cut %d: %d pieces went out, want 2", cut, len(out))
		}
	}
}

// Cut in three at every pair of positions: the key never goes out whole,
// at most HoldLen-1 of its bytes go out before the mark, and the text
// around it is as it was.
func TestGuard_KeySplitInThreeAtEveryPair(t *testing.T) {
	ks := NewKeySet(guardKey)
	text := "a " + guardKey + " b"
	for i := 1; i < len(text); i++ {
		for j := i + 1; j < len(text); j++ {
			out, _ := streamGuard(ks, []string{text[:i], text[i:j], text[j:]})
			// What went out of the key at the last cut before the key was
			// held: the bytes of it the first two pieces had, under HoldLen.
			leak := 0
			for _, c := range []int{i, j} {
				if n := c - 2; n > 0 && n < HoldLen {
					leak = n
				}
			}
			if want := "a " + guardKey[:leak] + "[redacted] b"; strings.Join(out, "") != want {
				t.Fatalf("cuts %d, %d: got %q, want %q", i, j, out, want)
			}
		}
	}
}

// One byte a piece: the first seven go out, the eighth is held, and the
// mark goes out with the piece that ends the key.
func TestGuard_KeyOneBytePerPiece(t *testing.T) {
	ks := NewKeySet(guardKey)
	var in []string
	for i := range len(guardKey) {
		in = append(in, guardKey[i:i+1])
	}
	out, held := streamGuard(ks, append(in, "!"))
	if got, want := strings.Join(out, ""), guardKey[:HoldLen-1]+"[redacted]!"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for i, h := range held {
		if want := i >= HoldLen-1 && i < len(guardKey)-1; h != want {
			t.Errorf("piece %d: held %v, want %v", i, h, want)
		}
	}
}

func TestGuard_TheStreamsEnd(t *testing.T) {
	ks := NewKeySet(guardKey)
	for _, tc := range []struct {
		name string
		in   []string
		want string
	}{
		{"the key is the last piece", []string{"key: ", guardKey}, "key: [redacted]"},
		{"the key ends the last piece", []string{"key: " + guardKey[:20], guardKey[20:]}, "key: [redacted]"},
		{"a start of the key ends the stream: text", []string{"key: ", guardKey[:20]}, "key: " + guardKey[:20]},
		{"the public prefix ends a piece: held, then text", []string{"keys look like sk-proj-", "..."}, "keys look like sk-proj-..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := streamGuard(ks, tc.in)
			if got := strings.Join(out, ""); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGuard_RepeatedAndOverlappingKeys(t *testing.T) {
	k1 := "alpha-secret-XYZ12345"
	k2 := "XYZ12345-beta-secret" // overlaps k1's end
	ks := NewKeySet(k1, k2, guardKey)
	for _, tc := range []struct {
		name, text, want string
	}{
		{"repeated apart", guardKey + " and " + guardKey, "[redacted] and [redacted]"},
		{"repeated touching: one mark", guardKey + guardKey, "[redacted]"},
		{"two keys overlapping: one mark", "x alpha-secret-XYZ12345-beta-secret y", "x [redacted] y"},
		{"a key inside the other's text", "x " + k1 + " " + k2 + " y", "x [redacted] [redacted] y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ks.Redact(tc.text); got != tc.want {
				t.Errorf("Redact: got %q, want %q", got, tc.want)
			}
			for cut := 1; cut < len(tc.text); cut++ {
				out, _ := streamGuard(ks, []string{tc.text[:cut], tc.text[cut:]})
				got := strings.Join(out, "")
				checkRedacted(t, ks, tc.text, got)
				if strings.Count(got, "[redacted]") < strings.Count(tc.want, "[redacted]") {
					t.Errorf("cut %d: got %q, want at least the marks of %q", cut, got, tc.want)
				}
			}
		})
	}
}

func TestGuard_ShortKeysAndNoKeysChangeNothing(t *testing.T) {
	if ks := NewKeySet("ollama", "", "k"); ks != nil {
		t.Fatalf("a set of keys under 8 bytes is %v, want nil", ks)
	}
	var nilSet *KeySet
	if got := nilSet.Redact("ollama " + guardKey); got != "ollama "+guardKey {
		t.Errorf("a nil set changed %q", got)
	}
	out, held := streamGuard(nil, []string{"sk-proj-", guardKey})
	if strings.Join(out, "") != "sk-proj-"+guardKey || held[0] {
		t.Errorf("a guard of no keys changed the text: %q, held %v", out, held)
	}
	if b, changed := nilSet.RedactJSON(nil, []byte(`"`+guardKey+`"`)); changed || b != nil {
		t.Errorf("a nil set changed JSON: %s", b)
	}
}

// checkRedacted fails unless got is in with its keys redacted: no key of
// ks left, and in's bytes outside keys kept, in order (the marks and at
// most a few bytes of each key aside).
func checkRedacted(t *testing.T, ks *KeySet, in, got string) {
	t.Helper()
	for _, k := range ks.keys {
		if strings.Contains(got, k) {
			t.Fatalf("the key %q went out: in %q, out %q", k, in, got)
		}
	}
	if !keptOutsideKeys(ks, in, strings.ReplaceAll(got, redacted, "")) {
		t.Fatalf("text outside the keys changed: in %q, out %q", in, got)
	}
}

// keptOutsideKeys reports whether out can be made from in by dropping
// only bytes that lie in an occurrence of a key of ks.
func keptOutsideKeys(ks *KeySet, in, out string) bool {
	inKey := make([]bool, len(in))
	for _, k := range ks.keys {
		for _, sp := range occurrences(nil, in, k, 0) {
			for i := sp.lo; i < sp.hi; i++ {
				inKey[i] = true
			}
		}
	}
	// can[j]: out[:j] is made from in[:i] for the i of the loop.
	can := make([]bool, len(out)+1)
	can[0] = true
	for i := 0; i < len(in); i++ {
		next := make([]bool, len(out)+1)
		for j := 0; j <= len(out); j++ {
			if !can[j] {
				continue
			}
			if inKey[i] {
				next[j] = true // dropped
			}
			if j < len(out) && out[j] == in[i] {
				next[j+1] = true // kept
			}
		}
		can = next
	}
	return can[len(out)]
}
