package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// FuzzDecodeStream feeds arbitrary bodies to the stream decoder: it must
// never panic, every call must give a chunk, io.EOF or an error, an ending
// must repeat on later calls, no error may pass for io.EOF, a clean end
// must follow a finish reason, and a stream that ends cleanly has counted
// every chunk it left out (unreadable). DecodeResponse must likewise
// return a response or an error, and count the same.
func FuzzDecodeStream(f *testing.F) {
	for _, b := range wiretest.StreamSeeds(f) {
		f.Add(b)
	}
	for _, s := range []string{
		"", "data: {}\n\n", "data: null\n\n", "data: []\n\n", "data: \"x\"\n\n", "{\n}\n", "[\n{\"error\":{\"code\":1}}]",
		"event: error\ndata: {}\n\n", "data: {\"error\":null}\n\n", "data: {\"error\":{}}\n\n",
		"data: {\"candidates\":[{\"finishReason\":\"STOP\",\"content\":{\"parts\":[{\"functionCall\":{\"args\":[1]}}]}}]}\n\n",
		"data: {\"candidates\":[{\"index\":-1}],\"usageMetadata\":{\"promptTokenCount\":-5}}\n\n",
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":7}]}}]}\n\n",
		"data: {}\n\ndata: {x\n\ndata: {\"candidates\":[{\"finishReason\":\"STOP\"}]}\n\n", "data: {}\n\ndata: {x\n\ndata: {x\n\n",
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
		var end error
		finished := false
		for i := 0; ; i++ {
			if i > len(body)+2 {
				t.Fatalf("more chunks (%d) than bytes (%d)", i, len(body))
			}
			c, err := st.Next()
			if err == nil {
				finished = finished || c.FinishReason != ""
				continue
			}
			end = err
			break
		}
		if end != io.EOF && errors.Is(end, io.EOF) {
			t.Fatalf("error %v passes for io.EOF", end)
		}
		if end == io.EOF && !finished {
			t.Fatal("clean end without a finish reason")
		}
		var pe *llm.ProviderError
		if errors.As(end, &pe) && (pe == nil || pe.Dialect != dialect || pe.Status != http.StatusOK) {
			t.Fatalf("ProviderError %#v", pe)
		}
		if _, again := st.Next(); again != end {
			t.Fatalf("Next after end = %v, want %v", again, end)
		}
		skipped := llm.SkippedOf(st)
		if bad := unreadable(body); end == io.EOF && skipped != bad || skipped > bad {
			t.Fatalf("%d chunks skipped (end %v), %d unreadable", skipped, end, bad)
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
			t.Fatalf("DecodeResponse skipped %d chunks, the stream %d", r.Skipped, skipped)
		}
		if r != nil {
			for _, tc := range r.Message.ToolCalls {
				if !json.Valid([]byte(tc.Arguments)) || tc.ID == "" {
					t.Fatalf("tool call %+v", tc)
				}
			}
		}
	})
}

// unreadable counts the whole chunks of body the decoder cannot read, up
// to where it stops reading (wiretest.Unreadable). Lines that start like
// JSON are data lines, as the decoder reads them (jsonLines).
func unreadable(body []byte) int {
	lines := &jsonLines{r: bytes.NewReader(body), lineStart: true}
	return wiretest.Unreadable(lines, func(name string, data []byte) (bad, stop bool) {
		if len(data) == 0 || string(data) == "[DONE]" {
			return false, false
		}
		var g generateResponse
		if json.Unmarshal(data, &g) != nil {
			_, isErr := ParseStreamError(data)
			return !isErr, isErr
		}
		return false, name == "error" || g.failure(nil, data, llm.PhaseStream) != nil
	})
}

// FuzzParseError feeds arbitrary bodies to ParseError and ParseStreamError:
// they must never panic, always keep the status, dialect and (a prefix
// of) the body, and give valid UTF-8 text.
func FuzzParseError(f *testing.F) {
	for _, s := range []string{apiKeyInvalid, perDay429, rateLimitErrorInfo, textAnswer, callAnswer, "", "<html><title>x</title>",
		`[{"error":{"code":503,"status":"UNAVAILABLE"}}]`, `{"error":{"code":{},"details":[null,1,{"@type":7}]}}`,
		`{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":1}]}]}}`} {
		f.Add(200, []byte(s))
		f.Add(429, []byte(s))
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "errors", "sample.jsonl")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var c struct {
				Status *int   `json:"status"`
				Body   string `json:"body"`
			}
			if json.Unmarshal(sc.Bytes(), &c) == nil && c.Status != nil {
				f.Add(*c.Status, []byte(c.Body))
			}
		}
	}
	for _, b := range wiretest.StreamSeeds(f) {
		f.Add(200, b)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := ParseError(status, http.Header{}, body)
		if e == nil || e.Dialect != dialect || e.Status != status || e.Phase != llm.PhaseResponse || e.Header == nil {
			t.Fatalf("ParseError = %#v", e)
		}
		if len(e.Body) > MaxErrorBody || !bytes.HasPrefix(body, e.Body) {
			t.Fatalf("Body of %d bytes is not a prefix of the body", len(e.Body))
		}
		for _, s := range []string{e.Message, e.Type, e.Code} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 in %q", s)
			}
		}
		se, ok := ParseStreamError(body)
		if ok != (se != nil) {
			t.Fatalf("ParseStreamError = %v, %v", se, ok)
		}
		if ok && (se.Status != http.StatusOK || se.Phase != llm.PhaseStream || se.Dialect != dialect || len(se.Body) == 0) {
			t.Fatalf("ParseStreamError = %#v", se)
		}
	})
}

// FuzzSanitizeSchema: any JSON object gives a schema that is JSON (or
// nothing), and sanitizing it again changes nothing.
func FuzzSanitizeSchema(f *testing.F) {
	for _, s := range []string{`{}`, `{"type":["string","null"]}`, `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`,
		`{"anyOf":[{"type":"null"},{"type":"object","properties":{"a":{"oneOf":[{"const":"x"}]}}}]}`,
		`{"type":"object","properties":{"x":{"type":"array","items":{"enum":["a",1]}}},"required":["x","y"]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := SanitizeSchema(in)
		if err != nil {
			return
		}
		if out == nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("SanitizeSchema(%s) = %s, not JSON", in, out)
		}
		again, err := SanitizeSchema(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %s then %s (%v)", out, again, err)
		}
	})
}
