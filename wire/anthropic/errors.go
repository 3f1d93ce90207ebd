package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/sse"
	"github.com/detourhq/detour/wire/exchange"
)

// errMaxNesting bounds how deep ParseError follows arrays and wrappers.
const errMaxNesting = 3

// ParseError reads an error response of the Messages API into an
// *llm.ProviderError. It never fails and never panics: whatever the body
// is, the result carries the status, the header (all of it: retry-after,
// x-should-retry, request-id and the anthropic-ratelimit-*-remaining and
// -reset headers are what classify reads), the body cut to MaxErrorBody,
// Phase response and Dialect "anthropic", plus whatever fields could be
// read. It does not gate on Content-Type. It accepts:
//
//   - Anthropic's envelope {"type":"error","error":{"type","message",
//     "details"},"request_id"}: Type is error.type (rate_limit_error,
//     overloaded_error, ...), Message is error.message and Code is
//     error.details.error_code when present (enforced_spend_limit_reached),
//     else a string or numeric error.code (Anthropic-compatible servers);
//   - the same without the outer "type" and request_id (the 413
//     request_too_large body), and an "error" that is a plain string;
//   - top-level fields without an "error" wrapper ({"type":"overloaded_error",
//     "message":...}; a "type" of "error" or "message" names the envelope,
//     not the error, and is dropped);
//   - a JSON array (its first element) and an SSE-framed body (its first
//     event whose data carries an error, else its first event);
//   - plain text and HTML, such as Cloudflare's 413 page (Message is the page
//     title or the first line of text, cut to about 300 characters).
//
// For a 2xx status only an explicit error counts; a message that stopped
// with stop_reason "refusal" yields Code and Type "refusal" (see
// DecodeResponse). The request_id is not copied out: the request-id header
// stays in Header, and the body in Body.
func ParseError(status int, header http.Header, body []byte) *llm.ProviderError {
	e := &llm.ProviderError{
		Dialect: dialect,
		Status:  status,
		Header:  header,
		Body:    exchange.KeepBody(body),
		Phase:   llm.PhaseResponse,
	}
	d := bytes.TrimSpace(bytes.TrimPrefix(e.Body, []byte("\xEF\xBB\xBF")))
	if bytes.HasPrefix(d, []byte("data:")) || bytes.HasPrefix(d, []byte("event:")) {
		d = sseErrorData(d)
	}
	if status >= 200 && status < 300 {
		if f, ok := errEnvelope(d, 0); ok && f.isError {
			e.Type, e.Code, e.Message = f.typ, f.code, f.message
		} else if r := refusalOf(d); r != nil {
			e.Code, e.Type, e.Message = "refusal", "refusal", r.message()
		}
		return e
	}
	if f, ok := errEnvelope(d, 0); ok {
		e.Type, e.Code, e.Message = f.typ, f.code, f.message
	} else {
		e.Message = exchange.ErrorText(d)
	}
	return e
}

// ParseStreamError reads the data of an `event: error` inside a 200
// stream, {"type":"error","error":{"type":"overloaded_error","message":
// "Overloaded"}}, with the rules of ParseError. The result has Status 200,
// Phase stream and Dialect "anthropic".
//
// ok is false when data carries no error: not a JSON object, or no "error"
// key with a non-empty object or string.
func ParseStreamError(data []byte) (e *llm.ProviderError, ok bool) {
	d := bytes.TrimSpace(data)
	if len(d) == 0 || d[0] != '{' {
		return nil, false
	}
	f, ok := errEnvelope(d, 0)
	if !ok || !f.isError {
		return nil, false
	}
	return &llm.ProviderError{
		Dialect: dialect,
		Status:  http.StatusOK,
		Type:    f.typ,
		Code:    f.code,
		Message: f.message,
		Body:    exchange.KeepBody(d),
		Phase:   llm.PhaseStream,
	}, true
}

// errFields are what an envelope says.
type errFields struct {
	typ, code, message string
	// isError is true when the body has an "error" key with a non-empty
	// object or string: an error even under a 2xx status.
	isError bool
}

// errEnvelope reads a JSON error body; ok is false when d is not a JSON
// object or an array whose first element is one.
func errEnvelope(d []byte, depth int) (errFields, bool) {
	d = bytes.TrimSpace(d)
	if len(d) == 0 || depth > errMaxNesting {
		return errFields{}, false
	}
	switch d[0] {
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(d, &arr) != nil || len(arr) == 0 {
			return errFields{}, false
		}
		return errEnvelope(arr[0], depth+1)
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(d, &m) != nil {
			return errFields{}, false
		}
		return errFromObject(m, depth), true
	}
	return errFields{}, false
}

// errFromObject reads one JSON object, wrapped in "error" or not.
func errFromObject(m map[string]json.RawMessage, depth int) errFields {
	if inner, ok := jsonObject(m["error"]); ok && len(inner) > 0 {
		f := errTopLevel(inner)
		f.isError = true
		if f.typ == "" && f.message == "" && f.code == "" && depth < errMaxNesting {
			if _, nested := jsonObject(inner["error"]); nested {
				// A gateway that wrapped the envelope once more.
				return errFromObject(inner, depth+1)
			}
		}
		return f
	}
	if s := strings.TrimSpace(jsonString(m["error"])); s != "" {
		f := errTopLevel(m)
		f.message, f.isError = s, true
		return f
	}
	return errTopLevel(m)
}

// errTopLevel reads type, code and message from one object's own keys, and
// details.error_code, which wins over code.
func errTopLevel(m map[string]json.RawMessage) errFields {
	f := errFields{
		typ:     jsonString(m["type"]),
		code:    jsonScalar(m["code"]),
		message: strings.TrimSpace(jsonString(m["message"])),
	}
	if f.typ == "error" || f.typ == "message" {
		// The envelope's own {"type":"error"}, or an answer's "message".
		f.typ = ""
	}
	if details, ok := jsonObject(m["details"]); ok {
		if c := jsonScalar(details["error_code"]); c != "" {
			f.code = c
		}
	}
	return f
}

// sseErrorData returns the data of the first SSE event of d that carries an
// error, else of its first event.
func sseErrorData(d []byte) []byte {
	r := sse.NewReader(bytes.NewReader(d))
	var first []byte
	for {
		ev, err := r.Next()
		if err != nil {
			return first
		}
		data := []byte(strings.TrimSpace(ev.Data))
		if first == nil {
			first = data
		}
		if f, ok := errEnvelope(data, 0); ok && f.isError {
			return data
		}
	}
}

// stopDetails is the stop_details of a refusal: why the answer was withheld.
type stopDetails struct {
	Type        string `json:"type"`
	Category    string `json:"category"`
	Explanation string `json:"explanation"`
}

// clone returns d with strings of its own, for a stream that keeps it
// past the event it came in (a raw stream's events borrow the reader's
// buffer); nil stays nil.
func (d *stopDetails) clone() *stopDetails {
	if d == nil {
		return nil
	}
	return &stopDetails{Type: strings.Clone(d.Type), Category: strings.Clone(d.Category), Explanation: strings.Clone(d.Explanation)}
}

// message is the ProviderError message of a refusal.
func (d *stopDetails) message() string {
	msg := "the model refused to answer"
	if d == nil {
		return msg
	}
	if d.Category != "" {
		msg += " (" + d.Category + ")"
	}
	if x := strings.TrimSpace(d.Explanation); x != "" {
		msg += ": " + exchange.CutText(x)
	}
	return msg
}

// refusalOf returns the stop details of a message body that stopped with
// stop_reason "refusal" (never nil then), or nil.
func refusalOf(d []byte) *stopDetails {
	var r struct {
		StopReason  string       `json:"stop_reason"`
		StopDetails *stopDetails `json:"stop_details"`
	}
	if len(d) == 0 || d[0] != '{' || json.Unmarshal(d, &r) != nil || r.StopReason != "refusal" {
		return nil
	}
	if r.StopDetails == nil {
		return &stopDetails{}
	}
	return r.StopDetails
}

// refusalError is the *llm.ProviderError a refusal stands for: status 200,
// Code and Type "refusal", which classify reads as a policy failure.
func refusalError(header http.Header, body []byte, details *stopDetails) *llm.ProviderError {
	return &llm.ProviderError{
		Dialect: dialect,
		Status:  http.StatusOK,
		Code:    "refusal",
		Type:    "refusal",
		Message: details.message(),
		Header:  header,
		Body:    exchange.KeepBody(body),
		Phase:   llm.PhaseResponse,
	}
}

// jsonObject decodes raw as a JSON object; ok is false for anything else.
func jsonObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// jsonString returns raw as a string when it is a JSON string, else "".
func jsonString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jsonScalar returns a JSON string or number as text; "" for anything else.
func jsonScalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		return jsonString(raw)
	}
	if c := raw[0]; c == '-' || (c >= '0' && c <= '9') {
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			return n.String()
		}
	}
	return ""
}
