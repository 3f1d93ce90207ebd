package exchange

import (
	"errors"
	"io"
	"net/url"

	"github.com/detourhq/detour/llm"
)

// redacted is what replaces the key in an error.
const redacted = "[redacted]"

// Redact removes key from err, in every form the matching rule of
// match.go finds: the key in any case, a run of it long enough to
// identify it (8 to 12 characters or more, by the key's length), and those
// JSON-escaped, URL-encoded or in base64 (the Authorization header's
// value). It does so in place in an *llm.ProviderError (Message, Type,
// Code, Param, Body and Header values) and a *url.Error (URL), and by
// wrapping when the message still holds it; the wrapper keeps errors.Is
// and errors.As working. A nil err stays nil. Keys shorter than 8 bytes
// are placeholders ("ollama", "k"), not secrets: replacing them would
// mangle ordinary words of the message, so err is returned as it is.
//
// Redact takes time linear in the text it reads. It is safe for
// concurrent use, though not on the same error.
func Redact(err error, key string) error {
	if err == nil || err == io.EOF || len(key) < minKeyLen {
		return err
	}
	m := matcherFor(key)
	var pe *llm.ProviderError
	if errors.As(err, &pe) && pe != nil {
		for _, f := range []*string{&pe.Message, &pe.Type, &pe.Code, &pe.Param} {
			if r := redactIn(m, *f); r != *f {
				*f = r
			}
		}
		if spans := find(m, pe.Body); spans != nil {
			pe.Body = replace(pe.Body, spans)
		}
		for _, vs := range pe.Header {
			for i, v := range vs {
				if r := redactIn(m, v); r != v {
					vs[i] = r
				}
			}
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue != nil {
		if r := redactIn(m, ue.URL); r != ue.URL {
			ue.URL = r
		}
	}
	if msg := err.Error(); len(msg) >= minKeyLen {
		if r := redactIn(m, msg); r != msg {
			return &redactedError{msg: r, err: err}
		}
	}
	return err
}

// RedactString returns s with every form of key Redact finds replaced by
// "[redacted]"; s itself when it holds none, or when key is shorter than
// 8 bytes. It takes time linear in s, and allocates nothing when s holds
// neither an escape nor a form of the key. Safe for concurrent use.
func RedactString(s, key string) string {
	if len(key) < minKeyLen || len(s) < minKeyLen {
		return s
	}
	return redactIn(matcherFor(key), s)
}

// redactIn returns s with what m finds replaced; s itself when m finds
// nothing.
func redactIn(m *matcher, s string) string {
	if len(s) < minKeyLen {
		return s
	}
	spans := find(m, s)
	if spans == nil {
		return s
	}
	return string(replace(s, spans))
}

// replace returns a copy of s with each of spans (sorted, apart)
// replaced by the redacted mark.
func replace[T ~string | ~[]byte](s T, spans []span) []byte {
	out := make([]byte, 0, len(s))
	last := 0
	for _, sp := range spans {
		out = append(out, s[last:sp.lo]...)
		out = append(out, redacted...)
		last = sp.hi
	}
	return append(out, s[last:]...)
}

// redactedError is an error whose message had the key removed.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
