package responses_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
	"github.com/detourhq/detour/wire/responses"
)

// FuzzDecodeStream feeds arbitrary bodies to the stream decoder: it must
// never panic, every call must give a chunk, io.EOF or an error, an ending
// must repeat on later calls, no error may pass for io.EOF, every
// ProviderError is of this dialect with status 200, tool call indexes stay
// within the function calls seen, and no more events are left out than the
// body has. DecodeResponse must likewise return a response or an error,
// never both.
func FuzzDecodeStream(f *testing.F) {
	for _, b := range wiretest.StreamSeeds(f) {
		f.Add(b)
	}
	for _, s := range []string{
		"", "data: [DONE]\n\n", "data: null\n\n", "data: []\n\n", "event: error\ndata: {}\n\n", "event: error\ndata: {x\n\n",
		"data: {\"type\":\"error\",\"error\":null}\n\n", "data: {\"type\":\"response.failed\",\"response\":null}\n\n",
		"data: {\"type\":\"response.completed\"}\n\n", "data: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\"}}\n\n",
		"data: {\"type\":\"response.output_item.added\",\"output_index\":-1,\"item\":{\"type\":\"function_call\"}}\n\n" +
			"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":-1,\"delta\":\"{\"}\n\n",
		"data: {\"type\":\"response.function_call_arguments.delta\",\"delta\":\"{\"}\n\n",
		"data: {\"type\":\"response.output_item.done\",\"output_index\":3,\"item\":{\"type\":\"function_call\",\"arguments\":\"\"}}\n\n",
		"data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"output_tokens\":1e99}}}\n\n",
		"data: {}\n\ndata: {x\n\ndata: {}\n\ndata: {\"type\":\"response.completed\"}\n\n", "data: {}\n\ndata: {x\n\ndata: {x\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		st, err := responses.DecodeStream(&http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(bytes.NewReader(body))})
		if err != nil {
			t.Fatalf("DecodeStream: %v", err)
		}
		tools := 0
		var end error
		for i := 0; ; i++ {
			if i > len(body)+2 {
				t.Fatalf("more chunks (%d) than bytes (%d)", i, len(body))
			}
			c, err := st.Next()
			if err != nil {
				end = err
				break
			}
			for _, d := range c.ToolCalls {
				if d.ID != "" || d.Name != "" || d.Index == tools {
					tools = max(tools, d.Index+1)
				}
				if d.Index < 0 || d.Index >= tools {
					t.Fatalf("tool call index %d with %d function calls", d.Index, tools)
				}
			}
		}
		if end != io.EOF && errors.Is(end, io.EOF) {
			t.Fatalf("error %v passes for io.EOF", end)
		}
		var pe *llm.ProviderError
		if errors.As(end, &pe) && (pe == nil || pe.Dialect != responses.Dialect || pe.Status != 200 || pe.Phase != llm.PhaseStream) {
			t.Fatalf("bad ProviderError %#v", pe)
		}
		if _, again := st.Next(); again != end {
			t.Fatalf("Next after end = %v, want %v", again, end)
		}
		if n := llm.SkippedOf(st); n > bytes.Count(body, []byte("data:")) {
			t.Fatalf("%d events skipped of at most %d", n, bytes.Count(body, []byte("data:")))
		}
		if err := st.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		r, err := responses.DecodeResponse(&http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(bytes.NewReader(body))})
		if (r == nil) == (err == nil) {
			t.Fatalf("DecodeResponse = %v, %v: want exactly one", r, err)
		}
	})
}

// FuzzDecodeResponse feeds arbitrary JSON bodies to the response decoder:
// an answer or an error, never both, never a panic; every ProviderError of
// this dialect with status 200.
func FuzzDecodeResponse(f *testing.F) {
	for _, name := range []string{"gpt5mini_text.json", "gpt5mini_tool.json"} {
		b := readBody(f, name)
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	for _, s := range []string{"{}", "null", `{"status":"failed"}`, `{"error":{"code":7}}`, `{"object":"list"}`,
		`{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}`, `{"output":[{"type":"message","content":[null]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := responses.DecodeResponse(&http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(body))})
		if (r == nil) == (err == nil) {
			t.Fatalf("DecodeResponse = %v, %v: want exactly one", r, err)
		}
		var pe *llm.ProviderError
		if errors.As(err, &pe) && (pe.Dialect != responses.Dialect || pe.Status != 200) {
			t.Fatalf("bad ProviderError %#v", pe)
		}
	})
}

// FuzzParseError: any status and body give a ProviderError of that status,
// this dialect and phase response, its body kept (cut to MaxErrorBody).
func FuzzParseError(f *testing.F) {
	for _, s := range []string{
		`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
		`{"error":{"message":"x","code":429}}`, `{"error":"bad key","code":"invalid_api_key"}`, `{"detail":"Not Found"}`,
		`{"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}}`,
		"data: {\"error\":{\"message\":\"x\"}}\n\n", "<html><title>502 Bad Gateway</title></html>", "", "\xEF\xBB\xBF{}", `[{"error":{}}]`,
	} {
		f.Add(429, []byte(s))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "streams", "failed_*.sse"))
	for _, name := range files {
		f.Add(200, wiretest.Fixture(f, filepath.Base(name)))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		pe := responses.ParseError(status, http.Header{}, body)
		if pe == nil || pe.Status != status || pe.Dialect != responses.Dialect || pe.Phase != llm.PhaseResponse {
			t.Fatalf("ParseError = %#v", pe)
		}
		if len(body) > 0 && len(pe.Body) == 0 || len(pe.Body) > responses.MaxErrorBody {
			t.Fatalf("kept body of %d bytes for %d", len(pe.Body), len(body))
		}
		if e, ok := responses.ParseStreamError(body); ok && (e == nil || e.Status != 200 || e.Phase != llm.PhaseStream || e.Dialect != responses.Dialect) {
			t.Fatalf("ParseStreamError = %#v", e)
		}
	})
}
