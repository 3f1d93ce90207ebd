package exchange

import (
	"net/http"
	"testing"
)

// TestContentKind_CommonTypesReadAsParsed holds the Content-Types read
// without parsing to what parsing them gives, and checks that the others
// are still parsed (parameters, case, +json).
func TestContentKind_CommonTypesReadAsParsed(t *testing.T) {
	for ct, want := range map[string]bodyKind{
		"application/json":                 kindJSON,
		"application/json; charset=utf-8":  kindJSON,
		"text/event-stream":                kindStream,
		"text/event-stream; charset=utf-8": kindStream,
		"Application/JSON":                 kindJSON,
		"text/event-stream;charset=UTF-8":  kindStream,
		"application/problem+json":         kindJSON,
		"text/plain":                       kindUnknown,
		"":                                 kindUnknown,
	} {
		got := contentKind(http.Header{"Content-Type": {ct}})
		if got != want {
			t.Errorf("contentKind(%q) = %d, want %d", ct, got, want)
		}
		if ct != "" && got != parsedKind(ct) {
			t.Errorf("contentKind(%q) = %d, parsed %d", ct, got, parsedKind(ct))
		}
	}
}
