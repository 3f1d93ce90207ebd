package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
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
	// HTTPClient sends the request. Nil means a default shared by the wire
	// adapters, with a large idle pool (256 idle connections per host), no
	// overall timeout (the context bounds each call) and no redirects.
	HTTPClient *http.Client
	// Header holds extra headers (e.g. anthropic-beta). They replace the
	// default headers of the same name, x-api-key and anthropic-version
	// included.
	Header http.Header
}

var _ llm.Client = (*Client)(nil)

// Carries implements llm.Carrier: of what a request from another dialect
// carries beyond the canonical fields, the Messages API is given its
// response_format, as a forced tool (structured.go), unless the request
// has tools of its own ("response_format with tools"); its images, inline
// (PNG, JPEG, WebP, GIF) or by URL; and its documents, inline PDFs, PDFs
// by URL and plain text, with their titles.
func (c *Client) Carries(need string) bool { return carried[need] }

// Fit implements llm.Fitter: what a request translated for Anthropic
// cannot have beside its reasoning. Thinking and a forced tool (a
// tool_choice of any or one tool, or the tool structured output is
// forced into) cannot go together; thinking takes no temperature and a
// top_p of 0.95 or more only, so those are dropped.
func (c *Client) Fit(req *llm.Request) (missing, dropped []string) {
	if req.Reasoning.Off() {
		return nil, nil
	}
	if _, forced := structuredOf(req); forced || forcesTool(req.ToolChoice) {
		missing = append(missing, "reasoning with a forced tool")
	}
	if req.Temperature != nil {
		dropped = append(dropped, "temperature")
	}
	if p := req.TopP; p != nil && *p < 0.95 {
		dropped = append(dropped, "top_p")
	}
	return missing, dropped
}

// forcesTool reports whether tool_choice (either dialect's shape) makes
// the model call a tool.
func forcesTool(raw json.RawMessage) bool {
	tc, err := encodeToolChoice(raw)
	if err != nil || tc == nil {
		return false
	}
	var v struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(tc, &v) == nil && (v.Type == "any" || v.Type == "tool")
}

// carried are the needs Carries says yes to.
var carried = map[string]bool{
	"reasoning_effort": true,
	"thinkingConfig":   true, // Gemini's, from detour's Gemini surface
	"response_format":  true,
	llm.NeedImage:      true, llm.NeedImage + " (image/gif)": true, llm.NeedImageURL: true,
	llm.NeedDocument: true, llm.NeedDocument + " (text/plain)": true, llm.NeedDocumentURL: true,
	llm.NeedDocumentTitle: true,
}

// Complete sends req without streaming and decodes the answer with
// DecodeResponse. req.Stream is ignored.
func (c *Client) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := c.send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	if req.RawFor(dialect) != nil {
		return decoder.DecodeResponseRaw(resp, c.APIKey, dialect)
	}
	out, err := decoder.DecodeResponse(resp, c.APIKey)
	if st, ok := structuredOf(req); ok && err == nil {
		st.answer(out)
	}
	return out, err
}

// Stream sends req asking for a stream and returns it decoded by
// DecodeStream. req.Stream is ignored. ctx bounds the whole stream: its
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
	if so, ok := structuredOf(req); ok && err == nil && req.RawFor(dialect) == nil {
		return &structuredStream{Stream: st, s: so}, nil
	}
	return st, err
}

// endpoint is the URL of the Messages API under base.
func endpoint(base string) string { return apiRoot(base) + "/messages" }

// apiRoot is base with its /v1, DefaultBaseURL's when base is empty.
func apiRoot(base string) string {
	if base == "" {
		base = DefaultBaseURL
	}
	base = strings.TrimRight(base, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return base
}

// Probe implements llm.Prober: GET /v1/models/{model}, the model's
// metadata (free; it also checks the key).
func (c *Client) Probe(ctx context.Context, model string) error {
	version := c.Version
	if version == "" {
		version = DefaultVersion
	}
	h := http.Header{}
	h.Set("Anthropic-Version", version)
	if c.APIKey != "" {
		h.Set("X-Api-Key", c.APIKey)
	}
	resp, err := exchange.Post{Method: http.MethodGet, URL: apiRoot(c.BaseURL) + "/models/" + url.PathEscape(model),
		Header: h, Override: c.Header, Key: c.APIKey, Client: c.HTTPClient}.Do(ctx)
	if err != nil {
		return err
	}
	return decoder.Check(resp, c.APIKey)
}

// send makes the one HTTP exchange of a call.
func (c *Client) send(ctx context.Context, req *llm.Request, stream bool) (*http.Response, error) {
	var body []byte
	var err error
	if raw := req.RawFor(dialect); raw != nil {
		// The client spoke this dialect: its body goes on as it came.
		body, err = exchange.RawBody(dialect, raw, req.Model, stream)
	} else {
		body, err = EncodeRequest(req, stream)
	}
	if err != nil {
		return nil, err
	}
	version := c.Version
	if version == "" {
		version = DefaultVersion
	}
	h := http.Header{}
	h.Set("Anthropic-Version", version)
	if r := req.Raw; r != nil && r.Dialect == dialect {
		// The client's version and beta features go with its body.
		for _, k := range []string{"Anthropic-Version", "Anthropic-Beta"} {
			if v := r.Header.Values(k); len(v) > 0 {
				h[k] = v
			}
		}
	}
	if c.APIKey != "" {
		h.Set("X-Api-Key", c.APIKey)
	}
	return exchange.Post{URL: endpoint(c.BaseURL), Body: body, Stream: stream,
		Header: h, Override: c.Header, Key: c.APIKey, Client: c.HTTPClient}.Do(ctx)
}
