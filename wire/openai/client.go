package openai

import (
	"context"
	"net/http"
	"strings"

	"github.com/detourhq/detour/internal/jsonedit"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
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
	// HTTPClient sends the request. Nil means a default shared by the wire
	// adapters, with a large idle pool (256 idle connections per host), no
	// overall timeout (the context bounds each call) and no redirects.
	HTTPClient *http.Client
	// Header holds extra headers (e.g. OpenRouter's HTTP-Referer and
	// X-Title). They replace the default headers of the same name,
	// Authorization included.
	Header http.Header
}

var _ llm.Client = (*Client)(nil)

// Carries implements llm.Carrier: of what a request from another dialect
// carries beyond the canonical fields, an OpenAI-compatible provider is
// given its response_format (the canonical field is OpenAI's own shape),
// its images, inline (PNG, JPEG, WebP, GIF) or by URL, its inline PDFs
// with their titles (as file names), and inline WAV or MP3 audio. Not a document by URL or as
// plain text: chat completions has no form for them.
func (c *Client) Carries(need string) bool { return carried[need] }

// carried are the needs Carries says yes to.
var carried = map[string]bool{
	"thinking":       true,
	"thinkingConfig": true, // Gemini's, from detour's Gemini surface
	// A reasoning effort asked in another surface's words (the Responses
	// API's reasoning.effort) is reasoning_effort here.
	"reasoning_effort": true,
	"response_format":  true,
	// Strict function calling (llm.Tool.Strict), encoded as OpenAI's own.
	"strict":      true,
	llm.NeedImage: true, llm.NeedImage + " (image/gif)": true, llm.NeedImageURL: true,
	llm.NeedDocument: true, llm.NeedDocumentTitle: true, llm.NeedAudio: true,
}

// includeUsage is the stream option detour owns on a raw request: the
// final usage chunk, which the cost and the ledger need.
var includeUsage = jsonedit.Field{Key: "include_usage", Value: []byte("true")}

// Complete sends req without streaming and decodes the answer with
// DecodeResponse. req.Stream is ignored. A request whose Raw is in this
// dialect is sent as its client wrote it (exchange.RawBody), and the
// answer keeps its body in Raw.
func (c *Client) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := c.send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	if req.RawFor(dialect) != nil {
		return decoder.DecodeResponseRaw(resp, c.APIKey, dialect)
	}
	return decoder.DecodeResponse(resp, c.APIKey)
}

// Stream sends req asking for a stream and returns it decoded by
// DecodeStream. req.Stream is ignored. A request whose Raw is in this
// dialect is sent as its client wrote it, and every chunk keeps its
// event's data in Raw. ctx bounds the whole stream: its
// cancellation aborts a blocked Next. The caller must Close the stream.
func (c *Client) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	resp, err := c.send(ctx, req, true)
	if err != nil {
		return nil, err
	}
	st, err := decoder.DecodeStream(resp, c.APIKey)
	if s, ok := st.(*stream); ok && req.RawFor(dialect) != nil {
		s.raw = true
	}
	return st, err
}

// Probe implements llm.Prober: GET {BaseURL}/models, the model list every
// OpenAI-compatible server has (a model's own /models/{id} is not served
// by all of them). It costs nothing; model is not sent.
func (c *Client) Probe(ctx context.Context, model string) error {
	resp, err := exchange.Post{Method: http.MethodGet, URL: strings.TrimRight(c.base(), "/") + "/models",
		Header: c.auth(), Override: c.Header, Key: c.APIKey, Client: c.HTTPClient}.Do(ctx)
	if err != nil {
		return err
	}
	return decoder.Check(resp, c.APIKey)
}

func (c *Client) base() string {
	if c.BaseURL == "" {
		return DefaultBaseURL
	}
	return c.BaseURL
}

func (c *Client) auth() http.Header {
	if c.APIKey == "" {
		return nil // a keyless endpoint (a local server): no map to make
	}
	return http.Header{"Authorization": {"Bearer " + c.APIKey}}
}

// send makes the one HTTP exchange of a call.
func (c *Client) send(ctx context.Context, req *llm.Request, stream bool) (*http.Response, error) {
	var body []byte
	var err error
	if raw := req.RawFor(dialect); raw != nil {
		// The client spoke this dialect: its body goes on as it came.
		body, err = exchange.RawBody(dialect, raw, req.Model, stream, includeUsage)
	} else {
		body, err = EncodeRequest(req, stream)
	}
	if err != nil {
		return nil, err
	}
	return exchange.Post{URL: strings.TrimRight(c.base(), "/") + "/chat/completions", Body: body, Stream: stream,
		Header: c.auth(), Override: c.Header, Key: c.APIKey, Client: c.HTTPClient}.Do(ctx)
}
