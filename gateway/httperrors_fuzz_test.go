package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// FuzzPlainError: any write is either passed through or read as
// net/http's own error, and the rewrite of what is read is always one
// whole HTTP response with a JSON body, in either dialect.
func FuzzPlainError(f *testing.F) {
	f.Add([]byte("HTTP/1.1 400 Bad Request"+plainErrorHeaders+"400 Bad Request"), []byte("POST /v1/messages HTTP/1.1\r\n"))
	f.Add([]byte("HTTP/1.1 400 Bad Request: malformed Host header"+plainErrorHeaders+"400 Bad Request: malformed Host header"), []byte("GET / HTTP/1.1\r\nanthropic-version: x\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}"), []byte{})
	f.Add([]byte("HTTP/1.1 431"+plainErrorHeaders), []byte("\n"))
	f.Fuzz(func(t *testing.T, p, head []byte) {
		code, text, ok := plainError(p)
		if !ok {
			return
		}
		if code < 400 || code > 599 || !bytes.Contains(p, []byte(text)) {
			t.Fatalf("plainError(%q) = %d %q", p, code, text)
		}
		out := dialectError(headDialect(head), code, text)
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
		if err != nil {
			t.Fatalf("rewrite %q is not HTTP: %v", out, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != code || !json.Valid(body) {
			t.Fatalf("rewrite %q: status %d, body %q (%v)", out, resp.StatusCode, body, err)
		}
	})
}
