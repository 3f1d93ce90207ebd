package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

// The embeddings endpoints of the Gemini API
// (https://ai.google.dev/api/embeddings): one text goes to
// POST models/{model}:embedContent as {"content": {"parts": [{"text"}]},
// "outputDimensionality"} and comes back as {"embedding": {"values":
// [...]}}; several go to :batchEmbedContents as {"requests": [{"model":
// "models/{model}", "content": ...}, ...]} and come back as
// {"embeddings": [{"values": [...]}, ...]}, in the order sent. Newer
// models add "usageMetadata": {"promptTokenCount"}; older ones count
// nothing.

var _ llm.Embedder = (*Client)(nil)

type (
	embedContentRequest struct {
		Model                string       `json:"model,omitempty"`
		Content              embedContent `json:"content"`
		OutputDimensionality int          `json:"outputDimensionality,omitempty"`
	}
	embedContent struct {
		Parts []embedPart `json:"parts"`
	}
	embedPart struct {
		Text string `json:"text"`
	}
	batchEmbedRequest struct {
		Requests []embedContentRequest `json:"requests"`
	}
	contentEmbedding struct {
		Values *[]float32 `json:"values"`
	}
	// embedResponse is either answer: Embedding for :embedContent,
	// Embeddings for :batchEmbedContents.
	embedResponse struct {
		Embedding     *contentEmbedding  `json:"embedding"`
		Embeddings    []contentEmbedding `json:"embeddings"`
		UsageMetadata *struct {
			PromptTokenCount int `json:"promptTokenCount"`
		} `json:"usageMetadata"`
		Error json.RawMessage `json:"error"`
	}
)

// Embed implements llm.Embedder: one text to :embedContent, several to
// :batchEmbedContents, in one exchange either way, decoded by
// DecodeEmbeddings. req.Model names the model, with or without the
// "models/" prefix; req.User has no place in Gemini's request and is left
// out. The answer's Model is req.Model: Gemini names none.
func (c *Client) Embed(ctx context.Context, req *llm.EmbedRequest) (*llm.EmbedResponse, error) {
	if req == nil || len(req.Input) == 0 {
		return nil, llm.ErrNoInput
	}
	u, err := c.modelURL(req.Model)
	if err != nil {
		return nil, err
	}
	var body []byte
	if len(req.Input) == 1 {
		u += ":embedContent"
		body, err = json.Marshal(embedOne(req.Input[0], "", req.Dimensions))
	} else {
		u += ":batchEmbedContents"
		name := modelName(req.Model)
		b := batchEmbedRequest{Requests: make([]embedContentRequest, len(req.Input))}
		for i, text := range req.Input {
			b.Requests[i] = embedOne(text, name, req.Dimensions)
		}
		body, err = json.Marshal(b)
	}
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if c.APIKey != "" {
		h.Set("X-Goog-Api-Key", c.APIKey)
	}
	resp, err := exchange.Post{URL: u, Body: body, Header: h, Override: c.Header, Key: c.APIKey,
		Client: c.HTTPClient}.Do(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := decoder.ReadJSON(resp, c.APIKey)
	if err != nil {
		return nil, err
	}
	out, err := decodeEmbedBody(resp.Header, raw, len(req.Input))
	if err != nil {
		return nil, exchange.Redact(err, c.APIKey)
	}
	out.Model, out.RateLimit = strings.TrimPrefix(req.Model, "models/"), exchange.RateLimitOf(resp.Header)
	out.ProviderRequestID = llm.ProviderRequestID(resp.Header, nil)
	return out, nil
}

func embedOne(text, model string, dims int) embedContentRequest {
	return embedContentRequest{Model: model, Content: embedContent{Parts: []embedPart{{Text: text}}},
		OutputDimensionality: dims}
}

// modelName is the model's resource name: "models/{model}", or the name
// as given when it already names its collection.
func modelName(model string) string {
	model = strings.TrimSpace(model)
	if strings.HasPrefix(model, "models/") || strings.HasPrefix(model, "tunedModels/") {
		return model
	}
	return "models/" + model
}

// DecodeEmbeddings reads the answer of :embedContent (inputs 1) or
// :batchEmbedContents (inputs texts), and always closes its body. A
// non-2xx status returns ParseError's *llm.ProviderError, as chat errors
// do; a 2xx that is an error envelope returns it too (status 200). A 2xx
// that does not hold exactly one vector of finite numbers per input, all
// of one length, is an error wrapping ErrMalformed that also holds an
// *llm.ProviderError.
func DecodeEmbeddings(resp *http.Response, inputs int) (*llm.EmbedResponse, error) {
	body, err := decoder.ReadJSON(resp, "")
	if err != nil {
		return nil, err
	}
	out, err := decodeEmbedBody(resp.Header, body, inputs)
	if err != nil {
		return nil, err
	}
	out.RateLimit, out.ProviderRequestID = exchange.RateLimitOf(resp.Header), llm.ProviderRequestID(resp.Header, nil)
	return out, nil
}

// decodeEmbedBody decodes a 2xx embeddings body for inputs texts.
func decodeEmbedBody(header http.Header, body []byte, inputs int) (*llm.EmbedResponse, error) {
	var r embedResponse
	if err := json.Unmarshal(body, &r); err != nil {
		if pe, ok := ParseStreamError(body); ok {
			pe.Header, pe.Phase = header, llm.PhaseResponse
			return nil, pe
		}
		return nil, malformed(header, body, llm.PhaseResponse, "embeddings body", err)
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		pe := ParseError(http.StatusOK, header, body)
		if pe.Message == "" && pe.Code == "" && pe.Type == "" {
			pe.Message = "response carries an error object"
		}
		return nil, pe
	}
	list := r.Embeddings
	if r.Embedding != nil {
		list = append([]contentEmbedding{*r.Embedding}, list...)
	}
	bad := func(err error) error { return malformed(header, body, llm.PhaseResponse, "embeddings body", err) }
	if len(list) != inputs {
		return nil, bad(fmt.Errorf("%d vectors for %d inputs", len(list), inputs))
	}
	out := &llm.EmbedResponse{Vectors: make([][]float32, inputs)}
	for i, e := range list {
		if e.Values == nil || len(*e.Values) == 0 {
			return nil, bad(fmt.Errorf("embedding %d has no values", i))
		}
		v := *e.Values
		if i > 0 && len(v) != len(out.Vectors[0]) {
			return nil, bad(fmt.Errorf("embedding %d has %d values where the first has %d", i, len(v), len(out.Vectors[0])))
		}
		for _, x := range v {
			if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, bad(errors.New("a value that is not finite"))
			}
		}
		out.Vectors[i] = v
	}
	if r.UsageMetadata != nil {
		out.Usage.InputTokens = r.UsageMetadata.PromptTokenCount
	}
	return out, nil
}
