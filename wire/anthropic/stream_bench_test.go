package anthropic

import (
	"testing"

	"github.com/detourhq/detour/wire/internal/wiretest"
)

// BenchmarkStreamEvent is what one content_block_delta of a long answer
// costs the decoder, plain and raw (the gateway's same-dialect
// pass-through).
func BenchmarkStreamEvent(b *testing.B) {
	for _, raw := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "raw"}[raw], func(b *testing.B) {
			s := newStream(wiretest.Repeat(startEvents, deltaEvent), nil, "")
			s.raw = raw
			for range 2 { // message_start, content_block_start
				if _, err := s.Next(); err != nil {
					b.Fatal(err)
				}
			}
			wiretest.EventCost(b, s)
		})
	}
}
