package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// FuzzDecodeStream feeds arbitrary bodies to the stream decoder: it must
// never panic, every call must give a chunk, io.EOF or an error, an ending
// must repeat on later calls, no error may pass for io.EOF, and a stream
// that ends cleanly has counted every chunk it left out (unreadable).
// DecodeResponse must likewise return a response or an error, and count
// the same.
func FuzzDecodeStream(f *testing.F) {
	for _, b := range wiretest.StreamSeeds(f) {
		f.Add(b)
	}
	for _, s := range []string{
		"", "data: [DONE]", "data: {}\n\n", "data: null\n\n", "data: []\n\n", "data: \"x\"\n\n",
		"event: error\ndata: {}\n\n", "data: {\"error\":null}\n\n", "data: {\"error\":{}}\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":7}}]}\n\n",
		"data: {}\n\ndata: {x\n\ndata: {}\n\ndata: [DONE]\n\n", "data: {}\n\ndata: {x\n\ndata: {x\n\n",
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
		for i := 0; ; i++ {
			if i > len(body)+2 {
				t.Fatalf("more chunks (%d) than bytes (%d)", i, len(body))
			}
			_, err := st.Next()
			if err == nil {
				continue
			}
			end = err
			break
		}
		if end != io.EOF && errors.Is(end, io.EOF) {
			t.Fatalf("error %v passes for io.EOF", end)
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
		var pe *llm.ProviderError
		if errors.As(err, &pe) && pe == nil {
			t.Fatal("nil *ProviderError as error")
		}
	})
}

// unreadable counts the whole chunks of body the decoder cannot read, up
// to where it stops reading (wiretest.Unreadable).
func unreadable(body []byte) int {
	return wiretest.Unreadable(bytes.NewReader(body), func(name string, data []byte) (bad, stop bool) {
		if name == "error" || string(data) == "[DONE]" {
			return false, true
		}
		if len(data) == 0 {
			return false, false
		}
		var cc chatChunk
		if json.Unmarshal(data, &cc) != nil {
			return true, false
		}
		return false, present(cc.Error) || cc.Object == "error"
	})
}
