package gateway

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// net/http answers a request it cannot parse (a malformed request line or
// header, a NUL or CR in a header, an absurd Content-Length, headers past
// its limit, an unknown transfer coding) itself, before any handler sees
// it: one write of a plain-text response with exactly these headers, which
// no handler's response has (a handler's are sorted, with a Date). The
// gateway's listener rewrites that write into an error in the client's
// dialect, so an SDK reads a JSON error it can show, not a text/plain one.
const (
	plainErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	statusLinePrefix  = "HTTP/1.1 "
	// headKeep is how much of a request's start is kept to tell its
	// dialect: the request line and the first headers.
	headKeep = 1 << 10
)

// errorListener wraps a listener so that its connections answer net/http's
// own parse errors in the client's dialect (see plainErrorHeaders).
type errorListener struct {
	net.Listener
	// count, when set, is called once per rewritten error with its
	// dialect, for the metrics.
	count func(d dialect)
}

// Accept returns the next connection, wrapped.
func (l errorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &errorConn{Conn: c, count: l.count}, nil
}

// errorConn keeps the start of the request being read (the bytes read since
// the last write, as a response ends one request and the next is read after
// it) and rewrites a plain-text parse error written back. It keeps it only
// until net/http has parsed the request (parsed, when a handler starts):
// a stream holds its connection for minutes, and thousands of them would
// each keep a kilobyte nobody reads.
type errorConn struct {
	net.Conn
	count func(d dialect)

	mu    sync.Mutex
	head  *[]byte // pooled; nil when no request's start is kept
	state headState
}

// headState says what an errorConn does with the bytes it reads.
type headState uint8

const (
	headFresh   headState = iota // the next read starts a new head
	headKeeping                  // reads add to head, up to headKeep bytes
	headParsed                   // a handler runs: reads are the body, kept nowhere
)

// headPool holds the heads of requests that were parsed or answered.
var headPool = sync.Pool{New: func() any { b := make([]byte, 0, headKeep); return &b }}

// Read reads from the connection, keeping the start of the request.
func (c *errorConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		switch c.state {
		case headFresh:
			if c.head == nil {
				c.head = headPool.Get().(*[]byte)
			}
			*c.head = append((*c.head)[:0], p[:min(n, headKeep)]...)
			c.state = headKeeping
		case headKeeping:
			if room := headKeep - len(*c.head); room > 0 {
				*c.head = append(*c.head, p[:min(n, room)]...)
			}
		}
		c.mu.Unlock()
	}
	return n, err
}

// parsed tells c that net/http parsed the request it is reading (a
// handler runs): its start is of no more use, and neither are the body's
// bytes read until the answer begins.
func (c *errorConn) parsed() {
	c.mu.Lock()
	c.dropHead()
	c.state = headParsed
	c.mu.Unlock()
}

// dropHead gives the head back to the pool. c.mu is held.
func (c *errorConn) dropHead() {
	if c.head != nil {
		*c.head = (*c.head)[:0]
		headPool.Put(c.head)
		c.head = nil
	}
}

// Write writes p, or p's error rewritten in the client's dialect when p is
// net/http's plain-text answer to a request it could not parse.
func (c *errorConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	var out []byte
	if code, msg, ok := plainError(p); ok {
		var head []byte
		if c.head != nil {
			head = *c.head
		}
		d := headDialect(head)
		out = dialectError(d, code, msg)
		if c.count != nil {
			c.count(d)
		}
	}
	c.dropHead()
	c.state = headFresh
	c.mu.Unlock()
	if out == nil {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// errorConnKey is the context key of a connection's *errorConn
// (connErrorConn), for the handler to say its request was parsed.
type errorConnKey struct{}

// connErrorConn is the http.Server's ConnContext: it puts c in the
// connection's context when it is an *errorConn.
func connErrorConn(ctx context.Context, c net.Conn) context.Context {
	if ec, ok := c.(*errorConn); ok {
		return context.WithValue(ctx, errorConnKey{}, ec)
	}
	return ctx
}

// requestParsed tells r's connection, when it is an *errorConn, that r
// was parsed.
func requestParsed(r *http.Request) {
	if ec, ok := r.Context().Value(errorConnKey{}).(*errorConn); ok {
		ec.parsed()
	}
}

// plainError reads net/http's own error response: its status and the text
// after it ("400 Bad Request: malformed Host header" gives 400 and
// "malformed Host header"; a bare "400 Bad Request" gives "").
func plainError(p []byte) (code int, text string, ok bool) {
	if !bytes.HasPrefix(p, []byte(statusLinePrefix)) || len(p) < len(statusLinePrefix)+3 {
		return 0, "", false
	}
	i := bytes.Index(p, []byte(plainErrorHeaders))
	if i < 0 || bytes.IndexByte(p[:i], '\n') >= 0 { // the headers follow the status line
		return 0, "", false
	}
	code, err := strconv.Atoi(string(p[len(statusLinePrefix) : len(statusLinePrefix)+3]))
	if err != nil || code < 400 || code > 599 {
		return 0, "", false
	}
	body := string(p[i+len(plainErrorHeaders):])
	prefix := strconv.Itoa(code) + " " + http.StatusText(code)
	switch {
	case len(body) > len(prefix)+2 && body[:len(prefix)+2] == prefix+": ":
		text = body[len(prefix)+2:]
	case body != prefix:
		text = body
	}
	return code, text, true
}

// headDialect tells the dialect of the request whose start is head: the
// Anthropic one for a path under /v1/messages or an anthropic-version
// header, Gemini's for a path under /v1beta/, a :generateContent method or
// an x-goog-api-key header, else OpenAI's.
func headDialect(head []byte) dialect {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	if bytes.Contains(line, []byte("/v1beta/")) || bytes.Contains(line, []byte("GenerateContent")) ||
		bytes.Contains(line, []byte(":generateContent")) || bytes.Contains(bytes.ToLower(head), []byte("\nx-goog-api-key:")) {
		return geminiDialect
	}
	if bytes.Contains(line, []byte("/messages")) ||
		bytes.Contains(bytes.ToLower(head), []byte("\nanthropic-version:")) {
		return anthropicDialect
	}
	return openAIDialect
}

// dialectError is a whole HTTP response: net/http's error code with a
// JSON body in dialect d that says what was wrong and what to fix.
func dialectError(d dialect, code int, text string) []byte {
	e := &apiError{Status: code, Type: "invalid_request_error", NoRetry: true}
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		e.Message = "the request's headers are larger than the gateway accepts (1 MiB): send fewer or shorter headers"
	case http.StatusNotImplemented:
		e.Message = "the request's Transfer-Encoding is not one HTTP/1.1 defines: send chunked, or a Content-Length"
	default:
		e.Message = "the request is not valid HTTP/1.1 and was not read"
		if text != "" {
			e.Message += " (" + text + ")"
		}
		e.Message += ": check its request line and headers (no control characters such as NUL, CR or LF in names or values) and its Content-Length (a whole number of bytes)"
	}
	body := appendDialectError(make([]byte, 0, 256), d, e, "")
	body = append(body, '\n')
	out := make([]byte, 0, 160+len(body))
	out = append(out, statusLinePrefix...)
	out = strconv.AppendInt(out, int64(code), 10)
	out = append(out, ' ')
	out = append(out, http.StatusText(code)...)
	out = append(out, "\r\nContent-Type: application/json\r\nConnection: close\r\nX-Should-Retry: false\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\n\r\n"...)
	return append(out, body...)
}
