package exchange

import (
	"errors"
	"io"
	"net/http"

	"github.com/detourhq/detour/llm"
)

// Decoder reads the responses of one dialect: it is what the adapters'
// DecodeResponse and DecodeStream have in common, and it calls the
// dialect's own functions for the rest. S is the dialect's stream type.
//
// Every field but Assemble must be set. A Decoder is safe for concurrent
// use once its fields are set.
type Decoder[S llm.Stream] struct {
	// Name prefixes the errors of reading a body ("openai: response body
	// exceeds ...").
	Name string
	// StatusError is the error of a non-2xx response, given its status,
	// header and at most MaxErrorBody of its body (as far as it came, when
	// reading it failed).
	StatusError func(status int, header http.Header, body []byte) error
	// DecodeJSON decodes a 2xx body that is not an event stream (at most
	// MaxResponseBody of it) into a response, or the error it stands for.
	// body is read for the call alone and never written again: the
	// response's text may borrow it (Borrow), as long as what is likely to
	// be kept apart from the response (its id and model) is a copy.
	DecodeJSON func(header http.Header, body []byte) (*llm.Response, error)
	// NewStream returns the stream of a 2xx event-stream body. The stream
	// owns body (its Close closes it) and redacts key, when set, from its
	// errors.
	NewStream func(body io.ReadCloser, header http.Header, key string) S
	// Assemble drains a stream made by NewStream into one response and
	// closes it. Nil means llm.Assemble.
	Assemble func(s S) (*llm.Response, error)
}

// DecodeResponse reads a response that should hold one answer, and always
// closes its body. A non-2xx status returns StatusError's error. A 2xx
// body that is an event stream (Content-Type text/event-stream, or no JSON
// Content-Type and a start like an SSE field) is read through NewStream
// and Assemble, so a captured stream reads as the answer it carried;
// another 2xx body is read up to MaxResponseBody (past it, an error) and
// handed to DecodeJSON. The answer's RateLimit is read from the response's
// header (RateLimitOf) when DecodeJSON or Assemble set none, and its
// ProviderRequestID from the header (llm.ProviderRequestID) when it names
// one. Every error has key redacted (see Redact).
func (d *Decoder[S]) DecodeResponse(resp *http.Response, key string) (*llm.Response, error) {
	r, err := d.decodeResponse(resp, "")
	if err != nil {
		return nil, Redact(err, key)
	}
	return r, nil
}

// Check reads the response of a probe (a model list or a model's
// metadata): nil for a 2xx status, whatever its body (read up to
// MaxErrorBody and dropped, so the connection can be reused), else
// StatusError's error, key redacted. It always closes the body.
func (d *Decoder[S]) Check(resp *http.Response, key string) error {
	defer resp.Body.Close()
	if is2xx(resp.StatusCode) {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxErrorBody))
		return nil
	}
	return Redact(d.statusError(resp), key)
}

// ReadJSON reads a response whose answer is a JSON document that is no
// chat answer (an embeddings response), and always closes its body. A
// non-2xx status returns StatusError's error, as DecodeResponse does; a
// 2xx body is read up to MaxResponseBody (past it, an error) and returned
// for the caller to decode. Every error has key redacted.
func (d *Decoder[S]) ReadJSON(resp *http.Response, key string) ([]byte, error) {
	defer resp.Body.Close()
	if !is2xx(resp.StatusCode) {
		return nil, Redact(d.statusError(resp), key)
	}
	body, err := readCapped(resp.Body, resp.ContentLength, MaxResponseBody, d.Name)
	if err != nil {
		return nil, Redact(err, key)
	}
	return body, nil
}

// DecodeResponseRaw is DecodeResponse for a request sent raw (llm.Raw):
// the answer also keeps its body, as Raw in dialect, when it was a JSON
// body (an answer read from an event stream keeps none).
func (d *Decoder[S]) DecodeResponseRaw(resp *http.Response, key, dialect string) (*llm.Response, error) {
	r, err := d.decodeResponse(resp, dialect)
	if err != nil {
		return nil, Redact(err, key)
	}
	return r, nil
}

func (d *Decoder[S]) decodeResponse(resp *http.Response, keep string) (*llm.Response, error) {
	defer resp.Body.Close()
	if !is2xx(resp.StatusCode) {
		return nil, d.statusError(resp)
	}
	br, stream := sniffBody(resp.Header, resp.Body)
	var r io.Reader = resp.Body
	if br != nil {
		r = br
	}
	var out *llm.Response
	var err error
	if stream {
		s := d.NewStream(io.NopCloser(r), resp.Header, "")
		if d.Assemble == nil {
			out, err = llm.Assemble(s)
		} else {
			out, err = d.Assemble(s)
		}
	} else {
		var body []byte
		if body, err = readCapped(r, resp.ContentLength, MaxResponseBody, d.Name); err != nil {
			return nil, err
		}
		out, err = d.DecodeJSON(resp.Header, body)
		if err == nil && keep != "" {
			out.Raw = &llm.Raw{Dialect: keep, Body: body}
		}
	}
	if err == nil && out != nil {
		if out.RateLimit == nil {
			out.RateLimit = RateLimitOf(resp.Header)
		}
		setRequestID(out, resp.Header)
	}
	return out, err
}

// DecodeStream reads a response that should be a stream. A non-2xx status
// reads at most MaxErrorBody of the body, closes it and returns
// StatusError's error. A 2xx body that is not an event stream (a server
// that ignored the request to stream) is read as DecodeResponse does and
// served as a one-chunk stream (llm.ResponseStream), or returned as its
// error. Otherwise the stream NewStream makes owns the body, and redacts
// key from its errors; the caller must Close it. Every error has key
// redacted.
func (d *Decoder[S]) DecodeStream(resp *http.Response, key string) (llm.Stream, error) {
	s, err := d.decodeStream(resp, key)
	if err != nil {
		return nil, Redact(err, key)
	}
	return s, nil
}

func (d *Decoder[S]) decodeStream(resp *http.Response, key string) (llm.Stream, error) {
	if !is2xx(resp.StatusCode) {
		defer resp.Body.Close()
		return nil, d.statusError(resp)
	}
	br, stream := sniffBody(resp.Header, resp.Body)
	var r io.Reader = resp.Body
	if br != nil {
		r = br
	}
	if !stream {
		defer resp.Body.Close()
		body, err := readCapped(r, resp.ContentLength, MaxResponseBody, d.Name)
		if err != nil {
			return nil, err
		}
		r, err := d.DecodeJSON(resp.Header, body)
		if err != nil {
			return nil, err
		}
		if r.RateLimit == nil {
			r.RateLimit = RateLimitOf(resp.Header)
		}
		setRequestID(r, resp.Header)
		return llm.ResponseStream(r), nil
	}
	var s S
	if br == nil {
		s = d.NewStream(resp.Body, resp.Header, key)
	} else {
		s = d.NewStream(readCloser{br, resp.Body}, resp.Header, key)
	}
	if rs, ok := any(s).(rateLimitSetter); ok {
		rs.setRateLimit(RateLimitOf(resp.Header))
		rs.setRequestID(llm.ProviderRequestID(resp.Header, nil))
	}
	return s, nil
}

// setRequestID sets r's ProviderRequestID to the one h names, which wins
// over one its body gave (a Gemini answer's responseId).
func setRequestID(r *llm.Response, h http.Header) {
	if id := llm.ProviderRequestID(h, nil); id != "" {
		r.ProviderRequestID = id
	}
}

// statusError is StatusError's error for resp, a non-2xx response, with
// what its headers said of the provider's rate limits (RateLimitOf) on
// the *llm.ProviderError it holds: the router reads a 0 left on a
// failure as it does on an answer.
func (d *Decoder[S]) statusError(resp *http.Response) error {
	err := d.StatusError(resp.StatusCode, resp.Header, readErrorBody(resp))
	if pe, ok := errors.AsType[*llm.ProviderError](err); ok && pe.RateLimit == nil {
		pe.RateLimit = RateLimitOf(resp.Header)
	}
	return err
}
