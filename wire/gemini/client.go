package gemini

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/detourhq/detour/llm"
)

// DefaultBaseURL is the API root used when Client.BaseURL is empty.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// ErrNoModel is returned by Complete and Stream for a request whose Model
// is empty: the model is part of Gemini's URL.
var ErrNoModel = errors.New("gemini: request names no model")

// Client speaks the Gemini API (generateContent) to Google with one key. It
// implements llm.Client: each call is exactly one HTTP exchange (POST
// {BaseURL}/models/{model}:generateContent, or
// :streamGenerateContent?alt=sse for Stream); it never retries, and the
// default HTTP client does not follow redirects (a 3xx is returned as an
// error status). The key is sent in the x-goog-api-key header, never in
// the URL, and never appears in an error the Client returns.
//
// The zero value talks to Google without a key. A Client is safe for
// concurrent use once its fields are set.
type Client struct {
	// BaseURL is the API root, with its version and without the
	// /models/... path. Empty means DefaultBaseURL. A trailing slash is
	// ignored.
	BaseURL string
	// APIKey is sent as the x-goog-api-key header. Empty sends none.
	APIKey string
	// HTTPClient sends the request. Nil means a package default with a
	// large idle pool (256 idle connections per host), no overall timeout
	// (the context bounds each call) and no redirects.
	HTTPClient *http.Client
	// Header holds extra headers. They replace the default headers of the
	// same name, x-goog-api-key included.
	Header http.Header
}

var _ llm.Client = (*Client)(nil)

// defaultHTTPClient is built once, on first use.
var defaultHTTPClient = sync.OnceValue(func() *http.Client {
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

// Complete sends req to :generateContent and decodes the answer with
// DecodeResponse. req.Model names the model, with or without the
// "models/" prefix; req.Stream is ignored.
func (c *Client) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := c.send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	out, err := DecodeResponse(resp)
	if err != nil {
		return nil, redact(err, c.APIKey)
	}
	return out, nil
}

// Stream sends req to :streamGenerateContent?alt=sse and returns the
// answer decoded by DecodeStream. req.Stream is ignored. ctx bounds the
// whole stream: its cancellation aborts a blocked Next. The caller must
// Close the stream.
func (c *Client) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	resp, err := c.send(ctx, req, true)
	if err != nil {
		return nil, err
	}
	st, err := DecodeStream(resp)
	if err != nil {
		return nil, redact(err, c.APIKey)
	}
	if s, ok := st.(*stream); ok {
		s.key = c.APIKey
	}
	return st, nil
}

// send makes the one HTTP exchange of a call.
func (c *Client) send(ctx context.Context, req *llm.Request, stream bool) (*http.Response, error) {
	if req == nil {
		return nil, errors.New("gemini: nil request")
	}
	u, err := c.endpoint(req.Model, stream)
	if err != nil {
		return nil, err
	}
	body, err := EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, redact(err, c.APIKey)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	hreq.Header.Set("User-Agent", "detour")
	if c.APIKey != "" {
		hreq.Header.Set("X-Goog-Api-Key", c.APIKey)
	}
	for k, v := range c.Header {
		hreq.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		return nil, redact(err, c.APIKey)
	}
	return resp, nil
}

// endpoint is the URL of a call: {BaseURL}/models/{model}:generateContent
// or :streamGenerateContent?alt=sse. A model already naming its collection
// ("models/gemini-2.5-flash", "tunedModels/x") keeps it; each path segment
// is escaped.
func (c *Client) endpoint(model string, stream bool) (string, error) {
	model = strings.TrimSpace(model)
	if model == "" {
		return "", ErrNoModel
	}
	if !strings.HasPrefix(model, "models/") && !strings.HasPrefix(model, "tunedModels/") {
		model = "models/" + model
	}
	segs := strings.Split(model, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	base := c.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u := strings.TrimRight(base, "/") + "/" + strings.Join(segs, "/")
	if stream {
		return u + ":streamGenerateContent?alt=sse", nil
	}
	return u + ":generateContent", nil
}

// minRedactLen is the shortest key redact looks for.
const minRedactLen = 8

// redacted is what replaces the key in an error.
const redacted = "[redacted]"

// redact removes key from err: in place in an *llm.ProviderError (message
// and body) and a *url.Error (URL), and by wrapping when the message still
// holds it. The wrapper keeps errors.Is and errors.As working. Keys shorter
// than minRedactLen are placeholders, not secrets: replacing them would
// mangle ordinary words of the message.
func redact(err error, key string) error {
	if err == nil || len(key) < minRedactLen {
		return err
	}
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		pe.Message = strings.ReplaceAll(pe.Message, key, redacted)
		pe.Param = strings.ReplaceAll(pe.Param, key, redacted)
		if bytes.Contains(pe.Body, []byte(key)) {
			pe.Body = bytes.ReplaceAll(pe.Body, []byte(key), []byte(redacted))
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = strings.ReplaceAll(ue.URL, key, redacted)
	}
	if msg := err.Error(); strings.Contains(msg, key) {
		return &redactedError{msg: strings.ReplaceAll(msg, key, redacted), err: err}
	}
	return err
}

// redactedError is an error whose message had the key removed.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
