package responses

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/sse"
	"github.com/detourhq/detour/wire/exchange"
)

// ParseError reads an error response of a Responses API provider into an
// *llm.ProviderError. It never fails and never panics: whatever the body
// is, the result carries the status, the header, the body (cut to 64 KiB),
// Phase response and Dialect "openai-responses", plus whatever fields
// could be read:
//
//   - OpenAI's envelope {"error":{"message","type","param","code"}}, with
//     a code that is a string, a number (kept as its decimal text) or null
//     (the Responses API answers in it, as chat completions does);
//   - "error" as a plain string, with a top-level "code" beside it, and
//     the top-level message/type/code/param of servers without the
//     wrapper ({"message":...}, {"detail":...});
//   - a response object whose status is failed, with its error
//     {"code","message"} (a 2xx, or a server that sent it with an error
//     status);
//   - an SSE-framed body (its first event's data);
//   - plain text and HTML (Message is the page title or first line,
//     trimmed and cut to about 300 characters).
//
// The codes are those classify reads for every dialect (its tables name
// the Responses ones: rate_limit_exceeded, server_error, invalid_prompt,
// bio_policy, image_content_policy_violation, vector_store_timeout, ...).
func ParseError(status int, header http.Header, body []byte) *llm.ProviderError {
	e := &llm.ProviderError{
		Dialect: Dialect,
		Status:  status,
		Header:  header,
		Body:    exchange.KeepBody(body),
		Phase:   llm.PhaseResponse,
	}
	d := bytes.TrimSpace(bytes.TrimPrefix(e.Body, []byte("\xEF\xBB\xBF")))
	if bytes.HasPrefix(d, []byte("data:")) || bytes.HasPrefix(d, []byte("event:")) {
		d = sse.FirstData(d)
	}
	if f, ok := envelope(d); ok {
		e.Type, e.Code, e.Param, e.Message = f.typ, f.code, f.param, f.message
	} else {
		e.Message = exchange.ErrorText(e.Body)
	}
	if e.Message == "" && e.Code == "" && e.Type == "" {
		e.Message = exchange.ErrorText(e.Body)
	}
	return e
}

// statusError is the error of a non-2xx response.
func statusError(status int, header http.Header, body []byte) error {
	return ParseError(status, header, body)
}

// fields are what an error object says.
type fields struct {
	typ, code, param, message string
}

// envelope reads a JSON error body: ok is false when it is not a JSON
// object.
func envelope(d []byte) (fields, bool) {
	if len(d) == 0 || d[0] != '{' {
		return fields{}, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(d, &m) != nil {
		return fields{}, false
	}
	if inner, ok := object(m["error"]); ok && len(inner) > 0 {
		f := topLevel(inner)
		if f.code == "" {
			f.code = scalar(m["code"])
		}
		return f, true
	}
	if s := str(m["error"]); s != "" {
		f := topLevel(m)
		f.message = s
		return f, true
	}
	if r, ok := object(m["response"]); ok {
		// A response.failed event's data, or a failed response object.
		if inner, ok := object(r["error"]); ok {
			return topLevel(inner), true
		}
	}
	f := topLevel(m)
	if f.typ == "error" {
		f.typ = "" // the event's type (an error event), not the error's
	}
	return f, true
}

// errorFields reads an error object ({"code","message"} and the rest).
func errorFields(raw json.RawMessage) fields {
	if m, ok := object(raw); ok {
		return topLevel(m)
	}
	return fields{message: str(raw)}
}

// topLevel reads message/type/code/param from one object's own keys.
func topLevel(m map[string]json.RawMessage) fields {
	f := fields{typ: str(m["type"]), code: scalar(m["code"]), param: scalar(m["param"]), message: str(m["message"])}
	if f.message == "" {
		f.message = str(m["detail"])
	}
	f.message = strings.TrimSpace(f.message)
	return f
}

// ParseStreamError reads an error inside a 200 stream: the data of an
// error event — {"type":"error","code","message","param"} as openai-go's
// ResponseErrorEvent has it, or its fields wrapped in "error" — or of a
// response.failed event, whose response.error {"code","message"} it takes.
// The result has Status 200 and Phase stream. ok is false when data is no
// such event (not a JSON object, another type, or no error in it).
func ParseStreamError(data []byte) (e *llm.ProviderError, ok bool) {
	d := bytes.TrimSpace(data)
	if len(d) == 0 || d[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(d, &m) != nil {
		return nil, false
	}
	var f fields
	switch typ := str(m["type"]); {
	case typ == "response.failed":
		r, _ := object(m["response"])
		inner, ok := object(r["error"])
		if !ok || len(inner) == 0 {
			return nil, false
		}
		f = topLevel(inner)
	case typ == "error" || typ == "" && len(m["error"]) > 0:
		if inner, isObj := object(m["error"]); isObj && len(inner) > 0 {
			f = topLevel(inner)
		} else if s := str(m["error"]); s != "" {
			f = topLevel(m)
			f.message = s
		} else {
			f = topLevel(m)
		}
		if f.typ == "error" {
			f.typ = ""
		}
		if f.code == "" && f.message == "" && f.typ == "" {
			return nil, false
		}
	default:
		return nil, false
	}
	return &llm.ProviderError{
		Dialect: Dialect,
		Status:  http.StatusOK,
		Type:    f.typ,
		Code:    f.code,
		Param:   f.param,
		Message: f.message,
		Body:    exchange.KeepBody(d),
		Phase:   llm.PhaseStream,
	}, true
}

// object decodes raw as a JSON object; ok is false for anything else.
func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
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

// str returns raw as a string when it is a JSON string, else "".
func str(raw json.RawMessage) string {
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

// scalar returns a string or a number as text; "" for anything else.
func scalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		return str(raw)
	case c == '-' || (c >= '0' && c <= '9'):
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return ""
		}
		if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return strconv.FormatInt(i, 10)
		}
		return n.String()
	}
	return ""
}
