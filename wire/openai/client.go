package openai

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
const DefaultBaseURL = "https://api.openai.com/v1"

// Client speaks the OpenAI chat completions dialect to one provider with
// one key. It implements llm.Client: each call is exactly one HTTP exchange
// (POST {BaseURL}/chat/completions); it never retries, and the default HTTP
// client does not follow redirects (a 3xx is returned as an error status).
// The API key never appears in an error it returns.
//
// The zero value talks to OpenAI without a key. A Client is safe for
// concurrent use once its fields are set.
type Client struct {
	// BaseURL is the API root, without the /chat/completions path: e.g.
	// https://api.groq.com/openai/v1, https://openrouter.ai/api/v1,
	// http://127.0.0.1:11434/v1. Empty means DefaultBaseURL. A trailing
	// slash is ignored.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". Empty sends no
	// Authorization header (local servers).
	APIKey string
	// HTTPClient sends the request. Nil means a package default with a large
	// idle pool (256 idle connections per host), no overall timeout (the
	// context bounds each call) and no redirects.
	HTTPClient *http.Client
	// Header holds extra headers (e.g. OpenRouter's HTTP-Referer and
	// X-Title). They replace the default headers of the same name,
	// Authorization included.
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

// send makes the one HTTP exchange of a call.
func (c *Client) send(ctx context.Context, req *llm.Request, stream bool) (*http.Response, error) {
	body, err := EncodeRequest(req, stream)
	if err != nil {
		return nil, err
	}
	base := c.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost,
		strings.TrimRight(base, "/")+"/chat/completions", bytes.NewReader(body))
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
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
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

// minRedactLen is the shortest key redact looks for.
const minRedactLen = 8

// redacted is what replaces the key in an error.
const redacted = "[redacted]"

// redact removes key from err: in place in an *llm.ProviderError (message
// and body) and a *url.Error (URL), and by wrapping when the message still
// holds it. The wrapper keeps errors.Is and errors.As working. Keys shorter
// than minRedactLen are placeholders ("ollama", "k"), not secrets: replacing
// them would mangle ordinary words of the message.
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
