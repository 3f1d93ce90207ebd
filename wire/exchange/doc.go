// Package exchange is the HTTP plumbing the wire adapters (wire/openai,
// wire/anthropic, wire/gemini) share, the part of a call that knows no
// dialect: sending one POST of a JSON body, keeping the API key out of
// every error, reading a response body within its limits, telling a JSON
// body from an event stream, the lifecycle of a stream over a body
// (idempotent Close, Close from another goroutine, truncation), and the
// text of an error body that is not JSON. Each adapter keeps its encoding,
// its decoding and its error envelopes. The gateway also keeps the keys
// detour holds out of the answers it passes on with the KeySet and Guard
// of guard.go: the same placeholder, "[redacted]", by an exact rule cheap
// enough for every streamed event.
//
// An adapter describes how it reads responses in a Decoder, sends with a
// Post, and embeds a *Stream in its stream type:
//
//	var decoder = &exchange.Decoder[*stream]{
//		Name:        "openai",
//		StatusError: statusError,
//		DecodeJSON:  decodeBody,
//		NewStream:   newStream,
//	}
//
//	resp, err := exchange.Post{URL: url, Body: body, Stream: true,
//		Header: auth, Override: c.Header, Key: c.APIKey, Client: c.HTTPClient}.Do(ctx)
//	if err != nil {
//		return nil, err
//	}
//	return decoder.DecodeStream(resp, c.APIKey)
//
// Besides the standard library it imports what lies below it in
// DESIGN.md's layers: llm, classify (its duration parser, for the resets
// rate-limit headers name) and detour's hand-written JSON helpers
// (internal/jsonw, internal/jsonedit, for a raw body's model and stream
// fields); never a wire adapter. It is not meant for use outside detour's
// adapters, but nothing in it is secret.
package exchange
