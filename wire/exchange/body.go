package exchange

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// Body size limits, the same for every dialect.
const (
	// MaxResponseBody is the most of a successful response body that is
	// read: 32 MiB. A larger body is an error.
	MaxResponseBody = 32 << 20
	// MaxErrorBody is the most of an error body that is read and kept:
	// 64 KiB.
	MaxErrorBody = 64 << 10
)

// KeepBody returns a copy of body cut to MaxErrorBody, for
// llm.ProviderError.Body; nil when body is empty.
func KeepBody(body []byte) []byte {
	if len(body) == 0 {
		return nil
	}
	return bytes.Clone(CapBody(body))
}

// CapBody returns body cut to MaxErrorBody, sharing its bytes (no copy);
// the cut slice has no room to grow into the rest.
func CapBody(body []byte) []byte {
	if len(body) > MaxErrorBody {
		return body[:MaxErrorBody:MaxErrorBody]
	}
	return body
}

func is2xx(status int) bool { return status >= 200 && status < 300 }

// readErrorBody reads at most MaxErrorBody of an error response's body; a
// body cut by a read error is returned as far as it came.
func readErrorBody(resp *http.Response) []byte {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	return body
}

// readCapped reads all of r, failing past max bytes. name prefixes the
// error.
func readCapped(r io.Reader, max int64, name string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading response body: %w", name, err)
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("%s: response body exceeds %d bytes", name, max)
	}
	return body, nil
}

// isEventStream reports whether a 2xx body is an event stream: its
// Content-Type says so, or it has no JSON Content-Type and its first bytes
// look like an SSE field or comment.
func isEventStream(header http.Header, br *bufio.Reader) bool {
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	switch {
	case mt == "text/event-stream":
		return true
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return false
	}
	// Look only at what has arrived: waiting for more could stall on a
	// slow stream whose first event is short.
	if _, err := br.Peek(1); err != nil {
		return false
	}
	head, _ := br.Peek(min(br.Buffered(), 64))
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF")), " \t\r\n")
	for _, p := range []string{"data:", "event:", "id:", "retry:", ":"} {
		if bytes.HasPrefix(head, []byte(p)) {
			return true
		}
	}
	return false
}

// readCloser reads through a buffered reader and closes the body under it.
type readCloser struct {
	io.Reader
	io.Closer
}
