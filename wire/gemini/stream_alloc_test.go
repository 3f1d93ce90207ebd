package gemini

import (
	"strings"
	"testing"

	"github.com/detourhq/detour/wire/internal/wiretest"
)

// A stream is one allocation and the hook that gives its buffer back: the
// stream, its exchange.Stream, its sse.Reader and the JSON-lines reader
// under it share their memory (see the OpenAI adapter's test).
func TestNewStream_IsOneAllocation(t *testing.T) {
	body := wiretest.Repeat("", `data: {"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`+"\n\n")
	allocs := testing.AllocsPerRun(100, func() { newStream(body, nil, "") })
	if allocs > 2 {
		t.Errorf("%.0f allocations to open a stream, want 2 (the stream and its OnEnd)", allocs)
	}
	s := newStream(wiretest.Repeat("", `data: {"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`+"\n\n"), nil, "")
	if c, err := s.Next(); err != nil || !strings.Contains(c.Content, "a") {
		t.Fatalf("Next = %+v, %v", c, err)
	}
}
