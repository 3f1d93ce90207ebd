package openai

import (
	"bytes"
	"io"
	"testing"

	"github.com/detourhq/detour/wire/internal/wiretest"
)

// BenchmarkDecodeStream decodes recorded streams end to end (SSE reading
// and chunk decoding): each fixture as it is, and "long", the text fixture
// with its content chunk repeated as in a typical few-hundred-token answer.
func BenchmarkDecodeStream(b *testing.B) {
	text := wiretest.Fixture(b, "text_usage.sse")
	events := bytes.SplitAfter(text, []byte("\n\n"))
	var long []byte
	long = append(long, events[0]...)
	for range 200 {
		long = append(long, events[1]...)
	}
	for _, ev := range events[4:] {
		long = append(long, ev...)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"text_usage", text},
		{"tool_calls", wiretest.Fixture(b, "tool_calls.sse")},
		{"long", long},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			b.ReportAllocs()
			for b.Loop() {
				st, err := DecodeStream(sseResponse(bytes.NewReader(tc.body)))
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := st.Next(); err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
				}
				st.Close()
			}
		})
	}
}

// BenchmarkStreamEvent is what one content event of a long answer costs,
// plain and raw (the gateway's same-dialect pass-through): the per-event
// part of BenchmarkDecodeStream's "long", alone.
func BenchmarkStreamEvent(b *testing.B) {
	for _, raw := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "raw"}[raw], func(b *testing.B) {
			s := newStream(wiretest.Repeat(roleEvent, contentEvent), nil, "")
			s.raw = raw
			if _, err := s.Next(); err != nil { // the role chunk
				b.Fatal(err)
			}
			wiretest.EventCost(b, s)
		})
	}
}
