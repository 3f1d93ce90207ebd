package exchange

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
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
	// all), no overall timeout (the context bounds each call) and no
	// redirects.
	Client *http.Client
}

// defaultClient is Post's default *http.Client, built once, on first use.
var defaultClient = sync.OnceValue(func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
})

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
	req, err := http.NewRequestWithContext(ctx, method, p.URL, nil)
	if err != nil {
		return nil, Redact(err, p.Key)
	}
	var held *heldBody
	h := req.Header
	if method != http.MethodGet {
		held = setBody(req, p.Body, p.Stream)
		h.Set("Content-Type", "application/json")
	}
	if p.Stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	h.Set("User-Agent", "detour")
	for _, from := range []http.Header{p.Header, p.Override} {
		for k, v := range from {
			h[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
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

// heldBody keeps a request body's bytes for GetBody (the transport's
// rewind when a reused connection failed before the answer) until release;
// the reader it hands out lets go of them once read to the end or closed.
type heldBody struct {
	mu sync.Mutex // guards b
	b  []byte
}

// setBody gives req body b, its length, and a GetBody. A stream's body is
// a sendBody and its GetBody works until the returned heldBody's release:
// the transport keeps req for the stream's life, and a bytes.Reader would
// keep b as long. Any other body is a bytes.Reader, which the transport
// writes with the headers in one write (a reader it does not know, such
// as a sendBody, has the headers flushed first: one more write per
// request, golang.org/issue/22088); it lasts only until the answer is
// read.
func setBody(req *http.Request, b []byte, stream bool) *heldBody {
	req.ContentLength = int64(len(b))
	if len(b) == 0 {
		req.Body, req.GetBody = http.NoBody, func() (io.ReadCloser, error) { return http.NoBody, nil }
		return nil
	}
	if !stream {
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		return nil
	}
	held := &heldBody{b: b}
	req.Body = &sendBody{b: b}
	req.GetBody = func() (io.ReadCloser, error) {
		held.mu.Lock()
		defer held.mu.Unlock()
		if held.b == nil {
			return nil, errBodyReleased
		}
		return &sendBody{b: held.b}, nil
	}
	return held
}

var errBodyReleased = errors.New("request body already released")

// release lets go of the bytes; GetBody fails from then on. Nil-safe.
func (h *heldBody) release() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.b = nil
	h.mu.Unlock()
}

// sendBody reads b once; it lets go of b at its end and on Close.
type sendBody struct {
	mu sync.Mutex // guards b; Close may come from another goroutine
	b  []byte
}

func (s *sendBody) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.b) == 0 {
		s.b = nil
		return 0, io.EOF
	}
	n := copy(p, s.b)
	if s.b = s.b[n:]; len(s.b) == 0 {
		s.b = nil // an empty tail would still hold the array
	}
	return n, nil
}

func (s *sendBody) Close() error {
	s.mu.Lock()
	s.b = nil
	s.mu.Unlock()
	return nil
}
