package anthropic

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

// Defaults of a Client.
const (
	// DefaultBaseURL is the API root used when Client.BaseURL is empty.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version header sent when
	// Client.Version is empty: the version the Messages API has been
	// stable under, which every model accepts.
	DefaultVersion = "2023-06-01"
)

// Client speaks the Anthropic Messages API to one provider with one key.
// It implements llm.Client: each call is exactly one HTTP exchange
// (POST {BaseURL}/v1/messages); it never retries, and the default HTTP
// client does not follow redirects (a 3xx is returned as an error status).
// The API key never appears in an error it returns.
//
// The zero value talks to Anthropic without a key. A Client is safe for
// concurrent use once its fields are set.
type Client struct {
	// BaseURL is the API root, without /v1/messages: e.g.
	// https://api.anthropic.com, or the root of an Anthropic-compatible
	// server. Empty means DefaultBaseURL. A trailing slash is ignored, and
	// so is a trailing /v1 (https://api.anthropic.com/v1 works too).
	BaseURL string
	// APIKey is sent as the x-api-key header. Empty sends none (set an
	// Authorization header in Header for a bearer token instead).
	APIKey string
	// Version is the anthropic-version header. Empty means DefaultVersion.
	Version string
	// HTTPClient sends the request. Nil means a package default with a large
	// idle pool (256 idle connections per host), no overall timeout (the
	// context bounds each call) and no redirects.
	HTTPClient *http.Client
	// Header holds extra headers (e.g. anthropic-beta). They replace the
	// default headers of the same name, x-api-key and anthropic-version
	// included.
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

// Complete sends req without streaming and decodes the answer with
// DecodeResponse. req.Stream is ignored.
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

// Stream sends req asking for a stream and returns it decoded by
// DecodeStream. req.Stream is ignored. ctx bounds the whole stream: its
// cancellation aborts a blocked Next. The caller must Close the stream.
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

// endpoint is the URL of the Messages API under base.
func endpoint(base string) string {
	if base == "" {
		base = DefaultBaseURL
	}
	base = strings.TrimRight(base, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return base + "/messages"
}

// send makes the one HTTP exchange of a call.
func (c *Client) send(ctx context.Context, req *llm.Request, stream bool) (*http.Response, error) {
	body, err := EncodeRequest(req, stream)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint(c.BaseURL), bytes.NewReader(body))
	if err != nil {
		return nil, redact(err, c.APIKey)
	}
	h := hreq.Header
	h.Set("Content-Type", "application/json")
	if stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	h.Set("User-Agent", "detour")
	version := c.Version
	if version == "" {
		version = DefaultVersion
	}
	h.Set("Anthropic-Version", version)
	if c.APIKey != "" {
		h.Set("X-Api-Key", c.APIKey)
	}
	for k, v := range c.Header {
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
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
		pe.Type = strings.ReplaceAll(pe.Type, key, redacted)
		pe.Code = strings.ReplaceAll(pe.Code, key, redacted)
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
