package openai

import (
	"io"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

const (
	roleEvent    = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	contentEvent = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}` + "\n\n"
)

// A raw stream's chunks borrow the reader's buffer: what they keep past
// the next Next (ID, Model, Role) is theirs; Raw and Content hold until
// then, and Clone keeps them.
func TestStream_RawChunksBorrowOnlyWhatTheyMay(t *testing.T) {
	body := roleEvent + strings.Replace(contentEvent, `"model":"gpt-4.1"`, `"model":"gpt-4.1-mini"`, 1) + contentEvent
	s := newStream(io.NopCloser(strings.NewReader(body)), nil, "")
	s.raw = true
	first, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	kept := first.Clone()
	second, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != "chatcmpl-1" || first.Model != "gpt-4.1" || first.Role != "assistant" {
		t.Errorf("after the next chunk, the first's id %q model %q role %q: they must not borrow", first.ID, first.Model, first.Role)
	}
	if kept.Raw != strings.TrimPrefix(strings.TrimSpace(roleEvent), "data: ") {
		t.Errorf("cloned Raw changed under the next chunk: %q", kept.Raw)
	}
	if second.Model != "gpt-4.1-mini" || second.Content != "word " {
		t.Errorf("second chunk: model %q content %q", second.Model, second.Content)
	}
	third, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	if second.Model != "gpt-4.1-mini" || third.Model != "gpt-4.1" {
		t.Errorf("models %q, %q: a change of model must give a string of its own", second.Model, third.Model)
	}
}

// A raw stream, the gateway's same-dialect pass-through, makes no garbage
// per event: thousands of slow streams then cost no garbage collections.
func TestStream_RawMakesNoGarbagePerEvent(t *testing.T) {
	s := newStream(wiretest.Repeat(roleEvent, contentEvent), nil, "")
	s.raw = true
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	wiretest.NoGarbagePerEvent(t, s, "word ")
}

// A stream is one allocation and the hook that gives its buffer back: the
// stream, its exchange.Stream and its sse.Reader share their memory, so
// that each event touches one place (thousands of slow streams each wake
// every few tens of milliseconds, their memory long out of the caches).
func TestNewStream_IsOneAllocation(t *testing.T) {
	body := wiretest.Repeat(roleEvent, contentEvent)
	allocs := testing.AllocsPerRun(100, func() { newStream(body, nil, "") })
	if allocs > 2 {
		t.Errorf("%.0f allocations to open a stream, want 2 (the stream and its OnEnd)", allocs)
	}
}

// A JSON answer's text borrows the body it was read from (the decoder's
// own); its id and model are copies.
func TestDecodeBody_IDAndModelOutliveTheBody(t *testing.T) {
	decode := func(b []byte) (*llm.Response, error) { return decodeBody(nil, b) }
	body := []byte(`{"id":"chatcmpl-9","object":"chat.completion","model":"gpt-4.1-2025-04-14",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`)
	wiretest.IDAndModelOutliveTheBody(t, decode, body, "chatcmpl-9", "gpt-4.1-2025-04-14")
}
