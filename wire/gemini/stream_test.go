package gemini

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// sseResponse is a 200 text/event-stream response with body, as Gemini
// sends it.
func sseResponse(body io.Reader) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(body),
	}
}

func usage(in, out int) *llm.Usage { return &llm.Usage{InputTokens: in, OutputTokens: out} }

// withID sets the ID and Model every chunk of one fixture has.
func withID(id, model string) func(llm.Chunk) llm.Chunk {
	return func(c llm.Chunk) llm.Chunk { c.ID, c.Model = id, model; return c }
}

func TestDecodeStream_Fixtures(t *testing.T) {
	think := withID("rtcZaoTxGry8jrEPvOOP4AE", "gemini-2.5-flash-lite")
	sqrt := withID("udcZaqDaKufQ-8YPkuGY2QE", "gemini-2.5-flash-lite")
	para := withID("pteDaNL2EKyUjMcPo8HzyAo", "gemini-2.5-flash-lite")
	apart := withID("7LeDaKv0AqXO_uMPh72GgAk", "gemini-2.5-flash-lite")
	call := withID("Xq3aaN2fB8Wz7M8Pq6KxgQk", "gemini-2.5-flash")
	safe := withID("b7VdaJq9Ct2o_uMP9s2g4Ak", "gemini-2.0-flash")
	pro := withID("zG5eaO7qKZiZ_uMPo9vS-Ak", "gemini-2.5-pro")
	tests := []struct {
		file    string
		want    []llm.Chunk
		wantErr func(t *testing.T, err error)
	}{
		{
			// The thought chunk carries only the role; thoughts count as output.
			file: "thinking_text.sse",
			want: []llm.Chunk{
				think(llm.Chunk{Role: llm.RoleAssistant}),
				think(llm.Chunk{Content: "Hello.", FinishReason: llm.FinishStop, Usage: usage(9, 29)}),
			},
		},
		{
			file: "tool_thought_signature.sse",
			want: []llm.Chunk{
				sqrt(llm.Chunk{Role: llm.RoleAssistant}),
				sqrt(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_0", Name: "square_root", Arguments: `{"number":132413}`}},
					FinishReason: llm.FinishToolCalls, Usage: usage(117, 123)}),
			},
		},
		{
			file: "parallel_calls.sse",
			want: []llm.Chunk{
				para(llm.Chunk{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCallDelta{
					{Index: 0, ID: "call_0", Name: "best_country", Arguments: `{"country":"Canada"}`},
					{Index: 1, ID: "call_1", Name: "best_country", Arguments: `{"country":"USA"}`},
				}, FinishReason: llm.FinishToolCalls, Usage: usage(115, 30)}),
			},
		},
		{
			file: "finish_apart.sse",
			want: []llm.Chunk{
				apart(llm.Chunk{Role: llm.RoleAssistant, Content: `{"is_fruit": true}`}),
				apart(llm.Chunk{FinishReason: llm.FinishStop, Usage: usage(30, 7)}),
			},
		},
		{
			file: "text_then_call.sse",
			want: []llm.Chunk{
				call(llm.Chunk{Role: llm.RoleAssistant, Content: "I'll look up"}),
				call(llm.Chunk{Content: " the weather in Paris."}),
				call(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_0", Name: "get_weather",
					Arguments: `{"location":"Paris","unit":"celsius"}`}}, FinishReason: llm.FinishToolCalls, Usage: usage(61, 24)}),
			},
		},
		{
			file: "safety_midstream.sse",
			want: []llm.Chunk{
				safe(llm.Chunk{Role: llm.RoleAssistant, Content: "Once upon"}),
				safe(llm.Chunk{Content: " a time"}),
			},
			wantErr: func(t *testing.T, err error) {
				pe := wiretest.WantStreamError(t, err, dialect)
				if pe.Type != "safety" || pe.Code != "SAFETY" {
					t.Errorf("Type, Code = %q, %q; want safety, SAFETY", pe.Type, pe.Code)
				}
			},
		},
		{
			file: "prompt_blocked.sse",
			wantErr: func(t *testing.T, err error) {
				pe := wiretest.WantStreamError(t, err, dialect)
				if pe.Type != "safety" || pe.Code != "PROHIBITED_CONTENT" {
					t.Errorf("Type, Code = %q, %q; want safety, PROHIBITED_CONTENT", pe.Type, pe.Code)
				}
			},
		},
		{
			file: "error_midstream.sse",
			want: []llm.Chunk{pro(llm.Chunk{Role: llm.RoleAssistant, Content: "The"}), pro(llm.Chunk{Content: " answer"})},
			wantErr: func(t *testing.T, err error) {
				pe := wiretest.WantStreamError(t, err, dialect)
				if pe.Type != "UNAVAILABLE" || pe.Code != "503" || !strings.Contains(pe.Message, "overloaded") {
					t.Errorf("ProviderError = %+v", pe)
				}
			},
		},
		{
			file: "bare_error_midstream.sse",
			want: []llm.Chunk{pro(llm.Chunk{Role: llm.RoleAssistant, Content: "The"})},
			wantErr: func(t *testing.T, err error) {
				pe := wiretest.WantStreamError(t, err, dialect)
				if pe.Type != "UNAVAILABLE" || pe.Code != "503" {
					t.Errorf("ProviderError = %+v", pe)
				}
			},
		},
		{
			file: "cut_before_finish.sse",
			want: []llm.Chunk{call(llm.Chunk{Role: llm.RoleAssistant, Content: "I'll look up"}), call(llm.Chunk{Content: " the weather in Paris."})},
			wantErr: func(t *testing.T, err error) {
				if !errors.Is(err, llm.ErrStreamTruncated) || !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
					t.Errorf("end = %v, want ErrStreamTruncated wrapping io.ErrUnexpectedEOF", err)
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
	text := `data: {"candidates": [{"content": {"parts": [{"text": "Hi"}],"role": "model"},"index": 0}]}` + "\r\n\r\n"
	finish := `data: {"candidates": [{"content": {"role": "model"},"finishReason": "MAX_TOKENS","index": 0}],"usageMetadata": {"promptTokenCount": 3,"candidatesTokenCount": 1}}` + "\r\n\r\n"
	lateUsage := `data: {"usageMetadata": {"promptTokenCount": 3,"candidatesTokenCount": 2}}` + "\r\n\r\n"
	reset := errors.New("read tcp 127.0.0.1:1234: connection reset by peer")
	tests := []struct {
		name      string
		body      io.Reader
		chunks    int
		truncated bool
		wantIs    error
	}{
		{name: "finish then EOF", body: strings.NewReader(text + finish), chunks: 2},
		{name: "finish without trailing blank line", body: strings.NewReader(text + strings.TrimSuffix(finish, "\r\n\r\n")), chunks: 2},
		{name: "usage after finish", body: strings.NewReader(text + finish + lateUsage), chunks: 3},
		{name: "finish then reset", body: io.MultiReader(strings.NewReader(text+finish), iotest.ErrReader(reset)), chunks: 2},
		{name: "empty body", body: strings.NewReader(""), truncated: true, wantIs: io.ErrUnexpectedEOF},
		{name: "EOF before finish", body: strings.NewReader(text), chunks: 1, truncated: true, wantIs: io.ErrUnexpectedEOF},
		{name: "reset before finish", body: io.MultiReader(strings.NewReader(text), iotest.ErrReader(reset)), chunks: 1, truncated: true, wantIs: reset},
		{name: "chunk cut mid-JSON", body: strings.NewReader(text + finish[:40]), chunks: 1, truncated: true, wantIs: io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := DecodeStream(sseResponse(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := wiretest.Drain(t, st)
			if len(got) != tt.chunks {
				t.Errorf("%d chunks, want %d: %+v", len(got), tt.chunks, got)
			}
			if !tt.truncated {
				if err != io.EOF {
					t.Fatalf("end = %v, want io.EOF", err)
				}
				if last := got[len(got)-1]; last.Usage == nil {
					t.Errorf("last chunk %+v has no usage", last)
				}
				return
			}
			if !errors.Is(err, llm.ErrStreamTruncated) || !errors.Is(err, tt.wantIs) || errors.Is(err, io.EOF) {
				t.Fatalf("end = %v, want ErrStreamTruncated wrapping %v", err, tt.wantIs)
			}
		})
	}
}

func TestDecodeStream_UsageAfterFinishReplacesIt(t *testing.T) {
	body := `data: {"candidates": [{"content": {"parts": [{"text": "Hi"}],"role": "model"},"finishReason": "MAX_TOKENS","index": 0}],"usageMetadata": {"promptTokenCount": 3,"candidatesTokenCount": 1}}` + "\r\n\r\n" +
		`data: {"usageMetadata": {"promptTokenCount": 3,"candidatesTokenCount": 2,"thoughtsTokenCount": 4}}` + "\r\n\r\n"
	r, err := DecodeResponse(sseResponse(strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "Hi"}, FinishReason: llm.FinishLength,
		Usage: llm.Usage{InputTokens: 3, OutputTokens: 6}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestDecodeStream_BadChunks(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		malformed bool
	}{
		{name: "not JSON", body: "data: {not json}\n\n", malformed: true},
		{name: "JSON array of no error", body: "data: [1, 2]\n\n", malformed: true},
		{name: "error array", body: `data: [{"error": {"code": 429,"message": "Resource exhausted.","status": "RESOURCE_EXHAUSTED"}}]` + "\n\n"},
		{name: "error event", body: "event: error\ndata: {}\n\n"},
		{name: "error string", body: `data: {"error": "boom"}` + "\n\n"},
		{name: "malformed function call", body: `data: {"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL","finishMessage": "Malformed function call: print(default_api.x(", "index": 0}]}` + "\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := DecodeStream(sseResponse(strings.NewReader(tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = wiretest.Drain(t, st)
			if got := errors.Is(err, ErrMalformed); got != tt.malformed {
				t.Errorf("errors.Is(%v, ErrMalformed) = %v, want %v", err, got, tt.malformed)
			}
			wiretest.WantStreamError(t, err, dialect)
		})
	}
}

// One chunk that is not JSON between readable ones is left out and
// counted; the stream fails as before when the output stops being
// readable: two in a row, or one with nothing read before it. Gemini has
// no terminal event: a bad chunk after the finish reason is the last
// before the end.
func TestDecodeStream_MalformedChunk(t *testing.T) {
	const (
		hello  = `data: {"candidates": [{"content": {"parts": [{"text": "Hello"}],"role": "model"},"index": 0}]}` + "\r\n\r\n"
		world  = `data: {"candidates": [{"content": {"parts": [{"text": " world"}],"role": "model"},"index": 0}]}` + "\r\n\r\n"
		finish = `data: {"candidates": [{"content": {"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 3,"candidatesTokenCount": 2}}` + "\r\n\r\n"
		bad    = "data: {not json}\r\n\r\n"
		cut    = `data: {"candidates": [{"content": {"parts": [{"text": "Hel` + "\r\n\r\n"
	)
	tests := []struct {
		name      string
		body      string
		content   string
		skipped   int
		fails     bool // ends in ErrMalformed, holding the bad chunk
		truncated bool
	}{
		{name: "one between good ones is skipped", body: hello + bad + world + finish, content: "Hello world", skipped: 1},
		{name: "a chunk cut inside its text between good ones is skipped", body: hello + cut + world + finish,
			content: "Hello world", skipped: 1},
		{name: "two apart are both skipped", body: hello + bad + world + bad + finish, content: "Hello world", skipped: 2},
		{name: "the last, after the finish reason, is skipped", body: hello + world + finish + bad, content: "Hello world", skipped: 1},
		{name: "the last, before any finish reason, leaves the stream cut", body: hello + world + bad,
			content: "Hello world", skipped: 1, truncated: true},
		{name: "two in a row fail", body: hello + bad + bad + world + finish, content: "Hello", skipped: 1, fails: true},
		{name: "the first, nothing read before it, fails", body: bad + hello + finish, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := DecodeStream(sseResponse(strings.NewReader(tt.body)))
			err := wiretest.DrainSkipping(t, st, tt.content, tt.skipped)
			switch {
			case tt.truncated:
				if !errors.Is(err, llm.ErrStreamTruncated) {
					t.Errorf("end = %v, want a truncation", err)
				}
			case !tt.fails:
				if err != io.EOF {
					t.Errorf("end = %v, want io.EOF", err)
				}
			default:
				wiretest.WantMalformed(t, err, ErrMalformed, "{not json}")
			}
		})
	}
}

func TestDecodeStream_NonSSEBodies(t *testing.T) {
	t.Run("error status", func(t *testing.T) {
		// Recorded: maruel/genai .../errors/bad_apiKey/GenStream.yaml sends
		// the JSON error of the streaming endpoint as text/event-stream.
		resp := sseResponse(strings.NewReader(apiKeyInvalid))
		resp.StatusCode = http.StatusBadRequest
		_, err := DecodeStream(resp)
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.Code != "API_KEY_INVALID" || pe.Type != "INVALID_ARGUMENT" || pe.Phase != llm.PhaseResponse {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("JSON answer", func(t *testing.T) {
		resp := sseResponse(strings.NewReader(textAnswer))
		resp.Header.Set("Content-Type", "application/json; charset=UTF-8")
		st, err := DecodeStream(resp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wiretest.Drain(t, st)
		if err != io.EOF || len(got) != 1 || got[0].Content != "363.89" || got[0].FinishReason != llm.FinishStop {
			t.Fatalf("chunks %+v, end %v", got, err)
		}
	})
}

func TestStream_CloseIsIdempotent(t *testing.T) {
	st, err := DecodeStream(sseResponse(bytes.NewReader(wiretest.Fixture(t, "text_then_call.sse"))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := st.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if _, err := st.Next(); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("Next after Close = %v, want ErrStreamClosed", err)
	}
}

func TestJSONLines(t *testing.T) {
	in := "data: {\"a\": 1}\r\n\r\n{\n  \"error\": {}\n}\n: comment\n[1]\r\"x\"\r\n"
	want := "data: {\"a\": 1}\r\n\r\ndata: {\ndata:   \"error\": {}\ndata: }\n: comment\ndata: [1]\rdata: \"x\"\r\n"
	for _, wrap := range []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.OneByteReader, iotest.HalfReader} {
		got, err := io.ReadAll(&jsonLines{r: wrap(strings.NewReader(in)), lineStart: true})
		if err != nil || string(got) != want {
			t.Fatalf("jsonLines = %q, %v; want %q", got, err, want)
		}
	}
}
