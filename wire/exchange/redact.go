package exchange

import (
	"bytes"
	"errors"
	"net/url"
	"strings"

	"github.com/detourhq/detour/llm"
)

// minKeyLen is the length of the shortest key Redact looks for.
const minKeyLen = 8

// redacted is what replaces the key in an error.
const redacted = "[redacted]"

// Redact removes key from err: in place in an *llm.ProviderError (Message,
// Type, Code, Param and Body) and a *url.Error (URL), and by wrapping when
// the message still holds it; the wrapper keeps errors.Is and errors.As
// working. A nil err stays nil. Keys shorter than 8 bytes are placeholders
// ("ollama", "k"), not secrets: replacing them would mangle ordinary words
// of the message, so err is returned as it is.
func Redact(err error, key string) error {
	if err == nil || len(key) < minKeyLen {
		return err
	}
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		for _, f := range []*string{&pe.Message, &pe.Type, &pe.Code, &pe.Param} {
			*f = strings.ReplaceAll(*f, key, redacted)
		}
		if bytes.Contains(pe.Body, []byte(key)) {
			pe.Body = bytes.ReplaceAll(pe.Body, []byte(key), []byte(redacted))
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = strings.ReplaceAll(ue.URL, key, redacted)
	}
	if msg := err.Error(); strings.Contains(msg, key) {
		return &redactedError{msg: strings.ReplaceAll(msg, key, redacted), err: err}
	}
	return err
}

// redactedError is an error whose message had the key removed.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
