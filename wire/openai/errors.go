package openai

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

// errMaxNesting bounds how deep ParseError follows embedded envelopes
// (OpenRouter's metadata.raw, a message that is itself JSON, an array).
const errMaxNesting = 3

// ParseError reads an error response of an OpenAI-compatible provider into an
// *llm.ProviderError. It never fails and never panics: whatever the body is,
// the result carries the status, the header, the body (cut to 64 KiB), Phase
// response and Dialect "openai", plus whatever fields could be read.
//
// It does not gate on Content-Type (DeepSeek sends JSON as
// application/octet-stream, Gemini as text/event-stream) and accepts:
//
//   - the OpenAI envelope {"error":{"message","type","param","code"}}, with a
//     code that is a string, a number (kept as its decimal text) or null;
//   - top-level errFields without an "error" wrapper (Cerebras, vLLM, Mistral's
//     {"object":"error",...}, {"message":...}, {"msg":...}, {"detail":...},
//     including FastAPI's detail arrays);
//   - "error" as a plain string (xAI, Ollama, Hugging Face), with a
//     top-level "code" beside it;
//   - Anthropic's {"type":"error","error":{"type",...}} and Gemini's
//     {"error":{"code":429,"status":"RESOURCE_EXHAUSTED",...}} (the status
//     text becomes Type when there is no type);
//   - OpenRouter's error.metadata: raw (the upstream body, a JSON string or
//     object) is parsed with these same rules, its message appended to
//     Message when it says more and its code taken when the outer one merely
//     repeats the status; provider_name is named in Message;
//   - a JSON array of any of these (the first element is read);
//   - an SSE-framed body ("data: {...}");
//   - plain text and HTML (Message is the page title or first line, trimmed
//     and cut to about 300 characters).
//
// A 2xx body that is a refusal (a choice with finish_reason
// "content_filter", Responses' incomplete_details.reason "content_filter",
// Anthropic's stop_reason "refusal", Gemini's promptFeedback.blockReason or a
// blocking candidate finishReason) yields Code "content_filter", "refusal",
// or the Gemini reason with Type "blockReason"/"finishReason".
//
// When the body names no type, the x-amzn-errortype header (Bedrock behind
// a gateway) supplies it; when it names no message, x-error-message (Hugging
// Face router) does.
func ParseError(status int, header http.Header, body []byte) *llm.ProviderError {
	e := &llm.ProviderError{
		Dialect: "openai",
		Status:  status,
		Header:  header,
		Body:    exchange.KeepBody(body),
		Phase:   llm.PhaseResponse,
	}
	if status >= 200 && status < 300 {
		// A success status: only an explicit "error" or a refusal counts;
		// the top-level "type" of an answer ("message", "response") does not.
		if m, ok := errObject(bytes.TrimSpace(e.Body)); ok && errPresent(m["error"]) {
			f := errFromObject(m, status, 0)
			e.Type, e.Code, e.Param, e.Message = f.typ, f.code, f.param, f.message
		} else {
			e.Code, e.Type, e.Message = errRefusal(e.Body)
		}
	} else if f, ok := errEnvelope(e.Body, status, 0); ok {
		e.Type, e.Code, e.Param, e.Message = f.typ, f.code, f.param, f.message
	} else {
		e.Message = exchange.ErrorText(e.Body)
	}
	if e.Type == "" {
		if t := header.Get("X-Amzn-Errortype"); t != "" {
			t, _, _ = strings.Cut(t, ":")
			e.Type = strings.TrimSpace(t)
		}
	}
	if e.Message == "" {
		e.Message = exchange.CutText(strings.TrimSpace(header.Get("X-Error-Message")))
	}
	return e
}

// ParseStreamError reads an error frame inside a 200 stream: the data of an
// `event: error`, or a chunk with an "error" key. It understands
// {"error":{...}} (chat completions, OpenRouter, llama.cpp, Anthropic's
// {"type":"error","error":{...}}), "error" as a string, OpenAI Responses'
// {"type":"error","code","message","param"} and {"type":"response.failed",
// "response":{"error":{...}}}. The result has Status 200 and Phase stream.
//
// ok is false when data carries no error: not a JSON object, no "error" key,
// "error": null (or false, "" or {}), or a Responses event of another type.
func ParseStreamError(data []byte) (e *llm.ProviderError, ok bool) {
	d := bytes.TrimSpace(data)
	if len(d) == 0 || d[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(d, &m) != nil {
		return nil, false
	}
	var f errFields
	switch {
	case errPresent(m["error"]):
		f = errFromObject(m, http.StatusOK, 0)
	case errString(m["type"]) == "error":
		// Responses: {"type":"error","code":"server_error","message":...}.
		f = errFields{code: errScalar(m["code"]), message: errString(m["message"]), param: errScalar(m["param"])}
		if f.code == "" && f.message == "" {
			return nil, false
		}
	case errString(m["type"]) == "response.failed":
		var r struct {
			Response struct {
				Error json.RawMessage `json:"error"`
			} `json:"response"`
		}
		if json.Unmarshal(d, &r) != nil || !errPresent(r.Response.Error) {
			return nil, false
		}
		f = errFromObject(map[string]json.RawMessage{"error": r.Response.Error}, http.StatusOK, 0)
	default:
		return nil, false
	}
	return &llm.ProviderError{
		Dialect: "openai",
		Status:  http.StatusOK,
		Type:    f.typ,
		Code:    f.code,
		Param:   f.param,
		Message: f.message,
		Body:    exchange.KeepBody(d),
		Phase:   llm.PhaseStream,
	}, true
}

// errFields are what an envelope says.
type errFields struct {
	typ, code, param, message string
}

// errEnvelope reads any JSON envelope of body; ok is false when body is
// not JSON (or is JSON that is neither an object nor an array of objects).
func errEnvelope(body []byte, status, depth int) (errFields, bool) {
	d := bytes.TrimSpace(bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF")))
	if len(d) > 0 && (bytes.HasPrefix(d, []byte("data:")) || bytes.HasPrefix(d, []byte("event:"))) {
		d = sse.FirstData(d)
	}
	if len(d) == 0 || depth > errMaxNesting {
		return errFields{}, false
	}
	switch d[0] {
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(d, &arr) != nil || len(arr) == 0 {
			return errFields{}, false
		}
		return errEnvelope(arr[0], status, depth+1)
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(d, &m) != nil {
			return errFields{}, false
		}
		return errFromObject(m, status, depth), true
	}
	return errFields{}, false
}

// errFromObject reads the fields of one JSON object, wrapped in "error" or not.
func errFromObject(m map[string]json.RawMessage, status, depth int) errFields {
	var f errFields
	inner, isObj := errObject(m["error"])
	switch {
	case isObj:
		// {"error":{...}}: OpenAI, Anthropic, Gemini, OpenRouter, Groq, ...
		f = errTopLevel(inner)
		if f.message == "" && f.code == "" && f.typ == "" && errPresent(inner["error"]) && depth < errMaxNesting {
			// A gateway that wrapped the envelope once more.
			return errFromObject(inner, status, depth+1)
		}
		if f.typ == "" {
			// Gemini keeps its canonical status text where others keep a type.
			f.typ = errString(inner["status"])
		}
		if f.code == "" {
			f.code = errScalar(m["code"])
		}
		if meta, ok := errObject(inner["metadata"]); ok {
			f = errMetadata(f, meta, status, depth)
		}
	case errString(m["error"]) != "":
		// xAI {"code":"...","error":"..."}, Ollama, Hugging Face.
		f = errTopLevel(m)
		f.message = errString(m["error"])
	default:
		// Cerebras, vLLM, Mistral, Bedrock, FastAPI: errFields at the top.
		f = errTopLevel(m)
	}
	f.message = strings.TrimSpace(f.message)
	// A message that is itself an envelope (SDK wrappers that re-wrap an
	// upstream error as an escaped JSON string).
	if strings.HasPrefix(f.message, "{") || strings.HasPrefix(f.message, "[") {
		if g, ok := errEnvelope([]byte(f.message), status, depth+1); ok && g.message != "" {
			f = errMerge(errFields{typ: f.typ, code: f.code, param: f.param}, g, status)
			f.message = g.message
		}
	}
	return f
}

// errTopLevel reads message/type/code/param from one object's own keys.
func errTopLevel(m map[string]json.RawMessage) errFields {
	f := errFields{
		typ:     errString(m["type"]),
		code:    errScalar(m["code"]),
		param:   errScalar(m["param"]),
		message: errString(m["message"]),
	}
	if f.typ == "error" {
		// Anthropic's outer {"type":"error"} names the envelope, not the error.
		f.typ = ""
	}
	if f.message == "" {
		f.message = errString(m["msg"])
	}
	if f.message == "" {
		f.message = errDetail(m["detail"])
	}
	if f.message == "" {
		f.message = errString(m["error_message"])
	}
	return f
}

// errMetadata folds OpenRouter's error.metadata into f: the upstream's raw
// body (parsed with the same rules) and its provider name, so that
// "Provider returned error" becomes "Provider returned error (AtlasCloud):
// invalid request, invalid parameter".
func errMetadata(f errFields, meta map[string]json.RawMessage, status, depth int) errFields {
	if f.typ == "" {
		f.typ = errString(meta["error_type"])
	}
	var up errFields
	raw := meta["raw"]
	if s := strings.TrimSpace(errString(raw)); s != "" {
		var ok bool
		if up, ok = errEnvelope([]byte(s), status, depth+1); !ok {
			up = errFields{message: exchange.FirstLine(s)}
		}
	} else if _, isObj := errObject(raw); isObj {
		up, _ = errEnvelope(raw, status, depth+1)
	}
	outer := f.message
	f = errMerge(f, up, status)
	if p := strings.TrimSpace(errString(meta["provider_name"])); p != "" && !strings.Contains(f.message, p) {
		if outer != "" && f.message != outer {
			f.message = outer + " (" + p + ")" + strings.TrimPrefix(f.message, outer)
		} else if f.message != "" {
			f.message += " (" + p + ")"
		}
	}
	return f
}

// errMerge folds an upstream's fields into the outer ones: its message is
// appended when it says more, its code taken when the outer code is empty or
// merely repeats the status, its type and param when the outer has none.
func errMerge(outer, up errFields, status int) errFields {
	if up.message != "" && !strings.Contains(outer.message, up.message) {
		if outer.message == "" {
			outer.message = up.message
		} else {
			outer.message += ": " + up.message
		}
	}
	if up.code != "" && (outer.code == "" || outer.code == strconv.Itoa(status)) {
		outer.code = up.code
	}
	if outer.typ == "" {
		outer.typ = up.typ
	}
	if outer.param == "" {
		outer.param = up.param
	}
	return outer
}

// errRefusal reads a 2xx body that is an answer withheld by a safety filter.
func errRefusal(body []byte) (code, typ, message string) {
	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		StopReason     string `json:"stop_reason"`
		PromptFeedback *struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
		Candidates []struct {
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	d := bytes.TrimSpace(body)
	if len(d) == 0 || d[0] != '{' || json.Unmarshal(d, &r) != nil {
		return "", "", ""
	}
	for _, c := range r.Choices {
		if c.FinishReason == "content_filter" {
			return "content_filter", "", "the answer was withheld by the provider's content filter"
		}
	}
	if r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter" {
		return "content_filter", "", "the answer was withheld by the provider's content filter"
	}
	if r.StopReason == "refusal" {
		return "refusal", "", "the model refused to answer"
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		return r.PromptFeedback.BlockReason, "blockReason", "the prompt was blocked: " + r.PromptFeedback.BlockReason
	}
	for _, c := range r.Candidates {
		switch c.FinishReason {
		// go-genai types.go: the finish reasons that mean a blocked answer.
		case "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION",
			"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
			return c.FinishReason, "finishReason", "the answer was blocked: " + c.FinishReason
		}
	}
	return "", "", ""
}

// errObject decodes raw as a JSON object; ok is false for anything else.
func errObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
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

// errPresent reports whether raw is a truthy error value: a non-empty object,
// a non-empty string, a non-empty array, a number or true.
func errPresent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case '{':
		m, ok := errObject(raw)
		return ok && len(m) > 0
	case '"':
		return errString(raw) != ""
	case '[':
		var a []json.RawMessage
		return json.Unmarshal(raw, &a) == nil && len(a) > 0
	case 'n', 'f':
		return false
	}
	return true
}

// errString returns raw as a string when it is a JSON string, else "".
func errString(raw json.RawMessage) string {
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

// errScalar returns a string, number or boolean as text; "" for null, objects
// and arrays.
func errScalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		return errString(raw)
	case c == '-' || (c >= '0' && c <= '9'):
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return ""
		}
		return n.String()
	case c == 't' || c == 'f':
		if string(raw) == "true" || string(raw) == "false" {
			return string(raw)
		}
	}
	return ""
}

// errDetail reads FastAPI's "detail": a string, or a list of {loc, msg}.
func errDetail(raw json.RawMessage) string {
	if s := errString(raw); s != "" {
		return s
	}
	var items []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return ""
	}
	var parts []string
	for _, it := range items {
		if it.Msg == "" {
			continue
		}
		var loc []string
		for _, l := range it.Loc {
			switch v := l.(type) {
			case string:
				loc = append(loc, v)
			case float64:
				loc = append(loc, strconv.FormatFloat(v, 'f', -1, 64))
			}
		}
		if len(loc) > 0 {
			parts = append(parts, strings.Join(loc, ".")+": "+it.Msg)
		} else {
			parts = append(parts, it.Msg)
		}
	}
	return strings.Join(parts, "; ")
}
