package gemini

import (
	"io"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
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

// pieces reads its data a few bytes at a time, so that each read writes
// over the reader's buffer where the last event's data was.
type pieces struct {
	data []byte
	n    int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	k := copy(b[:min(len(b), p.n)], p.data)
	p.data = p.data[k:]
	return k, nil
}

func (p *pieces) Close() error { return nil }

// The decoder reads each event's data where it came (a view of the
// reader's buffer) and copies what a chunk keeps: a raw stream's chunks
// read in 7-byte pieces keep their own events whole after the reads that
// followed them.
func TestStream_RawChunksOutliveTheNextRead(t *testing.T) {
	events := []string{
		`{"candidates":[{"content":{"parts":[{"text":"one"}],"role":"model"}}],"modelVersion":"gemini-2.5-flash"}`,
		`{"candidates":[{"content":{"parts":[{"text":"two"}],"role":"model"}}],"modelVersion":"gemini-2.5-flash"}`,
		`{"candidates":[{"content":{"parts":[{"text":"three"}],"role":"model"},"finishReason":"STOP"}],"modelVersion":"gemini-2.5-flash"}`,
	}
	var body strings.Builder
	for _, e := range events {
		body.WriteString("data: " + e + "\r\n\r\n")
	}
	s := newStream(&pieces{data: []byte(body.String()), n: 7}, nil, "")
	s.raw = true
	var got []llm.Chunk
	for {
		c, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	if len(got) != len(events) {
		t.Fatalf("%d chunks, want %d", len(got), len(events))
	}
	for i, c := range got {
		if c.Raw != events[i] || c.Model != "gemini-2.5-flash" {
			t.Errorf("chunk %d: Raw %q, Model %q", i, c.Raw, c.Model)
		}
	}
	if got[2].Content != "three" || got[2].FinishReason != llm.FinishStop {
		t.Errorf("last chunk %+v", got[2])
	}
}
