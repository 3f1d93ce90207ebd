// Package llm holds detour's canonical shapes: the request a caller makes, the
// response and stream chunks a provider returns, token usage, embeddings
// requests and answers (EmbedRequest, EmbedResponse, Embedder), and the
// ProviderError every wire adapter turns a provider's failure into.
//
// It depends on the standard library only; every other package speaks these
// types, so wire formats stay inside wire/* and failure knowledge inside classify.
//
//	req := &llm.Request{
//		Messages:  []llm.Message{{Role: llm.RoleUser, Content: "Say hi"}},
//		MaxTokens: 64,
//	}
package llm
