package llm

import (
	"context"
	"errors"
)

// EmbedRequest is one embeddings request in detour's canonical form: each
// text of Input becomes one vector. The router fills Model per target.
type EmbedRequest struct {
	// Model is the provider's model name, set by the router for each
	// attempt.
	Model string `json:"model,omitempty"`
	// Input holds the texts to embed, at least one; each gets one vector,
	// in order.
	Input []string `json:"input"`
	// Dimensions asks for vectors of this length (OpenAI's dimensions,
	// Gemini's outputDimensionality), for models that can shorten theirs;
	// 0 leaves the model's own length.
	Dimensions int `json:"dimensions,omitempty"`
	// User is OpenAI's end-user id; a dialect without one leaves it out
	// (it changes no vector).
	User string `json:"user,omitempty"`
}

// Clone returns a copy of r whose Input may be changed without touching r.
func (r *EmbedRequest) Clone() *EmbedRequest {
	c := *r
	c.Input = append([]string(nil), r.Input...)
	return &c
}

// EmbedResponse is the answer to an EmbedRequest: one vector per input,
// always as floats (an adapter decodes a provider's base64 itself).
type EmbedResponse struct {
	// Model is the model that really answered, as the provider named it
	// (the request's when it named none).
	Model string `json:"model"`
	// Vectors holds one vector per input, in the order of Input.
	Vectors [][]float32 `json:"vectors"`
	// Usage counts the input tokens (OutputTokens is always 0); zero when
	// the provider does not say (Gemini's embedContent).
	Usage Usage `json:"usage"`
	// RateLimit is what the provider said of its rate limits in the
	// response's headers; nil when it said nothing.
	RateLimit *RateLimit `json:"-"`
	// ProviderRequestID is the provider's own id for the exchange, from
	// the response's headers (see ProviderRequestID); "" when it gave none.
	ProviderRequestID string `json:"-"`
}

// Embedder is the optional interface of a Client whose provider turns
// texts into vectors. Like Complete, each call is exactly one HTTP
// exchange and never retries; failures are *ProviderError for a
// provider's answer (a 200 that is not the vectors asked for included),
// and transport errors otherwise. A Client without it cannot embed: the
// router skips it for an embeddings request.
type Embedder interface {
	Embed(ctx context.Context, req *EmbedRequest) (*EmbedResponse, error)
}

// ErrNoInput is the error of an EmbedRequest with no text to embed.
var ErrNoInput = errors.New("embeddings request has no input")
