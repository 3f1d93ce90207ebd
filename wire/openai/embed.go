package openai

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

// The embeddings endpoint, POST {BaseURL}/embeddings, as OpenAI documents
// it (https://platform.openai.com/docs/api-reference/embeddings) and
// OpenAI-compatible servers (Mistral, Together, Fireworks, OpenRouter,
// Ollama, vLLM) serve it: a request {"model", "input": [...],
// "encoding_format": "float"}, an answer {"object": "list", "data":
// [{"object": "embedding", "index": 0, "embedding": [...]}], "model",
// "usage": {"prompt_tokens", "total_tokens"}}.

var _ llm.Embedder = (*Client)(nil)

// embedRequest is the body detour sends: always encoding_format float.
type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
	User           string   `json:"user,omitempty"`
}

// embedResponse is an embeddings list.
type embedResponse struct {
	Data  []embedData `json:"data"`
	Model string      `json:"model"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type embedData struct {
	Index     *int            `json:"index"`
	Embedding json.RawMessage `json:"embedding"`
}

// Embed implements llm.Embedder: one POST {BaseURL}/embeddings asking for
// floats, decoded by DecodeEmbeddings. req.Model names the model.
func (c *Client) Embed(ctx context.Context, req *llm.EmbedRequest) (*llm.EmbedResponse, error) {
	if req == nil || len(req.Input) == 0 {
		return nil, llm.ErrNoInput
	}
	body, err := json.Marshal(embedRequest{Model: req.Model, Input: req.Input, EncodingFormat: "float",
		Dimensions: req.Dimensions, User: req.User})
	if err != nil {
		return nil, err
	}
	resp, err := exchange.Post{URL: strings.TrimRight(c.base(), "/") + "/embeddings", Body: body,
		Header: c.auth(), Override: c.Header, Key: c.APIKey, Client: c.HTTPClient}.Do(ctx)
	if err != nil {
		return nil, err
	}
	out, err := decodeEmbeddings(resp, c.APIKey, len(req.Input))
	if err == nil && out.Model == "" {
		out.Model = req.Model
	}
	return out, err
}

// DecodeEmbeddings reads an embeddings response to a request of inputs
// texts, and always closes its body. A non-2xx status returns ParseError's
// *llm.ProviderError, as chat errors do. A 2xx returns the vectors in the
// order of the inputs, except when it is not what was asked: a body with a
// top-level "error" (ParseError with status 200), or one that does not
// hold exactly one vector of numbers per input, all of one length (an
// error wrapping ErrMalformed that also holds an *llm.ProviderError). A
// vector sent as base64 (encoding_format base64: little-endian float32s)
// is decoded.
func DecodeEmbeddings(resp *http.Response, inputs int) (*llm.EmbedResponse, error) {
	return decodeEmbeddings(resp, "", inputs)
}

func decodeEmbeddings(resp *http.Response, key string, inputs int) (*llm.EmbedResponse, error) {
	body, err := decoder.ReadJSON(resp, key)
	if err != nil {
		return nil, err
	}
	out, err := decodeEmbedBody(resp.Header, body, inputs)
	if err != nil {
		return nil, exchange.Redact(err, key)
	}
	out.RateLimit, out.ProviderRequestID = exchange.RateLimitOf(resp.Header), llm.ProviderRequestID(resp.Header, nil)
	return out, nil
}

// decodeEmbedBody decodes a 2xx embeddings body for inputs texts.
func decodeEmbedBody(header http.Header, body []byte, inputs int) (*llm.EmbedResponse, error) {
	var er embedResponse
	if err := json.Unmarshal(body, &er); err != nil {
		return nil, malformed(header, body, llm.PhaseResponse, "embeddings body", err)
	}
	if present(er.Error) {
		pe := providerError(ParseError(http.StatusOK, header, exchange.CapBody(body)), header, body, llm.PhaseResponse)
		if pe.Message == "" && pe.Code == "" && pe.Type == "" {
			pe.Message = "response carries an error object"
		}
		return nil, pe
	}
	if len(er.Data) != inputs {
		return nil, malformed(header, body, llm.PhaseResponse, "embeddings body",
			fmt.Errorf("%d vectors for %d inputs", len(er.Data), inputs))
	}
	out := &llm.EmbedResponse{Model: er.Model, Vectors: make([][]float32, inputs)}
	dim := -1 // the length of the vectors, once one is read
	for i, d := range er.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= inputs || out.Vectors[at] != nil {
			return nil, malformed(header, body, llm.PhaseResponse, "embeddings body",
				fmt.Errorf("data[%d] has index %d: each of 0..%d once", i, at, inputs-1))
		}
		v, err := vector(d.Embedding)
		if err == nil && len(v) == 0 {
			err = errors.New("empty vector")
		}
		if err == nil && dim >= 0 && len(v) != dim {
			err = fmt.Errorf("%d numbers where the others have %d", len(v), dim)
		}
		if err != nil {
			return nil, malformed(header, body, llm.PhaseResponse, "embeddings body", fmt.Errorf("data[%d].embedding: %w", i, err))
		}
		out.Vectors[at], dim = v, len(v)
	}
	if er.Usage != nil {
		out.Usage.InputTokens = er.Usage.PromptTokens
	}
	return out, nil
}

// vector reads an embedding: a list of numbers, or a base64 string of
// little-endian float32s. Every number must be finite.
func vector(raw json.RawMessage) ([]float32, error) {
	var v []float32
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("base64: %w", err)
		}
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("base64 holds %d bytes, not whole float32s", len(b))
		}
		v = make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	} else if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	} else if v == nil {
		return nil, errors.New("missing")
	}
	for _, x := range v {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("a number that is not finite")
		}
	}
	return v, nil
}
