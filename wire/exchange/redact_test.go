package exchange

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/detourhq/detour/llm"
)

func TestRedact_ProviderErrorInPlaceAndWrappedMessages(t *testing.T) {
	pe := &llm.ProviderError{Status: 401, Message: "bad key " + testKey, Type: "t" + testKey,
		Code: testKey, Param: "p=" + testKey, Body: []byte(`{"key":"` + testKey + `"}`)}
	err := Redact(fmt.Errorf("openai: %w", pe), testKey)
	for _, s := range []string{err.Error(), pe.Message, pe.Type, pe.Code, pe.Param, string(pe.Body)} {
		if strings.Contains(s, testKey) {
			t.Errorf("key left in %q", s)
		}
	}
	var got *llm.ProviderError
	if !errors.As(err, &got) || got != pe {
		t.Errorf("errors.As lost the ProviderError: %v", err)
	}

	wrapped := Redact(fmt.Errorf("reading %s: %w", testKey, io.ErrUnexpectedEOF), testKey)
	if strings.Contains(wrapped.Error(), testKey) || !errors.Is(wrapped, io.ErrUnexpectedEOF) {
		t.Errorf("Redact = %v, want the key gone and io.ErrUnexpectedEOF kept", wrapped)
	}
}

func TestRedact_LeavesShortKeysNilAndCleanErrorsAlone(t *testing.T) {
	short := errors.New("model ollama not found")
	clean := errors.New("nothing secret here")
	for _, tc := range []struct {
		name string
		err  error
		key  string
	}{
		{"short key", short, "ollama"},
		{"empty key", short, ""},
		{"no key in it", clean, testKey},
		{"nil", nil, testKey},
	} {
		if got := Redact(tc.err, tc.key); got != tc.err {
			t.Errorf("%s: Redact = %v, want the error unchanged", tc.name, got)
		}
	}
}
