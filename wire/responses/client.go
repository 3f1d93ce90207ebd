package responses

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

// Client speaks the Responses API to one provider with one key. It
// implements llm.Client: each call is exactly one HTTP exchange (POST
// {BaseURL}/responses); it never retries, and the default HTTP client does
// not follow redirects (a 3xx is returned as an error status). The API key
// never appears in an error it returns.
//
// The zero value talks to OpenAI without a key and asks it to keep
// nothing (store: false). A Client is safe for concurrent use once its
// fields are set.
type Client struct {
	// BaseURL is the API root, without the /responses path: e.g.
	// https://api.openai.com/v1. Empty means DefaultBaseURL. A trailing
	// slash is ignored.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". Empty sends no
	// Authorization header.
	APIKey string
	// HTTPClient sends the request. Nil means a default shared by the wire
	// adapters, with a large idle pool, no overall timeout (the context
	// bounds each call) and no redirects.
	HTTPClient *http.Client
	// Header holds extra headers. They replace the default headers of the
	// same name, Authorization included.
	Header http.Header
	// Store asks the provider to keep each response it makes from a
	// translated request (store: true), for its dashboards or evals. False
	// (the default) sends store: false, so nothing is kept at the provider;
	// a raw request's own store field, when it has one, is sent as written.
	Store bool
}

var _ llm.Client = (*Client)(nil)

// Carries implements llm.Carrier: of what a request from another dialect
// carries beyond the canonical fields, a Responses provider is given its
// response_format (as text.format), its reasoning effort or thinking
// budget (reasoning.effort), strict function tools, its images, inline
// (PNG, JPEG, WebP, GIF) or by URL (input_image), and its PDFs, inline
// with their titles or by URL (input_file). Not audio: the Responses API
// takes none as input.
func (c *Client) Carries(need string) bool { return carried[need] }

// carried are the needs Carries says yes to.
var carried = map[string]bool{
	"thinking":         true,
	"thinkingConfig":   true, // Gemini's, from detour's Gemini surface
	"reasoning_effort": true,
	"response_format":  true,
	"strict":           true,
	llm.NeedImage:      true, llm.NeedImage + " (image/gif)": true, llm.NeedImageURL: true,
	llm.NeedDocument: true, llm.NeedDocumentTitle: true, llm.NeedDocumentURL: true,
}

// Fit implements llm.Fitter: what a request translated for the Responses
// API cannot have. The API takes no stop sequences: a request with some
// drops them, which the router allows only when the request does not
// require them (stop is not droppable, so such a target is skipped).
func (c *Client) Fit(req *llm.Request) (missing, dropped []string) {
	if len(req.Stop) > 0 {
		dropped = append(dropped, "stop")
	}
	return nil, dropped
}

// Complete sends req without streaming and decodes the answer with
// DecodeResponse. req.Stream is ignored. A request whose Raw is in this
// dialect is sent as its client wrote it (see the package doc), and the
// answer keeps its body in Raw.
func (c *Client) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := c.send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	if req.RawFor(Dialect) != nil {
		return decoder.DecodeResponseRaw(resp, c.APIKey, Dialect)
	}
	return decoder.DecodeResponse(resp, c.APIKey)
}

// Stream sends req asking for a stream and returns it decoded by
// DecodeStream. req.Stream is ignored. A request whose Raw is in this
// dialect is sent as its client wrote it, and every event comes as a chunk
// that keeps its data in Raw and its type in Event. ctx bounds the whole
// stream: its cancellation aborts a blocked Next. The caller must Close
// the stream.
func (c *Client) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	resp, err := c.send(ctx, req, true)
	if err != nil {
		return nil, err
	}
	st, err := decoder.DecodeStream(resp, c.APIKey)
	if s, ok := st.(*stream); ok && req.RawFor(Dialect) != nil {
		s.raw = true
	}
	return st, err
}

// Probe implements llm.Prober: GET {BaseURL}/models, the model list of
// OpenAI and of the providers that copy its API. It costs nothing; model
// is not sent.
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
		return nil
	}
	return http.Header{"Authorization": {"Bearer " + c.APIKey}}
}

// send makes the one HTTP exchange of a call.
func (c *Client) send(ctx context.Context, req *llm.Request, stream bool) (*http.Response, error) {
	var body []byte
	var err error
	if raw := req.RawFor(Dialect); raw != nil {
		body, err = rawBody(raw, req.Model, stream)
	} else {
		body, err = c.encode(req, stream)
	}
	if err != nil {
		return nil, err
	}
	return exchange.Post{URL: strings.TrimRight(c.base(), "/") + "/responses", Body: body, Stream: stream,
		Header: c.auth(), Override: c.Header, Key: c.APIKey, Client: c.HTTPClient}.Do(ctx)
}

// encode is EncodeRequest with the client's store setting.
func (c *Client) encode(req *llm.Request, stream bool) ([]byte, error) {
	return encodeRequest(req, stream, c.Store)
}

// storeOff is the store field a raw request without one is sent with:
// the Responses API keeps every response unless told not to.
var storeOff = jsonedit.Field{Key: "store", Value: []byte("false")}

// rawBody is a client's raw Responses body made ready for one send to
// model (exchange.RawBody), with store: false added when the body has no
// store field of its own (or a null one).
func rawBody(raw []byte, model string, stream bool) ([]byte, error) {
	body, err := exchange.RawBody(Dialect, raw, model, stream)
	if err != nil {
		return nil, err
	}
	if v, _ := jsonedit.Value(body, "store"); len(v) == 0 || string(v) == "null" {
		if out, ok := jsonedit.Object(make([]byte, 0, len(body)+16), body, nil, storeOff); ok {
			body = out
		}
	}
	return body, nil
}
