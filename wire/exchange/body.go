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

// readCapped reads all of r, failing past max bytes. size is the body's
// length when known (Content-Length), else -1: the buffer is sized from it
// so that reading takes one allocation. name prefixes the error.
func readCapped(r io.Reader, size, max int64, name string) ([]byte, error) {
	n := int64(512)
	if size >= 0 {
		n = min(size, max) + 1 // room to see the end without growing
	}
	body := make([]byte, 0, n)
	for {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		m, err := r.Read(body[len(body):min(int64(cap(body)), max+1)])
		body = body[:len(body)+m]
		if int64(len(body)) > max {
			return nil, fmt.Errorf("%s: response body exceeds %d bytes", name, max)
		}
		if err == io.EOF {
			return body, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading response body: %w", name, err)
		}
	}
}

// bodyKind is what a 2xx body's Content-Type says it is.
type bodyKind int

const (
	kindUnknown bodyKind = iota // no telling: look at the first bytes
	kindStream                  // text/event-stream
	kindJSON                    // application/json or +json
)

// contentKind reads a 2xx response's Content-Type.
func contentKind(header http.Header) bodyKind {
	ct := header.Get("Content-Type")
	switch ct {
	case "":
		return kindUnknown
	case "application/json", "application/json; charset=utf-8", "text/event-stream", "text/event-stream; charset=utf-8":
		// What providers send, read without ParseMediaType's allocations.
		if ct[0] == 't' {
			return kindStream
		}
		return kindJSON
	}
	return parsedKind(ct)
}

// parsedKind is the kind of any Content-Type ct, parsed.
func parsedKind(ct string) bodyKind {
	mt, _, _ := mime.ParseMediaType(ct)
	switch {
	case mt == "text/event-stream":
		return kindStream
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return kindJSON
	}
	return kindUnknown
}

// sniffBody tells whether a 2xx body is an event stream: its Content-Type
// says so, or it has no JSON Content-Type and its first bytes look like an
// SSE field or comment. When the Content-Type decided it returns a nil
// reader: read body itself; else a buffered reader over body holding the
// bytes looked at, to read the body from.
func sniffBody(header http.Header, body io.Reader) (*bufio.Reader, bool) {
	switch contentKind(header) {
	case kindStream:
		return nil, true
	case kindJSON:
		return nil, false
	}
	br := bufio.NewReader(body)
	return br, looksLikeEventStream(br)
}

// looksLikeEventStream reports whether the first bytes of br look like an
// SSE field or comment.
func looksLikeEventStream(br *bufio.Reader) bool {
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
