package llm

import (
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// script is a Stream that serves chunks, then end on every later call.
type script struct {
	chunks []Chunk
	end    error
	closed int
}

func (s *script) Next() (Chunk, error) {
	if len(s.chunks) == 0 {
		return Chunk{}, s.end
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *script) Close() error { s.closed++; return nil }

func TestAssemble_JoinsChunksIntoOneResponse(t *testing.T) {
	st := &script{end: io.EOF, chunks: []Chunk{
		{Role: RoleAssistant},
		{ID: "id-1", Model: "m-1", Content: "Hel"},
		{ID: "id-2", Model: "m-2", Content: "lo", ToolCalls: []ToolCallDelta{{Index: 3, ID: "call_a", Name: "get", Arguments: `{"a":`}}},
		{ToolCalls: []ToolCallDelta{{Index: 0, ID: "call_b", Name: "put"}, {Index: 3, Arguments: `1}`}}},
		{ToolCalls: []ToolCallDelta{{Index: 0, Arguments: "{}"}}, FinishReason: FinishLength, Usage: &Usage{InputTokens: 1, OutputTokens: 2}},
		{FinishReason: FinishToolCalls, Usage: &Usage{InputTokens: 5, OutputTokens: 7}},
		{Content: "!"},
	}}
	got, err := Assemble(st)
	if err != nil {
		t.Fatal(err)
	}
	want := &Response{ID: "id-1", Model: "m-1", FinishReason: FinishToolCalls, Usage: Usage{InputTokens: 5, OutputTokens: 7},
		Message: Message{Role: RoleAssistant, Content: "Hello!", ToolCalls: []ToolCall{
			{ID: "call_a", Name: "get", Arguments: `{"a":1}`}, {ID: "call_b", Name: "put", Arguments: "{}"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if st.closed != 1 {
		t.Errorf("closed %d times, want 1", st.closed)
	}
}

func TestAssemble_ErrorIsNoAnswer(t *testing.T) {
	cut := errors.New("cut")
	st := &script{end: cut, chunks: []Chunk{{Content: "partial"}}}
	got, err := Assemble(st)
	if got != nil || err != cut {
		t.Fatalf("Assemble = %v, %v; want nil, %v", got, err, cut)
	}
	if st.closed != 1 {
		t.Errorf("closed %d times, want 1", st.closed)
	}
}

func TestResponseStream_IsTheInverseOfAssemble(t *testing.T) {
	for _, r := range []*Response{
		{Message: Message{Role: RoleAssistant}},
		{ID: "x", Model: "m", FinishReason: FinishToolCalls, Usage: Usage{InputTokens: 3, OutputTokens: 4},
			Message: Message{Role: RoleAssistant, Content: "hi", ToolCalls: []ToolCall{
				{ID: "a", Name: "f", Arguments: "{}"}, {ID: "b", Name: "g", Arguments: `{"k":1}`}}}},
	} {
		st := ResponseStream(r)
		c, err := st.Next()
		if err != nil || c.Usage == nil {
			t.Fatalf("first Next = %+v, %v; want a chunk with Usage", c, err)
		}
		for range 2 {
			if _, err := st.Next(); err != io.EOF {
				t.Fatalf("Next after the chunk = %v, want io.EOF", err)
			}
		}
		got, err := Assemble(ResponseStream(r))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	}
}

// skipping is a script that left out events it could not read.
type skipping struct {
	script
	skipped int
}

func (s *skipping) Skipped() int { return s.skipped }

// An answer read from a stream that left events out says how many, and
// so does the stream made of it: the caller can mark it degraded.
func TestAssemble_KeepsTheCountOfSkippedEvents(t *testing.T) {
	st := &skipping{script: script{end: io.EOF, chunks: []Chunk{{Content: "Hel"}, {Content: "!"}}}, skipped: 2}
	got, err := Assemble(st)
	if err != nil {
		t.Fatal(err)
	}
	if got.Skipped != 2 || got.Message.Content != "Hel!" {
		t.Errorf("Assemble = %q, Skipped %d; want \"Hel!\", 2", got.Message.Content, got.Skipped)
	}
	if n := SkippedOf(ResponseStream(got)); n != 2 {
		t.Errorf("SkippedOf(ResponseStream) = %d, want 2", n)
	}
	if n := SkippedOf(&script{}); n != 0 {
		t.Errorf("SkippedOf a stream that is no Skipper = %d, want 0", n)
	}
}
