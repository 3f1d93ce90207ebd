package gemini

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/detourhq/detour/internal/jsonedit"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
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
	// HTTPClient sends the request. Nil means a default shared by the wire
	// adapters, with a large idle pool (256 idle connections per host), no
	// overall timeout (the context bounds each call) and no redirects.
	HTTPClient *http.Client
	// Header holds extra headers. They replace the default headers of the
	// same name, x-goog-api-key included.
	Header http.Header
}

var _ llm.Client = (*Client)(nil)

// Carries implements llm.Carrier: of what a request from another dialect
// carries beyond the canonical fields, Gemini is given its
// response_format (as responseMimeType and responseSchema), and its
// inline images (PNG, JPEG, WebP, HEIC, HEIF), PDFs, plain-text documents
// and WAV or MP3 audio (as inlineData). Not an image or a document by URL: fileData
// wants a media type the URL does not give, and the Gemini API fetches
// https URLs only lately and not on every endpoint, where a 400 would fail
// the request closed instead of skipping the target. Not GIF images (not
// among Gemini's image types), nor a document's title (no place for it).
func (c *Client) Carries(need string) bool { return carried[need] }

// carried are the needs Carries says yes to.
var carried = map[string]bool{
	"reasoning_effort": true, "thinking": true,
	"response_format": true,
	llm.NeedImage:     true, llm.NeedImage + " (image/heic)": true, llm.NeedImage + " (image/heif)": true,
	llm.NeedDocument: true, llm.NeedDocument + " (text/plain)": true, llm.NeedAudio: true,
}

// Complete sends req to :generateContent and decodes the answer with
// DecodeResponse. req.Model names the model, with or without the
// "models/" prefix; req.Stream is ignored. A request whose Raw is in this
// dialect (a client of detour's Gemini surface) is sent as its client
// wrote it (RawBody), and the answer keeps its body in Raw.
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

// Stream sends req to :streamGenerateContent?alt=sse and returns the
// answer decoded by DecodeStream. req.Stream is ignored. A request whose
// Raw is in this dialect is sent as its client wrote it, and every chunk
// keeps its event's data in Raw (chunks that carry only thoughts too).
// ctx bounds the whole stream: its cancellation aborts a blocked Next.
// The caller must Close the stream.
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

// RawBody returns a client's raw generateContent body (llm.Raw) made ready
// for one send: the fields detour owns (exchange.Owned: "models",
// "detour") left out, every other member as the client wrote it. The
// model and the streaming are in the URL, so nothing else changes.
func RawBody(body []byte) ([]byte, error) {
	out, ok := jsonedit.Object(make([]byte, 0, len(body)), body, exchange.Owned)
	if !ok {
		return nil, errors.New("gemini: the request body is not a JSON object")
	}
	return out, nil
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
	var body []byte
	if raw := req.RawFor(dialect); raw != nil {
		// The client spoke this dialect: its body goes on as it came.
		body, err = RawBody(raw)
	} else {
		body, err = EncodeRequest(req)
	}
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if c.APIKey != "" {
		h.Set("X-Goog-Api-Key", c.APIKey)
	}
	return exchange.Post{URL: u, Body: body, Stream: stream,
		Header: h, Override: c.Header, Key: c.APIKey, Client: c.HTTPClient}.Do(ctx)
}

// Probe implements llm.Prober: GET {BaseURL}/models/{model}, the model's
// metadata (free; it also says whether the key may use the model).
func (c *Client) Probe(ctx context.Context, model string) error {
	u, err := c.modelURL(model)
	if err != nil {
		return err
	}
	h := http.Header{}
	if c.APIKey != "" {
		h.Set("X-Goog-Api-Key", c.APIKey)
	}
	resp, err := exchange.Post{Method: http.MethodGet, URL: u, Header: h, Override: c.Header, Key: c.APIKey,
		Client: c.HTTPClient}.Do(ctx)
	if err != nil {
		return err
	}
	return decoder.Check(resp, c.APIKey)
}

// endpoint is the URL of a call: {BaseURL}/models/{model}:generateContent
// or :streamGenerateContent?alt=sse.
func (c *Client) endpoint(model string, stream bool) (string, error) {
	u, err := c.modelURL(model)
	if err != nil {
		return "", err
	}
	if stream {
		return u + ":streamGenerateContent?alt=sse", nil
	}
	return u + ":generateContent", nil
}

// modelURL is {BaseURL}/models/{model}. A model already naming its
// collection ("models/gemini-2.5-flash", "tunedModels/x") keeps it; each
// path segment is escaped.
func (c *Client) modelURL(model string) (string, error) {
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
	return strings.TrimRight(base, "/") + "/" + strings.Join(segs, "/"), nil
}
