package openai

import (
	"net/http"

	"github.com/detourhq/detour/llm"
)

// ParseError reads an error response of an OpenAI-compatible provider.
// STUB: replaced by the error-parsing work.
func ParseError(status int, header http.Header, body []byte) *llm.ProviderError {
	return &llm.ProviderError{Dialect: "openai", Status: status, Header: header, Body: body, Phase: llm.PhaseResponse}
}

// ParseStreamError reads an error frame inside a 200 stream (the data of an
// `event: error`, or a chunk with an "error" key). ok is false when data
// carries no error.
// STUB: replaced by the error-parsing work.
func ParseStreamError(data []byte) (e *llm.ProviderError, ok bool) {
	return nil, false
}
