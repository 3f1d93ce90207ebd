package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

// BenchmarkGuardOut_Chunk is the cost per streamed chunk of keeping six
// keys out (guardOut around the OpenAI encoder: the guards and the check
// of the event's bytes), beside the encoder alone: a chunk of a few
// words, no key in it.
func BenchmarkGuardOut_Chunk(b *testing.B) {
	ks := exchange.NewKeySet("sk-proj-"+strings.Repeat("Qm7xV2pL9sKd", 13), "sk-or-v1-"+strings.Repeat("0a1b2c3d", 8),
		"sk-ant-api03-"+strings.Repeat("x7Q-k9Z_", 11), "detour-client-key-for-tests-0001",
		"admin-"+strings.Repeat("a1", 16), "metrics-"+strings.Repeat("m2", 16))
	c := &call{id: "0123456789abcdef", start: time.Unix(1733000000, 0), cr: chatRequest{model: "m"}}
	words := []string{" the quick", " brown fox", " jumps", " over the", " lazy dog", "s."}
	for _, guarded := range []bool{false, true} {
		name := "encoder alone"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			var enc streamEncoder = &oaStream{c: c}
			if guarded {
				g := &guardOut{}
				g.init(enc, ks)
				enc = g
			}
			buf := make([]byte, 0, 1024)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				buf = enc.chunk(buf[:0], llm.Chunk{Content: words[i%len(words)], Model: "gpt-4.1-mini"})
				i++
			}
		})
	}
}

// FuzzRawText: rewriting the text of any raw event never panics; when it
// rewrites, a JSON event stays JSON, holds the new text, and changed only
// the one string that held the old.
func FuzzRawText(f *testing.F) {
	f.Add(`{"choices":[{"index":0,"delta":{"content":"key sk-pr"}}]}`, "key sk-pr", "key [redacted]")
	f.Add(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\u0041\/b"}}`, "aA/b", "")
	f.Add(`{"candidates":[{"content":{"parts":[{"text":"x"},{"text":"y"}]}}]}`, "xy", "z")
	f.Add(`{"text":"x","content":"x"}`, "x", "y")
	f.Fuzz(func(t *testing.T, raw, was, now string) {
		out := rawText(raw, contentNames, was, now)
		if out == "" || !json.Valid([]byte(raw)) {
			return
		}
		if !json.Valid([]byte(out)) {
			t.Fatalf("not JSON after:\n in: %s\nout: %s", raw, out)
		}
		var before, after any
		json.Unmarshal([]byte(raw), &before)           //nolint:errcheck // valid
		json.Unmarshal([]byte(out), &after)            //nolint:errcheck // valid
		var wrote string                               // now as JSON holds it: invalid UTF-8 as U+FFFD
		json.Unmarshal(jsonw.String(nil, now), &wrote) //nolint:errcheck // valid
		want := 1
		if wrote == was {
			want = 0 // nothing to see
		}
		if n := changedStrings(before, after, was, wrote); n != want {
			t.Fatalf("%d strings changed from %q to %q, want %d:\n in: %s\nout: %s", n, was, now, want, raw, out)
		}
	})
}

// changedStrings counts the strings of a that are was where b has now,
// and fails the count (-1) when a and b differ otherwise.
func changedStrings(a, b any, was, now string) int {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(bm) != len(a) {
			return -1
		}
		n := 0
		for k, v := range a {
			c := changedStrings(v, bm[k], was, now)
			if c < 0 {
				return -1
			}
			n += c
		}
		return n
	case []any:
		ba, ok := b.([]any)
		if !ok || len(ba) != len(a) {
			return -1
		}
		n := 0
		for i := range a {
			c := changedStrings(a[i], ba[i], was, now)
			if c < 0 {
				return -1
			}
			n += c
		}
		return n
	case string:
		switch {
		case b == a:
			return 0
		case a == was && b == now:
			return 1
		}
		return -1
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		return -1
	}
	return 0
}
