package llm

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// MaxProviderRequestID is the longest provider request id kept, in bytes:
// the id is outside input, and a longer one is cut to this length.
const MaxProviderRequestID = 128

// providerRequestIDHeaders are the response headers that carry a
// provider's own id for a request, in canonical form and in the order
// they are preferred:
//
//   - X-Request-Id: OpenAI, Groq, Mistral and many OpenAI-compatible
//     servers;
//   - Request-Id: Anthropic;
//   - Cf-Ray: Cloudflare, in front of many providers;
//   - X-Amzn-Requestid: AWS (Bedrock).
//
// Gemini (generativelanguage.googleapis.com) documents no request-id
// response header; its answer's own id is the body's responseId (the
// answer's ID), which its wire adapter records instead.
var providerRequestIDHeaders = [...]string{"X-Request-Id", "Request-Id", "Cf-Ray", "X-Amzn-Requestid"}

// ProviderRequestID returns the provider's own id for one exchange, the
// one its support desk asks for: the first of the headers above that h
// carries, else a top-level "request_id" string of body, a JSON object
// (Anthropic's and Groq's error bodies carry one). It is cleaned by
// CleanRequestID; "" when neither says one.
func ProviderRequestID(h http.Header, body []byte) string {
	for _, k := range providerRequestIDHeaders {
		if vs := h[k]; len(vs) > 0 {
			if id := CleanRequestID(vs[0]); id != "" {
				return id
			}
		}
	}
	return bodyRequestID(body)
}

// bodyRequestID is body's top-level "request_id" string, cleaned; "" when
// body is no JSON object or has none.
func bodyRequestID(body []byte) string {
	i := 0
	for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	if i == len(body) || body[i] != '{' || !strings.Contains(string(body), `"request_id"`) {
		return ""
	}
	var v struct {
		RequestID json.RawMessage `json:"request_id"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(v.RequestID, &s) != nil {
		return ""
	}
	return CleanRequestID(s)
}

// CleanRequestID returns s as a ledger may keep it: every byte that is
// not printable ASCII (a control character, a byte of a multi-byte
// character) left out, cut to MaxProviderRequestID bytes, and spaces
// around it trimmed.
func CleanRequestID(s string) string {
	s = strings.TrimSpace(s)
	clean := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			clean = false
			break
		}
	}
	if !clean {
		b := make([]byte, 0, min(len(s), MaxProviderRequestID))
		for i := 0; i < len(s) && len(b) < MaxProviderRequestID; i++ {
			if c := s[i]; c >= 0x20 && c <= 0x7e {
				b = append(b, c)
			}
		}
		s = string(b)
	}
	if len(s) > MaxProviderRequestID {
		s = s[:MaxProviderRequestID]
	}
	return strings.TrimSpace(s)
}

// RequestIDer is an optional interface of a Stream that knows its
// provider's own id for the exchange (see ProviderRequestID), read from
// the response's headers before the stream was returned; "" when it said
// none. It returns the same value every time.
type RequestIDer interface {
	ProviderRequestID() string
}

// ProviderRequestIDOf returns s's provider request id when s implements
// RequestIDer, else "".
func ProviderRequestIDOf(s Stream) string {
	if r, ok := s.(RequestIDer); ok {
		return r.ProviderRequestID()
	}
	return ""
}

// ProviderRequestIDOfError returns the provider's own id for the exchange
// that failed with err, when a response said one (ProviderRequestID of a
// ProviderError's headers and body); else "".
func ProviderRequestIDOfError(err error) string {
	if pe, ok := errors.AsType[*ProviderError](err); ok {
		return ProviderRequestID(pe.Header, pe.Body)
	}
	return ""
}
