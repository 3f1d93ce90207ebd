package exchange

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detourhq/detour/llm"
)

// Post is the one HTTP exchange of an adapter's call: a POST of a JSON
// body (or, with Method GET, a read with none: a probe). Do never retries,
// and the default client does not follow redirects (a 3xx comes back as
// the response).
type Post struct {
	// Method is the HTTP method; empty means POST. A GET sends no body and
	// no Content-Type.
	Method string
	// URL is the endpoint.
	URL string
	// Body is the JSON request body.
	Body []byte
	// Stream asks for an event stream: Accept is text/event-stream rather
	// than application/json.
	Stream bool
	// Header holds the dialect's own headers (its key, its version), set
	// over the defaults: Content-Type application/json, Accept, and
	// User-Agent detour.
	Header http.Header
	// Override holds the caller's extra headers, set last: each replaces
	// the header of the same name, Header's included.
	Override http.Header
	// Key is the API key, redacted (see Redact) from every error Do
	// returns.
	Key string
	// Client sends the request. Nil means a default shared by the
	// adapters: a large idle pool (256 idle connections per host, 1024 in
	// all), a 2 KiB write and a 2 KiB read buffer per connection, no
	// overall timeout (the context bounds each call) and no redirects.
	Client *http.Client
}

// writeBufferSize and readBufferSize are the default client's buffers
// per connection.
const (
	writeBufferSize = 2 << 10
	readBufferSize  = 2 << 10
)

// defaultClient is Post's default *http.Client, built once, on first use.
var defaultClient = sync.OnceValue(func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	// An HTTP/1 connection keeps its write buffer for its whole life, a
	// stream's minutes included, though only the request goes through it.
	// 2 KiB instead of 4 holds the head and body of a request with a
	// prompt of a kilobyte or so in one write; past the buffer, the rest
	// of the body goes out in writes of up to 32 KiB of its own, as it
	// did past 4 KiB.
	t.WriteBufferSize = writeBufferSize
	// The read buffer is kept as long: a stream reads its events through
	// it for minutes. 2 KiB instead of 4 holds the head of a provider's
	// answer, two dozen headers (rate limits, cookies, tracing) included,
	// so it is still read in one read; a body read into a buffer of at
	// least that size bypasses it, as before.
	t.ReadBufferSize = readBufferSize
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
})

// The values of the headers every request carries, shared by all of them
// (read only; a slice literal's capacity is its length, so an Add copies):
// a []string{v} apiece cost an allocation per header per request.
var (
	jsonValue        = []string{"application/json"}
	eventStreamValue = []string{"text/event-stream"}
	agentValue       = []string{"detour"}
)

// Do sends the request and returns the response, whatever its status; the
// caller owns its body. ctx bounds the whole exchange, the reading of the
// body included. An error has p.Key redacted. When ctx carries an
// llm.Progress, it hears of the headers, and of each read of a
// non-streamed body.
func (p Post) Do(ctx context.Context) (*http.Response, error) {
	method := p.Method
	if method == "" {
		method = http.MethodPost
	}
	var held *heldBody
	if p.Stream && method != http.MethodGet && len(p.Body) > 0 {
		held = &heldBody{b: p.Body, r: bytes.NewReader(p.Body)}
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: held.wrote})
	}
	req, err := http.NewRequestWithContext(ctx, method, p.URL, nil)
	if err != nil {
		return nil, Redact(err, p.Key)
	}
	h := req.Header
	if method != http.MethodGet {
		setBody(req, p.Body, held)
		h["Content-Type"] = jsonValue
	}
	if p.Stream {
		h["Accept"] = eventStreamValue
	} else {
		h["Accept"] = jsonValue
	}
	h["User-Agent"] = agentValue
	for _, from := range []http.Header{p.Header, p.Override} {
		for k, v := range from {
			// Shared, not copied: a transport reads a request's headers and
			// never writes them (RoundTripper's contract), and the capacity
			// cut to the length makes an Add elsewhere copy.
			h[http.CanonicalHeaderKey(k)] = v[:len(v):len(v)]
		}
	}
	hc := p.Client
	if hc == nil {
		hc = defaultClient()
	}
	resp, err := hc.Do(req)
	// The transport holds req until the response's body is read to its
	// end: for a stream, its whole life. The body's bytes are of no use
	// once the answer began (nothing is sent twice past that point), so
	// they go now rather than with the stream.
	held.release()
	if err != nil {
		return nil, Redact(err, p.Key)
	}
	if pr := llm.ProgressOf(ctx); pr != nil {
		pr.Headers()
		if !p.Stream {
			resp.Body = &progressBody{ReadCloser: resp.Body, p: pr}
		}
	}
	return resp, nil
}

// progressBody reports each read of a non-streamed body that brought
// bytes to the exchange's llm.Progress.
type progressBody struct {
	io.ReadCloser
	p llm.Progress
}

func (b *progressBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	if n > 0 {
		b.p.Body()
	}
	return n, err
}

// heldBody is a stream's request body. The transport keeps the request
// for the stream's life; the body's bytes are of no use once written
// (nothing is sent twice once the answer began), so its reader lets go of
// them as soon as the request is out (wrote), a resend's reader at its end
// (spentReader), and GetBody works until release.
type heldBody struct {
	mu sync.Mutex // guards b
	b  []byte
	// r is the body of the first send; wroteOnce marks that the first
	// write ended.
	r         *bytes.Reader
	wroteOnce atomic.Bool
}

// setBody gives req body b, its length, and a GetBody. The body is a
// bytes.Reader, which the transport writes with the headers in one write
// (a reader it does not know has the headers flushed first: one more
// write per request, golang.org/issue/22088). A stream's (held not nil)
// is held's reader, and its GetBody works until held's release.
func setBody(req *http.Request, b []byte, held *heldBody) {
	req.ContentLength = int64(len(b))
	switch {
	case len(b) == 0:
		req.Body, req.GetBody = http.NoBody, func() (io.ReadCloser, error) { return http.NoBody, nil }
	case held == nil:
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	default:
		req.Body = io.NopCloser(held.r)
		req.GetBody = func() (io.ReadCloser, error) {
			held.mu.Lock()
			defer held.mu.Unlock()
			if held.b == nil {
				return nil, errBodyReleased
			}
			return &spentReader{b: held.b}, nil
		}
	}
}

var errBodyReleased = errors.New("request body already released")

// spentReader reads b once and lets go of it at its end. It is the body
// of a stream's resend by the transport (GetBody: the first send found
// its idle connection closed), which the transport keeps, as it keeps the
// first, for the stream's life. Not a bytes.Reader, so the transport
// sends the headers in a write of their own first: a rare resend's cost.
type spentReader struct{ b []byte }

// Read reads on from where the last read stopped.
func (r *spentReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		r.b = nil
		return 0, io.EOF
	}
	n := copy(p, r.b)
	if r.b = r.b[n:]; len(r.b) == 0 {
		r.b = nil
	}
	return n, nil
}

// Close does nothing: the bytes are let go of at the end of the read.
func (r *spentReader) Close() error { return nil }

// wrote is the request's httptrace WroteRequest. net/http calls it on the
// goroutine that wrote the request, once the write ended; after the first
// send's write (a retry's reader is another), the first reader empties:
// nothing reads it again, and nothing else touches it.
func (h *heldBody) wrote(info httptrace.WroteRequestInfo) {
	if h.wroteOnce.Swap(true) || info.Err != nil {
		return
	}
	h.r.Reset(nil)
}

// release lets go of the bytes; GetBody fails from then on. Nil-safe.
func (h *heldBody) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.b = nil
	h.mu.Unlock()
}
