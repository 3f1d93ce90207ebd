package exchange

import (
	"bytes"
	"context"
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
	method, body := p.Method, io.Reader(bytes.NewReader(p.Body))
	if method == "" {
		method = http.MethodPost
	} else if method == http.MethodGet {
		body = nil
	}
	req, err := http.NewRequestWithContext(ctx, method, p.URL, body)
	if err != nil {
		return nil, Redact(err, p.Key)
	}
	h := req.Header
	if body != nil {
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
