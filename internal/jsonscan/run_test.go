package jsonscan

import (
	"strings"
	"testing"
)

// plainRunByByte is plainRun's definition, one byte at a time.
func plainRunByByte(s string, j int) int {
	for ; j < len(s); j++ {
		if c := s[j]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			return j
		}
	}
	return j
}

// wsByByte is WS's definition, one byte at a time.
func wsByByte(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// TestPlainRun_StopsAtEveryStopByte puts each stop byte, and each byte
// next to one in value, at every offset of strings up to 40 bytes, among
// neighbours that make the word arithmetic borrow: plainRun must stop
// where the byte loop stops.
func TestPlainRun_StopsAtEveryStopByte(t *testing.T) {
	probes := []byte{'"', '\\', 0x00, 0x01, 0x1f, 0x80, 0xc3, 0xff, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 'a'}
	fills := []byte{'a', ' ', 0x21, 0x7f, 0x23, 0x5d}
	for n := range 41 {
		for _, fill := range fills {
			for k := range n {
				for _, c := range probes {
					b := []byte(strings.Repeat(string(fill), n))
					b[k] = c
					s := string(b)
					for j := range min(n, 10) {
						if got, want := plainRun(s, j), plainRunByByte(s, j); got != want {
							t.Fatalf("plainRun(%q, %d) = %d, want %d", s, j, got, want)
						}
					}
				}
			}
		}
	}
}

// FuzzRunsMatchByteLoops holds plainRun and WS, which read eight bytes at
// a time, to their definitions read a byte at a time.
func FuzzRunsMatchByteLoops(f *testing.F) {
	f.Add("abcdefghijklmnop\"", uint8(0))
	f.Add("0123456789abcdef\\ghi", uint8(3))
	f.Add("0123456789\x1fabcdef", uint8(1))
	f.Add("héllo wörld, a longer line", uint8(0))
	f.Add("{\n        \"a\": 1}", uint8(1))
	f.Add("                 \t\r\n                x", uint8(0))
	f.Add(" \n  \t       x        y", uint8(2))
	f.Fuzz(func(t *testing.T, s string, j uint8) {
		at := min(int(j), len(s))
		if got, want := plainRun(s, at), plainRunByByte(s, at); got != want {
			t.Fatalf("plainRun(%q, %d) = %d, want %d", s, at, got, want)
		}
		p := Scanner{S: s, I: at}
		p.WS()
		if want := wsByByte(s, at); p.I != want {
			t.Fatalf("WS over %q from %d stopped at %d, want %d", s, at, p.I, want)
		}
	})
}

// BenchmarkStr reads a 1 KiB ASCII prompt, as a request body carries one.
func BenchmarkStr(b *testing.B) {
	s := `"` + strings.Repeat("lorem ipsum ", 85) + `"`
	for b.Loop() {
		p := Scanner{S: s}
		if _, ok := p.Str(); !ok {
			b.Fatal("not read")
		}
	}
}

// BenchmarkSkipIndented skips a pretty-printed answer, as OpenAI sends one.
func BenchmarkSkipIndented(b *testing.B) {
	s := "{\n  \"choices\": [\n    {\n      \"index\": 0,\n      \"message\": {\n        \"role\": \"assistant\",\n" +
		"        \"content\": \"Hello there, how may I help you today?\",\n        \"refusal\": null\n      },\n" +
		"      \"finish_reason\": \"stop\"\n    }\n  ],\n  \"usage\": {\n    \"prompt_tokens\": 7,\n" +
		"    \"completion_tokens\": 7\n  }\n}"
	for b.Loop() {
		p := Scanner{S: s}
		if !p.SkipValue() {
			b.Fatal("not read")
		}
	}
}
