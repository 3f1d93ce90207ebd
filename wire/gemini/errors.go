package gemini

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/exchange"
)

// dialect names this adapter in every llm.ProviderError it makes.
const dialect = "gemini"

// rpcStatus is google.rpc.Status, the body of every Gemini API error
// (go-genai api_client.go APIError{Code, Message, Status, Details}).
type rpcStatus struct {
	Code    json.RawMessage   `json:"code"`
	Message string            `json:"message"`
	Status  string            `json:"status"`
	Details []json.RawMessage `json:"details"`
}

// rpcDetail is one element of details[], typed by "@type": the fields of
// google.rpc.ErrorInfo (reason, metadata), QuotaFailure (violations) and
// RetryInfo (retryDelay) that matter here.
type rpcDetail struct {
	Type       string            `json:"@type"`
	Reason     string            `json:"reason"`
	Metadata   map[string]string `json:"metadata"`
	Violations []struct {
		QuotaID string `json:"quotaId"`
	} `json:"violations"`
}

// ParseError reads an error response of the Gemini API into an
// *llm.ProviderError. It never fails and never panics: whatever the body
// is, the result carries the status, the header, the body (cut to
// MaxErrorBody), Phase response and Dialect "gemini", plus what could be
// read of the google.rpc.Status envelope {"error":{"code","message",
// "status","details":[...]}}:
//
//   - Type is the canonical status text: RESOURCE_EXHAUSTED, UNAVAILABLE,
//     INVALID_ARGUMENT, FAILED_PRECONDITION, PERMISSION_DENIED, NOT_FOUND,
//     INTERNAL, ...;
//   - Code is the most telling detail: on a quota error
//     (429 or RESOURCE_EXHAUSTED) the QuotaFailure quotaId, a per-day one
//     first ("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), else an
//     older ErrorInfo's metadata quota_limit; otherwise the
//     ErrorInfo.reason ("API_KEY_INVALID"); else the numeric code as
//     decimal text ("503");
//   - Message is error.message.
//
// The envelope may come bare, inside a JSON array ([{"error":{...}}], as
// Gemini's OpenAI-compatible endpoint sends it, the first element is
// read), or SSE-framed ("data: {...}"). Content-Type is not consulted:
// Gemini sends JSON errors of its streaming endpoint as text/event-stream.
// A body that is not JSON yields Message from an HTML page's title or the
// first line of text.
//
// A 2xx body that is a GenerateContentResponse withheld by the safety
// filters (promptFeedback.blockReason, or a blocking finishReason such as
// SAFETY) yields Type "safety" and Code the block or finish reason, as
// DecodeResponse returns it.
func ParseError(status int, header http.Header, body []byte) *llm.ProviderError {
	e := &llm.ProviderError{
		Dialect: dialect,
		Status:  status,
		Header:  header,
		Body:    exchange.KeepBody(body),
		Phase:   llm.PhaseResponse,
	}
	d := jsonPayload(body)
	if st, ok := findStatus(d, 0); ok {
		fillStatus(e, st, status)
		return e
	}
	if status >= 200 && status < 300 {
		var r generateResponse
		if len(d) > 0 && d[0] == '{' && json.Unmarshal(d, &r) == nil {
			if code, msg, ok := r.blocked(); ok {
				e.Type, e.Code, e.Message = typeSafety, code, msg
			}
		}
		return e
	}
	e.Message = plainText(e.Body)
	return e
}

// ParseStreamError reads an error inside a 200 stream: a chunk that is a
// google.rpc.Status envelope {"error":{...}} (or an array holding one).
// The result has Status 200, Phase stream and the fields ParseError reads.
// ok is false when data carries no error: not JSON, no "error" key, or an
// "error" that is null, empty or not an object.
func ParseStreamError(data []byte) (e *llm.ProviderError, ok bool) {
	d := bytes.TrimSpace(data)
	st, ok := findStatus(d, 0)
	if !ok {
		return nil, false
	}
	e = &llm.ProviderError{
		Dialect: dialect,
		Status:  http.StatusOK,
		Body:    exchange.KeepBody(d),
		Phase:   llm.PhaseStream,
	}
	fillStatus(e, st, 0)
	return e, true
}

// findStatus finds the google.rpc.Status of a JSON body: the "error" object
// of an object, or of the first element of an array. ok is false when
// there is none, or it says nothing (no code, message or status).
func findStatus(d []byte, depth int) (rpcStatus, bool) {
	d = bytes.TrimSpace(d)
	if len(d) == 0 || depth > 2 {
		return rpcStatus{}, false
	}
	switch d[0] {
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(d, &arr) != nil || len(arr) == 0 {
			return rpcStatus{}, false
		}
		return findStatus(arr[0], depth+1)
	case '{':
		var env struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(d, &env) != nil {
			return rpcStatus{}, false
		}
		raw := bytes.TrimSpace(env.Error)
		if len(raw) == 0 || raw[0] != '{' {
			return rpcStatus{}, false
		}
		var st rpcStatus
		if json.Unmarshal(raw, &st) != nil {
			// A field of an unexpected type: keep what a loose read gives.
			st = looseStatus(raw)
		}
		if st.Message == "" && st.Status == "" && codeText(st.Code) == "" {
			return rpcStatus{}, false
		}
		return st, true
	}
	return rpcStatus{}, false
}

// looseStatus reads the fields of a Status one by one, skipping those of
// the wrong type.
func looseStatus(raw []byte) rpcStatus {
	var m map[string]json.RawMessage
	var st rpcStatus
	if json.Unmarshal(raw, &m) != nil {
		return st
	}
	st.Code = m["code"]
	_ = json.Unmarshal(m["message"], &st.Message)
	_ = json.Unmarshal(m["status"], &st.Status)
	_ = json.Unmarshal(m["details"], &st.Details)
	return st
}

// fillStatus copies a Status into e.
func fillStatus(e *llm.ProviderError, st rpcStatus, status int) {
	e.Type = strings.TrimSpace(st.Status)
	e.Message = strings.TrimSpace(st.Message)
	e.Code = errCode(st, status)
}

// errCode picks the Code of an error: on a quota error (429 or
// RESOURCE_EXHAUSTED) the quota that ran out, a per-day quotaId before any
// other (classify parks the target until the daily reset on it), else the
// first quotaId, else an older ErrorInfo's metadata quota_limit
// (generative-ai-docs#236); otherwise ErrorInfo.reason; else the numeric
// code. Sources: PROVIDERS.md Gemini; sample gemini-429-limit-zero.
func errCode(st rpcStatus, status int) string {
	var reason, quotaLimit, firstQuota, dayQuota string
	for _, raw := range st.Details {
		var d rpcDetail
		if json.Unmarshal(raw, &d) != nil {
			continue
		}
		switch {
		case strings.HasSuffix(d.Type, "google.rpc.ErrorInfo"):
			if reason == "" {
				reason = d.Reason
			}
			if quotaLimit == "" {
				quotaLimit = d.Metadata["quota_limit"]
			}
		case strings.HasSuffix(d.Type, "google.rpc.QuotaFailure"):
			for _, v := range d.Violations {
				if firstQuota == "" {
					firstQuota = v.QuotaID
				}
				if dayQuota == "" && strings.Contains(strings.ToLower(v.QuotaID), "perday") {
					dayQuota = v.QuotaID
				}
			}
		}
	}
	quota := status == http.StatusTooManyRequests || st.Status == "RESOURCE_EXHAUSTED"
	for _, c := range []string{
		pick(quota, dayQuota), pick(quota, firstQuota), pick(quota, quotaLimit),
		reason, firstQuota, codeText(st.Code),
	} {
		if c = strings.TrimSpace(c); c != "" {
			return c
		}
	}
	return ""
}

// pick returns s when ok, else "".
func pick(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// codeText returns a JSON number or string as text; "" for anything else.
func codeText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case c == '-' || (c >= '0' && c <= '9'):
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			return n.String()
		}
	}
	return ""
}

// jsonPayload returns body without a byte order mark and surrounding
// white space, and, when it is SSE-framed, the data of its first event.
func jsonPayload(body []byte) []byte {
	d := bytes.TrimSpace(bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF")))
	if !bytes.HasPrefix(d, []byte("data:")) && !bytes.HasPrefix(d, []byte("event:")) {
		return d
	}
	var out [][]byte
	for line := range bytes.Lines(d) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if len(out) > 0 {
				break
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			out = append(out, bytes.TrimPrefix(v, []byte(" ")))
		}
	}
	return bytes.TrimSpace(bytes.Join(out, []byte("\n")))
}

// plainText is the message of a body that is not JSON: an HTML page's
// title, else its first non-empty line of text (tags become line breaks),
// cut to exchange.MaxErrorText runes.
func plainText(body []byte) string {
	s := strings.TrimSpace(string(body))
	if strings.HasPrefix(s, "<") {
		if t := strings.Join(strings.Fields(exchange.Element(s, "title")), " "); t != "" {
			return exchange.CutText(t)
		}
		s = exchange.StripTags(s, '\n')
	}
	return exchange.FirstLine(s)
}
