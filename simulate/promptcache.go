package simulate

import (
	"strings"
	"time"

	"github.com/detourhq/detour/clock"
)

// The simulator's prompt cache, as OpenAI's works: a prompt whose prefix
// (everything but the last message) is at least promptCacheMin tokens,
// sent again to the same model within promptCacheTTL of its last use,
// has that prefix read from the cache, reported in
// prompt_tokens_details.cached_tokens in steps of 128 tokens (OpenAI's
// prompt caching guide: 1,024 tokens and up, in 128-token increments,
// kept five to ten minutes of inactivity).
const (
	promptCacheMin = 1024
	promptCacheTTL = 5 * time.Minute
)

// cachedTokens returns how many of req's prompt tokens t's cache serves
// at now, and notes req's prefix as used. Only an answer reads the cache.
func (s *Server) cachedTokens(t *target, req *chatReq) int {
	if req.prefixTokens < promptCacheMin || req.prefixKey == 0 {
		return 0
	}
	now := clock.Or(s.Clock).Now()
	key := hash(req.model) ^ req.prefixKey
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.cache == nil {
		t.cache = map[uint64]time.Time{}
	}
	last, ok := t.cache[key]
	t.cache[key] = now
	if len(t.cache) > 4096 {
		for k, at := range t.cache {
			if now.Sub(at) > promptCacheTTL {
				delete(t.cache, k)
			}
		}
	}
	if !ok || now.Sub(last) > promptCacheTTL {
		return 0
	}
	return req.prefixTokens / 128 * 128
}

// cachePrefix returns the tokens of the prompt but its last message
// (tools included) and, when they are enough to be cached, a hash of it:
// what the cache keys on.
func cachePrefix(w *wireRequest, msgs []wireMessage, toolChars int) (tokens int, key uint64) {
	chars := toolChars
	for _, m := range msgs[:len(msgs)-1] {
		chars += contentChars(m.Content)
		for _, tc := range m.ToolCalls {
			chars += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	tokens = (chars+3)/4 + 3*(len(msgs)-1)
	if tokens < promptCacheMin {
		return tokens, 0 // the common case: no hash made
	}
	var b strings.Builder
	for _, t := range w.Tools {
		b.WriteString(t.Function.Name)
		b.Write(t.Function.Parameters)
	}
	for _, m := range msgs[:len(msgs)-1] {
		b.WriteString(m.Role)
		b.Write(m.Content)
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Function.Name + tc.Function.Arguments)
		}
	}
	return tokens, hash(b.String())
}
