package gemini

import (
	"testing"

	"github.com/detourhq/detour/wire/internal/wiretest"
)

// benchEvent is a text chunk as Gemini's printer writes it.
const benchEvent = `data: {"candidates": [{"content": {"parts": [{"text": "word "}],"role": "model"},"index": 0}],"modelVersion": "gemini-2.5-flash","responseId": "7LeDaKv0AqXO_uMPh72GgAk"}` + "\r\n\r\n"

// BenchmarkStreamEvent is what one chunk of a long answer costs the
// decoder, plain and raw (the gateway's same-dialect pass-through).
func BenchmarkStreamEvent(b *testing.B) {
	for _, raw := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "raw"}[raw], func(b *testing.B) {
			s := newStream(wiretest.Repeat(benchEvent, benchEvent), nil, "")
			s.raw = raw
			if _, err := s.Next(); err != nil { // the first chunk, with the role
				b.Fatal(err)
			}
			wiretest.EventCost(b, s)
		})
	}
}
