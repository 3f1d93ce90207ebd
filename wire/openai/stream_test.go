package openai

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

const (
	textID   = "chatcmpl-BwoiPTGRbKkY5rncfaM0s9KtWrq5N"
	textGPT  = "gpt-4.1-2025-04-14"
	toolID   = "chatcmpl-BQb0iSFzE1zz1OVhaqg3u2Yqn1Ezf"
	toolNano = "gpt-4.1-nano-2025-04-14"
)

func textChunks() []llm.Chunk {
	c := func(ch llm.Chunk) llm.Chunk { ch.ID, ch.Model = textID, textGPT; return ch }
	return []llm.Chunk{
		c(llm.Chunk{Role: llm.RoleAssistant}),
		c(llm.Chunk{Content: "Hello"}),
		c(llm.Chunk{Content: "!"}),
		c(llm.Chunk{Content: " How can I help?"}),
		c(llm.Chunk{FinishReason: llm.FinishStop}),
		c(llm.Chunk{Usage: &llm.Usage{InputTokens: 19, OutputTokens: 6}}),
	}
}

func TestDecodeStream_Fixtures(t *testing.T) {
	tc := func(ch llm.Chunk) llm.Chunk { ch.ID, ch.Model = toolID, toolNano; return ch }
	args := func(i int, s string) llm.Chunk {
		return tc(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: i, Arguments: s}}})
	}
	groq := func(ch llm.Chunk) llm.Chunk {
		ch.ID, ch.Model = "chatcmpl-7b5c5a2e-1a5e-4f7e-9f7e-3c0f0e5b9b1a", "llama-3.3-70b-versatile"
		return ch
	}
	ollama := func(ch llm.Chunk) llm.Chunk {
		ch.ID, ch.Model, ch.Role = "chatcmpl-86", "gemma3:4b", llm.RoleAssistant
		return ch
	}
	tests := []struct {
		file    string
		want    []llm.Chunk
		wantErr func(t *testing.T, err error)
	}{
		{file: "text_usage.sse", want: textChunks()},
		{
			file: "tool_calls.sse",
			want: []llm.Chunk{
				tc(llm.Chunk{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_PieqNSej6kM9hgYbcQdbZSaC", Name: "get_weather"}}}),
				args(0, `{"`), args(0, "location"), args(0, `":"`), args(0, "Paris"), args(0, `"}`),
				tc(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 1, ID: "call_9xQ2Lm4RtYbWc7ZkHs1NvPqE", Name: "get_time"}}}),
				args(1, `{"tz":"CET"}`),
				tc(llm.Chunk{FinishReason: llm.FinishToolCalls}),
				tc(llm.Chunk{Usage: &llm.Usage{InputTokens: 81, OutputTokens: 30}}),
			},
		},
		{
			file: "groq_x_groq_usage.sse",
			want: []llm.Chunk{
				groq(llm.Chunk{Role: llm.RoleAssistant}),
				groq(llm.Chunk{Content: "Hi"}),
				groq(llm.Chunk{FinishReason: llm.FinishStop, Usage: &llm.Usage{InputTokens: 40, OutputTokens: 2}}),
			},
		},
		{
			file: "ollama_no_done.sse",
			want: []llm.Chunk{
				ollama(llm.Chunk{Content: "Hello"}),
				ollama(llm.Chunk{Content: " you"}),
				ollama(llm.Chunk{FinishReason: llm.FinishStop}),
			},
		},
		{
			file: "error_midstream.sse",
			want: []llm.Chunk{
				{ID: textID, Model: textGPT, Role: llm.RoleAssistant},
				{ID: textID, Model: textGPT, Content: "The"},
				{ID: textID, Model: textGPT, Content: " question"},
			},
			wantErr: func(t *testing.T, err error) {
				pe := wiretest.WantStreamError(t, err, dialect)
				if !strings.Contains(pe.Message, "The server had an error") {
					t.Errorf("Message = %q", pe.Message)
				}
			},
		},
		{
			file: "openrouter_error.sse",
			want: []llm.Chunk{{ID: "gen-1747128493-Hy1Zk5eBuTbtQsWm4qFj", Model: "deepseek/deepseek-chat-v3-0324:free",
				Role: llm.RoleAssistant, Content: "Sure"}},
			wantErr: func(t *testing.T, err error) {
				pe := wiretest.WantStreamError(t, err, dialect)
				if !strings.Contains(pe.Message, "Provider returned error") {
					t.Errorf("Message = %q", pe.Message)
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

func TestDecodeStream_Ends(t *testing.T) {
	first := `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}` + "\n\n"
	finish := `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n"
	reset := errors.New("read tcp 127.0.0.1:1234: connection reset by peer")
	tests := []struct {
		name      string
		body      io.Reader
		truncated bool
		wantIs    error
	}{
		{name: "clean end before finish", body: strings.NewReader(first), truncated: true, wantIs: io.ErrUnexpectedEOF},
		{name: "reset before finish", body: io.MultiReader(strings.NewReader(first), iotest.ErrReader(reset)), truncated: true, wantIs: reset},
		{name: "unterminated cut chunk", body: strings.NewReader(first + `data: {"id":"c1","choi`), truncated: true, wantIs: io.ErrUnexpectedEOF},
		{name: "empty body", body: strings.NewReader(""), truncated: true, wantIs: io.ErrUnexpectedEOF},
		{name: "end after finish without DONE", body: strings.NewReader(first + finish)},
		{name: "reset after finish", body: io.MultiReader(strings.NewReader(first+finish), iotest.ErrReader(reset))},
		{name: "DONE without trailing blank line", body: strings.NewReader(first + "data: [DONE]")},
		{name: "events after DONE ignored", body: strings.NewReader(first + "data: [DONE]\n\ndata: {not json\n\n")},
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

func TestDecodeStream_ErrorFrames(t *testing.T) {
	tests := []struct {
		name, body, msg string
	}{
		{"event error", "event: error\ndata: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n", "overloaded"},
		{"event error not JSON", "event: error\ndata: upstream went away\n\n", "error event in stream"},
		{"error string", "data: {\"error\":\"rate limited\"}\n\n", "rate limited"},
		{"vLLM object error", "data: {\"object\":\"error\",\"message\":\"out of KV cache\",\"type\":\"InternalServerError\",\"code\":500}\n\n", "out of KV cache"},
		{"finish_reason error", "data: {\"id\":\"g\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"error\"}]}\n\n", `finish_reason "error"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := DecodeStream(sseResponse(strings.NewReader(tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = wiretest.Drain(t, st)
			pe := wiretest.WantStreamError(t, err, dialect)
			if !strings.Contains(pe.Message, tt.msg) {
				t.Errorf("Message = %q, want it to contain %q", pe.Message, tt.msg)
			}
		})
	}
}

func TestDecodeStream_ErrorNullIsNotAnError(t *testing.T) {
	body := `data: {"id":"c","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}],"error":null}` + "\n\ndata: [DONE]\n\n"
	st, _ := DecodeStream(sseResponse(strings.NewReader(body)))
	got, err := wiretest.Drain(t, st)
	if err != io.EOF || len(got) != 1 || got[0].Content != "ok" {
		t.Fatalf("got %+v, %v; want one chunk \"ok\" then io.EOF", got, err)
	}
}

// One chunk that is not JSON between readable ones is left out and
// counted; the stream fails as before when the output stops being
// readable: two in a row, or one with nothing read before it.
func TestDecodeStream_MalformedChunk(t *testing.T) {
	const (
		role  = `data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n"
		hello = `data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hello"}}]}` + "\n\n"
		world = `data: {"id":"c","choices":[{"index":0,"delta":{"content":" world"}}]}` + "\n\n"
		stop  = `data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
		bad   = `data: {"id": nope}` + "\n\n"
		cut   = `data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hel` + "\n\n"
		done  = "data: [DONE]\n\n"
	)
	tests := []struct {
		name    string
		body    string
		content string // the chunks' contents joined
		skipped int
		fails   bool // ends in ErrMalformed, holding the bad chunk
	}{
		{name: "one between good ones is skipped", body: role + hello + bad + world + stop + done,
			content: "Hello world", skipped: 1},
		{name: "a chunk cut inside its text between good ones is skipped", body: role + hello + cut + world + stop + done,
			content: "Hello world", skipped: 1},
		{name: "two apart are both skipped", body: role + bad + hello + bad + world + stop + done,
			content: "Hello world", skipped: 2},
		{name: "the last before [DONE] is skipped", body: role + hello + world + stop + bad + done,
			content: "Hello world", skipped: 1},
		{name: "the last before the end of a body without [DONE] is skipped", body: role + hello + stop + bad,
			content: "Hello", skipped: 1},
		{name: "two in a row fail", body: role + hello + bad + bad + world + stop + done,
			content: "Hello", skipped: 1, fails: true},
		{name: "the first, nothing read before it, fails", body: bad + role + hello + stop + done, fails: true},
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
			wiretest.WantMalformed(t, err, ErrMalformed, `{"id": nope}`)
		})
	}
}

func TestDecodeStream_NonStandardShapes(t *testing.T) {
	body := strings.Join([]string{
		// content as an array of parts (Mistral), tool call without index
		// and with object arguments (some local servers), a refusal delta
		`data: {"id":"x","choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"hm"},{"type":"text","text":"b"}]}}]}`,
		`data: {"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"id":"t1","function":{"name":"f","arguments":{"k":1}}}]}}]}`,
		`data: {"id":"x","choices":[{"index":0,"delta":{"refusal":"I can't"}}]}`,
		`data: {"id":"x","choices":[{"index":1,"delta":{"content":"other choice"}},{"index":0,"delta":{"function_call":{"name":"g","arguments":"{}"}},"finish_reason":"function_call"}]}`,
		"",
	}, "\n\n")
	st, _ := DecodeStream(sseResponse(strings.NewReader(body)))
	got, err := wiretest.Drain(t, st)
	if err != io.EOF {
		t.Fatalf("end = %v, want io.EOF (finish seen)", err)
	}
	want := []llm.Chunk{
		{ID: "x", Content: "ab"},
		{ID: "x", ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "t1", Name: "f", Arguments: `{"k":1}`}}},
		{ID: "x", Content: "I can't"},
		{ID: "x", ToolCalls: []llm.ToolCallDelta{{Name: "g", Arguments: "{}"}}, FinishReason: llm.FinishToolCalls},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

func TestDecodeStream_JSONBodyServedAsOneChunk(t *testing.T) {
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(completionJSON))}
	st, err := DecodeStream(resp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wiretest.Drain(t, st)
	if err != io.EOF || len(got) != 1 {
		t.Fatalf("got %d chunks, %v; want 1 then io.EOF", len(got), err)
	}
	if got[0].Content != "Hello! How can I help?" || got[0].FinishReason != llm.FinishStop || got[0].Usage.OutputTokens != 6 {
		t.Errorf("chunk = %+v", got[0])
	}
}

func TestDecodeStream_ErrorStatus(t *testing.T) {
	resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"7"}},
		Body: io.NopCloser(strings.NewReader(`{"error":{"message":"Rate limit reached","type":"tokens","code":"rate_limit_exceeded"}}`))}
	_, err := DecodeStream(resp)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 429 || pe.Header.Get("Retry-After") != "7" || pe.Phase != llm.PhaseResponse {
		t.Fatalf("err = %#v, want a 429 ProviderError with its headers", err)
	}
}

type closeCounter struct {
	io.Reader
	closes int
}

func (c *closeCounter) Close() error { c.closes++; return nil }

func TestStream_CloseIsIdempotentAndStopsNext(t *testing.T) {
	body := &closeCounter{Reader: bytes.NewReader(wiretest.Fixture(t, "text_usage.sse"))}
	resp := sseResponse(nil)
	resp.Body = body
	st, err := DecodeStream(resp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
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

func TestDecodeStream_JSONErrorBodyIn200(t *testing.T) {
	_, err := DecodeStream(jsonResponse(200, `{"error":{"message":"model overloaded","type":"server_error"}}`))
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 200 || pe.Phase != llm.PhaseResponse {
		t.Fatalf("err = %v, want a 200 ProviderError", err)
	}
}

func TestDecodeStream_SniffingDoesNotWaitForMoreBytes(t *testing.T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	go pw.Write([]byte(": OPENROUTER PROCESSING\n\n"))
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
