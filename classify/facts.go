package classify

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/detourhq/detour/sse"
)

// maxFactsDepth bounds how deep readFacts walks a body, embedded JSON
// strings included.
const maxFactsDepth = 24

// facts are the discriminating details a body may carry below the fields
// of llm.ProviderError (Type, Code, Message): Gemini's typed details,
// Azure's innererror, Anthropic's details.error_code, OpenRouter's
// metadata, refusal markers of a 200 answer.
type facts struct {
	// retryDelay is google.rpc.RetryInfo.retryDelay ("37s").
	retryDelay string
	// retryAfterS is OpenRouter's metadata.retry_after_seconds.
	retryAfterS string
	// codes are further codes, compared with the code tables:
	// details.error_code (Anthropic), innererror.code (Azure),
	// ErrorInfo.reason (Gemini), incomplete_details.reason (Responses),
	// blockReason / finishReason / finish_reason / stop_reason (refusals).
	codes []string
	// quotaIDs are google.rpc.QuotaFailure violations[].quotaId.
	quotaIDs []string
	// flagged is OpenRouter's moderation metadata (reasons, flagged_input).
	flagged bool
	// limitSource is OpenRouter's metadata.limit_source.
	limitSource string
	// rlRemaining and rlReset are X-RateLimit-Remaining and -Reset from
	// OpenRouter's metadata.headers (reset in epoch milliseconds).
	rlRemaining, rlReset string
}

// readFacts walks a JSON body (or the first SSE data of one) and gathers
// its facts. A body that is not JSON has none.
func readFacts(body []byte) facts {
	var fx facts
	d := bytes.TrimSpace(body)
	if bytes.HasPrefix(d, []byte("data:")) || bytes.HasPrefix(d, []byte("event:")) {
		d = sse.FirstData(d)
	}
	fx.walkJSON(d, "", 0)
	return fx
}

// walkJSON decodes d when it is a JSON object or array and walks it.
func (fx *facts) walkJSON(d []byte, parent string, depth int) {
	d = bytes.TrimSpace(d)
	if len(d) == 0 || (d[0] != '{' && d[0] != '[') || depth > maxFactsDepth {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return
	}
	fx.walk(v, parent, depth)
}

// walk gathers facts from one decoded JSON value.
func (fx *facts) walk(v any, parent string, depth int) {
	if depth > maxFactsDepth {
		return
	}
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			fx.walk(e, parent, depth+1)
		}
	case map[string]any:
		for k, e := range v {
			fx.field(strings.ToLower(k), e, parent, depth)
		}
	}
}

// field gathers the fact of one key of an object whose key is parent.
func (fx *facts) field(k string, v any, parent string, depth int) {
	s, isString := v.(string)
	switch k {
	case "retrydelay":
		if isString && fx.retryDelay == "" {
			fx.retryDelay = s
		}
	case "retry_after_seconds":
		if n, ok := v.(json.Number); ok && fx.retryAfterS == "" {
			fx.retryAfterS = n.String()
		} else if isString && fx.retryAfterS == "" {
			fx.retryAfterS = s
		}
	case "error_code", "reason", "blockreason", "finishreason", "finish_reason", "stop_reason":
		if isString && s != "" {
			fx.codes = append(fx.codes, s)
		}
	case "code":
		if isString && (parent == "innererror" || parent == "inner_error") {
			fx.codes = append(fx.codes, s)
		}
	case "quotaid":
		if isString {
			fx.quotaIDs = append(fx.quotaIDs, s)
		}
	case "flagged_input":
		fx.flagged = true
	case "reasons":
		if a, ok := v.([]any); ok && len(a) > 0 && parent == "metadata" {
			fx.flagged = true
		}
	case "limit_source":
		if isString {
			fx.limitSource = s
		}
	case "headers":
		if m, ok := v.(map[string]any); ok && parent == "metadata" {
			for hk, hv := range m {
				hs, _ := hv.(string)
				if n, ok := hv.(json.Number); ok {
					hs = n.String()
				}
				switch strings.ToLower(hk) {
				case "x-ratelimit-remaining":
					fx.rlRemaining = hs
				case "x-ratelimit-reset":
					fx.rlReset = hs
				}
			}
		}
	case "raw", "message":
		// OpenRouter's metadata.raw and SDK wrappers carry a whole upstream
		// body as a string.
		if isString {
			fx.walkJSON([]byte(s), k, depth+1)
		}
	}
	fx.walk(v, k, depth+1)
}
