package anthropic

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// sseResponse is a 200 text/event-stream response with body.
func sseResponse(body io.Reader) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}},
		Body:       io.NopCloser(body),
	}
}

// jsonResponse is a response with a JSON body.
func jsonResponse(status int, body string) *http.Response {
	return &http.Response{
		StatusCode: status,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
	}
}

// chunks stamps id and model on every chunk, as the stream does.
func chunks(id, model string, cs ...llm.Chunk) []llm.Chunk {
	for i := range cs {
		cs[i].ID, cs[i].Model = id, model
	}
	return cs
}

func text(s string) llm.Chunk { return llm.Chunk{Content: s} }

func args(i int, s string) llm.Chunk {
	return llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: i, Arguments: s}}}
}

func finish(r llm.FinishReason, u *llm.Usage) llm.Chunk { return llm.Chunk{FinishReason: r, Usage: u} }

var role = llm.Chunk{Role: llm.RoleAssistant}

func textChunks() []llm.Chunk {
	return chunks("msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK", "claude-3-opus-latest",
		role, text("Hello"), text(" there"), text("!"),
		finish(llm.FinishStop, &llm.Usage{InputTokens: 11, OutputTokens: 6}))
}

func TestDecodeStream_Fixtures(t *testing.T) {
	tests := []struct {
		file    string
		want    []llm.Chunk
		wantErr func(t *testing.T, err error)
	}{
		{file: "text.sse", want: textChunks()},
		{
			file: "tool_use.sse",
			want: chunks("msg_019Q1hrJbZG26Fb9BQhrkHEr", "claude-sonnet-4-20250514",
				role, text("I"), text("'ll check the current weather in Paris for you."),
				llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "toolu_01NRLabsLyVHZPKxbKvkfSMn", Name: "get_weather"}}},
				args(0, `{"locati`), args(0, `on": "P`), args(0, "ar"), args(0, `is"}`),
				finish(llm.FinishToolCalls, &llm.Usage{InputTokens: 377, OutputTokens: 65})),
		},
		{
			file: "haiku_text.sse",
			want: chunks("msg_01BmhrP5qs36cUpH41K9AEqA", "claude-haiku-4-5-20251001",
				role, text("Hello."), finish(llm.FinishStop, &llm.Usage{InputTokens: 15, OutputTokens: 5})),
		},
		{
			file: "haiku_tool_noargs.sse",
			want: chunks("msg_011CffSMgDAcf3XPAEwqHz31", "claude-haiku-4-5-20251001",
				role,
				llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "toolu_01ALU5YJANnVeTwt8XSWz4kE", Name: "get_hostname"}}},
				args(0, "{}"),
				finish(llm.FinishToolCalls, &llm.Usage{InputTokens: 596, OutputTokens: 37})),
		},
		{
			file: "web_search.sse",
			want: chunks("msg_01E32yZLeWKNF2o1k8A6xEHS", "claude-haiku-4-5-20251001",
				role, text("Mark"), text(" Carney"),
				finish(llm.FinishStop, &llm.Usage{InputTokens: 13077, OutputTokens: 67})),
		},
		{
			file: "refusal.sse",
			want: chunks("msg_01RefusalTestMessage123456789", "claude-opus-4-7",
				role, finish(llm.FinishContentFilter, &llm.Usage{InputTokens: 20, OutputTokens: 120})),
		},
		{
			file: "cache_usage.sse",
			want: chunks("msg_01MessageDeltaFields00000001", "claude-sonnet-4-5",
				role, text("Hello there!"), finish(llm.FinishStop, &llm.Usage{InputTokens: 40 + 12 + 7, OutputTokens: 8, CacheReadTokens: 7, CacheWriteTokens: 12})),
		},
		{
			file: "thinking.sse",
			want: chunks("msg_01LgnNJYwNTQ6gVFrbZDj2sE", "claude-sonnet-4-5",
				role, text("The greatest common divisor (GCD) of 1071 and 462 is **21**."), finish(llm.FinishStop, nil)),
		},
		{
			file: "error_midstream.sse",
			want: chunks("msg_01XFDUDYJgAACzvnptvVoYEL", "claude-sonnet-4-5-20250929", role, text("Hello"), text("!")),
			wantErr: func(t *testing.T, err error) {
				pe := wiretest.WantStreamError(t, err, dialect)
				if pe.Type != "overloaded_error" || pe.Message != "Overloaded" {
					t.Errorf("Type %q Message %q, want overloaded_error Overloaded", pe.Type, pe.Message)
				}
			},
		},
	}
	for _, tt := range tests {
		for _, rd := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"one byte", iotest.OneByteReader}} {
			t.Run(tt.file+"/"+rd.name, func(t *testing.T) {
				st, err := DecodeStream(sseResponse(rd.wrap(bytes.NewReader(wiretest.Fixture(t, tt.file)))))
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				got, err := wiretest.Drain(t, st)
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("chunks (-want +got):\n%s", diff)
				}
				if tt.wantErr == nil {
					if err != io.EOF {
						t.Fatalf("end = %v, want io.EOF", err)
					}
				} else {
					tt.wantErr(t, err)
				}
				if _, again := st.Next(); again != err {
					t.Errorf("Next after end = %v, want the same %v", again, err)
				}
			})
		}
	}
}

const (
	evStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
	evText  = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
	evDelta = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n"
	evStop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

func TestDecodeStream_Ends(t *testing.T) {
	reset := errors.New("read tcp 127.0.0.1:1234: connection reset by peer")
	tests := []struct {
		name      string
		body      io.Reader
		truncated bool
		wantIs    error
	}{
		{name: "clean end before message_delta", body: strings.NewReader(evStart + evText), truncated: true, wantIs: io.ErrUnexpectedEOF},
		{name: "clean end after message_delta", body: strings.NewReader(evStart + evText + evDelta), truncated: true, wantIs: io.ErrUnexpectedEOF},
		{name: "reset before message_stop", body: io.MultiReader(strings.NewReader(evStart+evText), iotest.ErrReader(reset)), truncated: true, wantIs: reset},
		{name: "cut inside an event", body: strings.NewReader(evStart + "event: content_block_delta\ndata: {\"type\":\"content_bl"), truncated: true, wantIs: io.ErrUnexpectedEOF},
		{name: "empty body", body: strings.NewReader(""), truncated: true, wantIs: io.ErrUnexpectedEOF},
		{name: "only pings", body: strings.NewReader("event: ping\ndata: {\"type\": \"ping\"}\n\n"), truncated: true, wantIs: io.ErrUnexpectedEOF},
		{name: "complete", body: strings.NewReader(evStart + evText + evDelta + evStop)},
		{name: "message_stop without trailing blank line", body: strings.NewReader(evStart + evText + evDelta + strings.TrimSpace(evStop))},
		{name: "reset after message_stop", body: io.MultiReader(strings.NewReader(evStart+evStop), iotest.ErrReader(reset))},
		{name: "events after message_stop ignored", body: strings.NewReader(evStart + evStop + "data: {not json\n\n")},
		{name: "no event lines", body: strings.NewReader(strings.NewReplacer("event: message_start\n", "", "event: message_stop\n", "").Replace(evStart + evStop))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := DecodeStream(sseResponse(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			_, err = wiretest.Drain(t, st)
			if !tt.truncated {
				if err != io.EOF {
					t.Fatalf("end = %v, want io.EOF", err)
				}
				return
			}
			if !errors.Is(err, llm.ErrStreamTruncated) || !errors.Is(err, tt.wantIs) {
				t.Fatalf("end = %v, want ErrStreamTruncated and %v", err, tt.wantIs)
			}
			if errors.Is(err, io.EOF) {
				t.Fatalf("truncation error %v must not match io.EOF", err)
			}
		})
	}
}

func TestDecodeStream_ErrorEvents(t *testing.T) {
	tests := []struct {
		name, body, typ, msg string
	}{
		{"event error", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}\n\n", "api_error", "Internal server error"},
		{"data type error without event line", "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", "overloaded_error", "Overloaded"},
		{"event error not JSON", "event: error\ndata: upstream went away\n\n", "", "upstream went away"},
		{"event error empty", "event: error\ndata: {}\n\n", "", "error event in stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := DecodeStream(sseResponse(strings.NewReader(evStart + tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := wiretest.Drain(t, st)
			if len(got) != 1 {
				t.Errorf("%d chunks before the error, want 1", len(got))
			}
			pe := wiretest.WantStreamError(t, err, dialect)
			if pe.Type != tt.typ || pe.Message != tt.msg {
				t.Errorf("Type %q Message %q, want %q %q", pe.Type, pe.Message, tt.typ, tt.msg)
			}
		})
	}
}

// One event whose data is not JSON between readable ones is left out and
// counted; the stream fails as before when the output stops being
// readable: two in a row, or one with nothing read before it.
func TestDecodeStream_MalformedEvent(t *testing.T) {
	const (
		block = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		hello = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"
		world = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" world\"}}\n\n"
		bad   = "event: content_block_delta\ndata: {\"type\": nope}\n\n"
		cut   = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\n\n"
	)
	tests := []struct {
		name    string
		body    string
		content string
		skipped int
		fails   bool // ends in ErrMalformed, holding the bad event
	}{
		{name: "one between good ones is skipped", body: evStart + block + hello + bad + world + evDelta + evStop,
			content: "Hello world", skipped: 1},
		{name: "an event cut inside its text between good ones is skipped", body: evStart + block + hello + cut + world + evDelta + evStop,
			content: "Hello world", skipped: 1},
		{name: "two apart are both skipped", body: evStart + bad + block + hello + bad + world + evDelta + evStop,
			content: "Hello world", skipped: 2},
		{name: "the last before message_stop is skipped", body: evStart + block + hello + world + evDelta + bad + evStop,
			content: "Hello world", skipped: 1},
		{name: "two in a row fail", body: evStart + block + hello + bad + bad + world + evDelta + evStop,
			content: "Hello", skipped: 1, fails: true},
		{name: "the first, nothing read before it, fails", body: bad + evStart + block + hello + evDelta + evStop, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := DecodeStream(sseResponse(strings.NewReader(tt.body)))
			err := wiretest.DrainSkipping(t, st, tt.content, tt.skipped)
			if !tt.fails {
				if err != io.EOF {
					t.Errorf("end = %v, want io.EOF", err)
				}
				return
			}
			wiretest.WantMalformed(t, err, ErrMalformed, `{"type": nope}`)
		})
	}
}

func TestDecodeStream_ToolOrdinalsAndOddShapes(t *testing.T) {
	body := evStart + strings.Join([]string{
		// A thinking block at index 0, a tool at index 1, text at 2, a
		// second tool at 3: tool Index counts tool_use blocks only.
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"f","input":{}}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"x\":1}"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":1}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":"pre"}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{}}}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_b","name":"g","input":{"y":2}}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":3}`,
		`event: some_future_event` + "\n" + `data: {"type":"some_future_event"}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"pause_turn"}}`,
		"",
	}, "\n\n") + evStop
	st, _ := DecodeStream(sseResponse(strings.NewReader(body)))
	got, err := wiretest.Drain(t, st)
	if err != io.EOF {
		t.Fatalf("end = %v, want io.EOF", err)
	}
	want := chunks("msg_1", "claude-x",
		role,
		llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "toolu_a", Name: "f"}}},
		args(0, `{"x":1}`),
		text("pre"),
		llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 1, ID: "toolu_b", Name: "g", Arguments: `{"y":2}`}}},
		finish(llm.FinishStop, &llm.Usage{InputTokens: 3, OutputTokens: 1}),
	)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

func TestDecodeStream_JSONBodyServedAsOneChunk(t *testing.T) {
	st, err := DecodeStream(jsonResponse(200, haikuTextJSON))
	if err != nil {
		t.Fatal(err)
	}
	got, err := wiretest.Drain(t, st)
	if err != io.EOF || len(got) != 1 {
		t.Fatalf("got %d chunks, %v; want 1 then io.EOF", len(got), err)
	}
	want := llm.Chunk{ID: "msg_016bat7yTjWZrtqaMMhR8rtg", Model: "claude-haiku-4-5-20251001", Role: llm.RoleAssistant,
		Content: "Hello.", FinishReason: llm.FinishStop, Usage: &llm.Usage{InputTokens: 15, OutputTokens: 5}}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("chunk (-want +got):\n%s", diff)
	}
}

func TestDecodeStream_ErrorStatus(t *testing.T) {
	resp := jsonResponse(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`)
	resp.Header.Set("Retry-After", "7")
	_, err := DecodeStream(resp)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 529 || pe.Type != "overloaded_error" || pe.Header.Get("Retry-After") != "7" || pe.Phase != llm.PhaseResponse {
		t.Fatalf("err = %#v, want a 529 overloaded_error ProviderError with its headers", err)
	}
}

func TestDecodeStream_JSONErrorBodyIn200(t *testing.T) {
	_, err := DecodeStream(jsonResponse(200, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`))
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 200 || pe.Type != "api_error" || pe.Phase != llm.PhaseResponse {
		t.Fatalf("err = %v, want a 200 api_error ProviderError", err)
	}
}

type closeCounter struct {
	io.Reader
	closes int
}

func (c *closeCounter) Close() error { c.closes++; return nil }

func TestStream_CloseIsIdempotentAndStopsNext(t *testing.T) {
	body := &closeCounter{Reader: bytes.NewReader(wiretest.Fixture(t, "text.sse"))}
	resp := sseResponse(nil)
	resp.Body = body
	st, err := DecodeStream(resp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if body.closes != 1 {
		t.Errorf("body closed %d times, want 1", body.closes)
	}
	if _, err := st.Next(); !errors.Is(err, ErrStreamClosed) {
		t.Errorf("Next after Close = %v, want ErrStreamClosed", err)
	}
}

func TestDecodeStream_SniffingDoesNotWaitForMoreBytes(t *testing.T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	go pw.Write([]byte("event: ping\ndata: {\"type\": \"ping\"}\n\n"))
	done := make(chan error, 1)
	go func() {
		_, err := DecodeStream(&http.Response{StatusCode: 200, Header: http.Header{}, Body: pr})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("DecodeStream waited for more bytes to sniff the body")
	}
}

// blockAfter returns its bytes, then blocks until closed (as a network
// read waiting for more would).
type blockAfter struct {
	b    []byte
	done chan struct{}
}

func (r *blockAfter) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		<-r.done
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestStream_ReadyOnlyWhenTheEndIsBuffered checks Ready's promise (Next
// will not wait): true once message_stop is in the buffer, false while
// only events that make no chunk (ping) are.
func TestStream_ReadyOnlyWhenTheEndIsBuffered(t *testing.T) {
	// The recording stops after message_stop's data line; a server ends
	// the event with a blank line, which makes it whole.
	whole := append(bytes.TrimRight(wiretest.Fixture(t, "text.sse"), "\n"), "\n\n"...)
	st, err := DecodeStream(sseResponse(bytes.NewReader(whole)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	if !llm.Ready(st) {
		t.Error("the whole answer is buffered: Ready should say so")
	}
	st.Close()

	start, _, ok := bytes.Cut(whole, []byte("event: content_block_delta"))
	if !ok {
		t.Fatal("fixture has no content_block_delta")
	}
	body := &blockAfter{b: append(start, "event: ping\ndata: {\"type\": \"ping\"}\n\n"...), done: make(chan struct{})}
	defer close(body.done)
	st, err = DecodeStream(sseResponse(body))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	if llm.Ready(st) {
		t.Error("only a ping and no end are buffered: Next would wait, Ready must say false")
	}
}
