package exchange

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
)

// lineStream serves each `data:` line of an SSE body as one chunk's
// content; "data: end" is the complete end.
type lineStream struct {
	*Stream
	lines []string
	key   string
}

func newLineStream(body io.ReadCloser, _ http.Header, key string) *lineStream {
	b, _ := io.ReadAll(body)
	s := &lineStream{lines: strings.Split(strings.TrimSpace(string(b)), "\n"), key: key}
	s.Stream = funcStream("test", body, key, s.next)
	return s
}

func (s *lineStream) next() (llm.Chunk, error) {
	if len(s.lines) == 0 {
		return llm.Chunk{}, s.Truncated(io.EOF)
	}
	line := strings.TrimPrefix(s.lines[0], "data: ")
	s.lines = s.lines[1:]
	if line == "end" {
		return llm.Chunk{}, io.EOF
	}
	return llm.Chunk{Content: line}, nil
}

// testDecoder reads JSON bodies {"text": ...}; its StatusError keeps what
// it was given.
func testDecoder() *Decoder[*lineStream] {
	return &Decoder[*lineStream]{
		Name: "test",
		StatusError: func(status int, header http.Header, body []byte) error {
			return &llm.ProviderError{Status: status, Header: header, Body: body, Message: string(body)}
		},
		DecodeJSON: func(_ http.Header, body []byte) (*llm.Response, error) {
			if !bytes.HasPrefix(body, []byte("{")) {
				return nil, errors.New("not JSON: " + string(body))
			}
			return &llm.Response{Model: "m", Message: llm.Message{Role: llm.RoleAssistant, Content: string(body)}}, nil
		},
		NewStream: newLineStream,
	}
}

// bodyCloser records whether the body was closed.
type bodyCloser struct {
	io.Reader
	closed bool
}

func (b *bodyCloser) Close() error { b.closed = true; return nil }

func response(status int, contentType, body string) (*http.Response, *bodyCloser) {
	b := &bodyCloser{Reader: strings.NewReader(body)}
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &http.Response{StatusCode: status, Header: h, Body: b}, b
}

func TestDecoder_DecodeResponse(t *testing.T) {
	long := strings.Repeat("x", MaxErrorBody+10)
	tests := []struct {
		name, ctype, body string
		status            int
		want              string // the content, or the error
	}{
		{"JSON", "application/json", `{"a":1}`, 200, `{"a":1}`},
		{"SSE by content type", "text/event-stream", "data: Hel\ndata: lo\ndata: end\n", 200, "Hello"},
		{"SSE by its first bytes", "", "data: ok\ndata: end\n", 200, "ok"},
		{"unknown type, not SSE bytes", "text/plain", `{"c":3}`, 200, `{"c":3}`},
		{"JSON type wins over SSE bytes", "application/problem+json", "data: x", 200, "error: not JSON: data: x"},
		{"cut SSE", "text/event-stream", "data: a\n", 200, "error: test: stream ended before its terminal event: unexpected EOF"},
		{"status error", "text/plain", "nope", 503, "error: HTTP 503: nope"},
		{"status error body capped", "", long, 500, "error: HTTP 500: " + long[:MaxErrorBody]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := response(tt.status, tt.ctype, tt.body)
			r, err := testDecoder().DecodeResponse(resp, "")
			got := ""
			if err != nil {
				got = "error: " + err.Error()
			} else {
				got = r.Message.Content
			}
			if got != tt.want {
				t.Errorf("got %.80q, want %.80q", got, tt.want)
			}
			if !body.closed {
				t.Error("body not closed")
			}
		})
	}
}

func TestDecoder_DecodeResponseUsesAssemble(t *testing.T) {
	d := testDecoder()
	d.Assemble = func(s *lineStream) (*llm.Response, error) {
		r, err := llm.Assemble(s)
		if err == nil {
			r.Message.Content += "!"
		}
		return r, err
	}
	resp, _ := response(200, "text/event-stream", "data: hi\ndata: end\n")
	r, err := d.DecodeResponse(resp, "")
	if err != nil || r.Message.Content != "hi!" {
		t.Fatalf("DecodeResponse = %+v, %v; want hi!", r, err)
	}
}

func TestDecoder_BodyTooLarge(t *testing.T) {
	resp, _ := response(200, "application/json", "{"+strings.Repeat(" ", MaxResponseBody)+"}")
	_, err := testDecoder().DecodeResponse(resp, "")
	if want := fmt.Sprintf("test: response body exceeds %d bytes", MaxResponseBody); err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func TestDecoder_DecodeStream(t *testing.T) {
	t.Run("JSON body is one chunk", func(t *testing.T) {
		resp, body := response(200, "application/json", `{"b":2}`)
		st, err := testDecoder().DecodeStream(resp, "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := llm.Assemble(st)
		want := &llm.Response{Model: "m", Message: llm.Message{Role: llm.RoleAssistant, Content: `{"b":2}`}}
		if err != nil || !cmp.Equal(r, want) || !body.closed {
			t.Errorf("Assemble = %+v, %v (body closed %v); want %+v", r, err, body.closed, want)
		}
	})
	t.Run("SSE body is owned by the stream", func(t *testing.T) {
		resp, body := response(200, "text/event-stream", "data: a\ndata: end\n")
		st, err := testDecoder().DecodeStream(resp, testKey)
		if err != nil {
			t.Fatal(err)
		}
		if body.closed {
			t.Fatal("body closed before the stream")
		}
		if ls := st.(*lineStream); ls.key != testKey {
			t.Errorf("stream key %q, want %q", ls.key, testKey)
		}
		st.Close()
		if !body.closed {
			t.Error("Close did not close the body")
		}
	})
	t.Run("errors are redacted", func(t *testing.T) {
		for _, status := range []int{200, 401} {
			resp, body := response(status, "text/plain", "key "+testKey)
			_, err := testDecoder().DecodeStream(resp, testKey)
			if err == nil || strings.Contains(err.Error(), testKey) || !body.closed {
				t.Errorf("status %d: err = %v (body closed %v), want an error without the key", status, err, body.closed)
			}
		}
	})
}
