package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// FuzzDecodeStream feeds arbitrary bodies to the stream decoder: it must
// never panic, every call must give a chunk, io.EOF or an error, an ending
// must repeat on later calls, no error may pass for io.EOF, tool call
// indexes stay within the tool_use blocks seen, and a stream that ends
// cleanly has counted every event it left out (unreadable).
// DecodeResponse must likewise return a response or an error, never both,
// and count the same.
func FuzzDecodeStream(f *testing.F) {
	for _, b := range wiretest.StreamSeeds(f) {
		f.Add(b)
	}
	for _, s := range []string{
		"", "event: message_stop\ndata: {}\n\n", "data: {\"type\":\"message_stop\"}", "data: null\n\n", "data: []\n\n",
		"event: error\ndata: {}\n\n", "data: {\"type\":\"error\",\"error\":null}\n\n",
		"data: {\"type\":\"content_block_start\",\"index\":-1,\"content_block\":{\"type\":\"tool_use\"}}\n\n" +
			"data: {\"type\":\"content_block_delta\",\"index\":-1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n",
		"data: {\"type\":\"content_block_delta\",\"index\":\"0\"}\n\n",
		"data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":1e99}}\n\n",
		"data: {\"type\":\"message_start\",\"message\":{\"content\":7}}\n\n",
		"data: {}\n\ndata: {x\n\ndata: {}\n\nevent: message_stop\ndata: {}\n\n", "data: {}\n\ndata: {x\n\ndata: {x\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(bytes.NewReader(body))}
		st, err := DecodeStream(resp)
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
					t.Fatalf("tool call index %d with %d tool_use blocks", d.Index, tools)
				}
			}
		}
		if end != io.EOF && errors.Is(end, io.EOF) {
			t.Fatalf("error %v passes for io.EOF", end)
		}
		var pe *llm.ProviderError
		if errors.As(end, &pe) && (pe == nil || pe.Dialect != "anthropic" || pe.Status != 200) {
			t.Fatalf("bad ProviderError %#v", pe)
		}
		if _, again := st.Next(); again != end {
			t.Fatalf("Next after end = %v, want %v", again, end)
		}
		skipped := llm.SkippedOf(st)
		if bad := unreadable(body); end == io.EOF && skipped != bad || skipped > bad {
			t.Fatalf("%d events skipped (end %v), %d unreadable", skipped, end, bad)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}

		resp.Body = io.NopCloser(bytes.NewReader(body))
		r, err := DecodeResponse(resp)
		if (r == nil) == (err == nil) {
			t.Fatalf("DecodeResponse = %v, %v; want exactly one", r, err)
		}
		if r != nil && r.Skipped != skipped {
			t.Fatalf("DecodeResponse skipped %d events, the stream %d", r.Skipped, skipped)
		}
	})
}

// unreadable counts the whole events of body whose data the decoder
// cannot read, up to where it stops reading (wiretest.Unreadable).
func unreadable(body []byte) int {
	return wiretest.Unreadable(bytes.NewReader(body), func(name string, data []byte) (bad, stop bool) {
		if name == "error" || name == "message_stop" {
			return false, true
		}
		if len(data) == 0 {
			return false, false
		}
		var e streamEvent
		if json.Unmarshal(data, &e) != nil {
			return true, false
		}
		return false, e.Type == "error" || e.Type == "message_stop"
	})
}

// FuzzParseError feeds arbitrary statuses and bodies to ParseError and
// ParseStreamError: they must never panic, always keep the dialect, status
// and phase, never keep more than MaxErrorBody, and give valid UTF-8
// messages.
func FuzzParseError(f *testing.F) {
	for _, s := range []string{body401, body404, body429, bodySpendCap, body529, body413, body413HTML, body500,
		refusalJSON, haikuTextJSON, "", "null", "[]", "[[[[]]]]", `{"error":{"error":{"error":{"error":{}}}}}`,
		`{"error":{"details":{"error_code":12}}}`, "data: {\"error\":\"x\"}\n\n", "<title>\xff</title>", "\xef\xbb\xbf{}"} {
		f.Add(400, []byte(s))
	}
	for _, b := range wiretest.StreamSeeds(f) {
		f.Add(200, b)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := ParseError(status, nil, body)
		if e == nil || e.Dialect != "anthropic" || e.Status != status || e.Phase != llm.PhaseResponse {
			t.Fatalf("ParseError = %#v", e)
		}
		if len(e.Body) > MaxErrorBody || !bytes.HasPrefix(body, e.Body) {
			t.Fatalf("Body of %d bytes is not a prefix of the input", len(e.Body))
		}
		for _, s := range []string{e.Message, e.Type, e.Code} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 %q", s)
			}
		}
		se, ok := ParseStreamError(body)
		if ok != (se != nil) {
			t.Fatalf("ParseStreamError = %v, %v", se, ok)
		}
		if ok && (se.Status != 200 || se.Phase != llm.PhaseStream || se.Dialect != "anthropic") {
			t.Fatalf("ParseStreamError = %#v", se)
		}
	})
}
