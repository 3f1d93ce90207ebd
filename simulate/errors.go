package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Style is the error dialect of a provider that otherwise speaks OpenAI's
// chat completions: OpenAI-compatible endpoints agree on answers and streams,
// but each wraps its errors its own way. The zero Style is StyleOpenAI.
type Style string

// The error styles. Each body below comes from a recorded or reported real
// response (source in the comment); bodies marked "reconstructed" follow the
// provider's real envelope with a message that was not captured verbatim.
const (
	// StyleOpenAI: {"error":{"message","type","param","code"}}, pretty-printed.
	StyleOpenAI Style = "openai"
	// StyleGroq: the same four keys, compact, newline-terminated, null keys left out.
	StyleGroq Style = "groq"
	// StyleOpenRouter: {"error":{"message","code":<status>,"metadata"},"user_id"}.
	StyleOpenRouter Style = "openrouter"
	// StyleGemini: Gemini's OpenAI-compatible endpoint, a JSON array holding one
	// google.rpc.Status: [{"error":{"code","message","status"}}].
	StyleGemini Style = "gemini"
	// StyleMistral: {"object":"error","message","type","param","code":"<digits>"}.
	StyleMistral Style = "mistral"
)

func (s Style) valid() bool {
	switch s {
	case "", StyleOpenAI, StyleGroq, StyleOpenRouter, StyleGemini, StyleMistral:
		return true
	}
	return false
}

// Identities that appear in error messages. They are fake and fixed so that
// bodies are deterministic.
const (
	openaiOrg      = "org-SimulatedDetourOrg00000"
	groqOrg        = "org_01jzsimulatedetour0000000"
	openrouterUser = "user_2zSimulatedDetourUser0000"
)

// reply is one complete HTTP error answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// errCtx is what an error body may mention about the request.
type errCtx struct {
	dialect       Dialect // never the zero Dialect once the provider is known
	style         Style
	model         string
	key           string // the key presented, if any
	keyGiven      bool
	promptTokens  int
	maxTokens     int // the request's max_tokens, 0 when absent
	contextWindow int
	requestID     string
	stream        bool      // the request asked for a stream
	lastRole      string    // the role of the request's last message, when read
	apiVersion    string    // Gemini: "v1beta" or "v1", as in the request path
	now           time.Time // the Server's clock when the request arrived
	f             Fault
}

// reply builds the answer of the error kind c.f.Kind in the provider's
// dialect (and, for DialectOpenAI, its style), then applies the fault's
// Status and Body overrides.
func (c errCtx) reply() reply {
	var r reply
	switch c.dialect {
	case DialectAnthropic:
		r = anthropicError(c)
	case DialectGemini:
		r = geminiError(c)
	case DialectResponses:
		return responsesError(c)
	default:
		return errorReply(c)
	}
	return c.override(r)
}

// override applies the fault's Status and Body to r.
func (c errCtx) override(r reply) reply {
	if c.f.Status != 0 {
		r.status = c.f.Status
	}
	if c.f.Body != "" {
		r.body = []byte(c.f.Body)
	}
	if r.header == nil {
		r.header = http.Header{}
	}
	return r
}

// errorReply builds the answer of an error kind in the provider's style.
func errorReply(c errCtx) reply {
	r := c.override(buildError(c))
	r.header.Set("X-Request-Id", c.requestID)
	return r
}

func buildError(c errCtx) reply {
	m := c.model
	switch c.f.Kind {
	case RateLimit:
		r := rateLimit(c)
		if w := c.f.RetryAfter; w > 0 {
			r.header.Set("Retry-After", strconv.Itoa(ceilSeconds(w)))
			r.header.Set("Retry-After-Ms", strconv.FormatInt(w.Milliseconds(), 10))
			r.header.Set("X-Ratelimit-Limit-Requests", "500")
			r.header.Set("X-Ratelimit-Remaining-Requests", "0")
			r.header.Set("X-Ratelimit-Reset-Requests", w.String())
		}
		return r

	case DailyQuota:
		// Groq TPD wall. Wording: the TPD bodies quoted in
		// https://github.com/ago19800/HomeMind/issues/29 and groq-typescript#28
		// ("... on tokens per day (TPD): Limit 100000, Used 99996, Requested 484.
		// Please try again in 6m54.72s. Need more tokens? Upgrade to Dev Tier
		// ..."), type "tokens", code rate_limit_exceeded. Groq's
		// x-ratelimit-*-tokens headers describe the per-minute bucket only, so
		// they look healthy while the day is gone (PROVIDERS.md, Groq).
		w := c.f.RetryAfter
		if w <= 0 {
			w = 7*time.Minute + 12300*time.Millisecond
		}
		req := c.promptTokens + orDefault(c.maxTokens, 1024)
		used := over(100000, req, 99812)
		msg := fmt.Sprintf("Rate limit reached for model `%s` in organization `%s` service tier `on_demand` on tokens per day (TPD): Limit 100000, Used %d, Requested %d. Please try again in %s. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing", m, groqOrg, used, req, w)
		r := reply{429, jsonHeader("application/json"), groqBody(msg, "tokens", "", "rate_limit_exceeded")}
		r.header.Set("Retry-After", strconv.Itoa(ceilSeconds(w)))
		r.header.Set("X-Ratelimit-Limit-Requests", "1000")
		r.header.Set("X-Ratelimit-Limit-Tokens", "12000")
		r.header.Set("X-Ratelimit-Remaining-Requests", "987")
		r.header.Set("X-Ratelimit-Remaining-Tokens", "12000")
		r.header.Set("X-Ratelimit-Reset-Requests", "18m43.2s")
		r.header.Set("X-Ratelimit-Reset-Tokens", "6s")
		return r

	case InsufficientQuota:
		// Verbatim: https://github.com/mattvr/ShellGPT/issues/23 (4-space indent,
		// no trailing newline).
		return reply{429, jsonHeader("application/json; charset=utf-8"), openaiBody("    ", false,
			"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
			"insufficient_quota", "", "insufficient_quota")}

	case NoCredits:
		// Verbatim shape: https://github.com/Gitlawb/openclaude/issues/1125.
		// OpenRouter pre-checks max_tokens x price against the balance; without
		// max_tokens it assumes a large output (32000 in that capture).
		asked := orDefault(c.maxTokens, 32000)
		afford := c.f.Afford
		if afford <= 0 {
			afford = asked * 85 / 100
		}
		if afford >= asked {
			afford = asked - 1
		}
		msg := fmt.Sprintf("This request requires more credits, or fewer max_tokens. You requested up to %d tokens, but can only afford %d. To increase, visit https://openrouter.ai/settings/credits and upgrade to a paid account", asked, afford)
		return reply{402, jsonHeader("application/json"), openrouterBody(msg, 402, `{"provider_name":null}`, true)}

	case Unavailable:
		return byStyle(c, 503, styleTexts{
			// https://github.com/openai/openai-python error docs; PROVIDERS.md OpenAI "Server".
			openai: text{msg: "That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists. (Please include the request ID " + c.requestID + " in your message.)", typ: "server_error"},
			// reconstructed: Groq envelope, status text as message.
			groq: text{msg: "Service Unavailable", typ: "internal_server_error"},
			// reconstructed: OpenRouter 503 means no provider meets the routing requirements (docs).
			openrouter: text{msg: "No allowed providers are available for the selected model."},
			// https://github.com/google-gemini/gemini-cli/issues/7392
			gemini: text{msg: "The model is overloaded. Please try again later.", grpc: "UNAVAILABLE"},
			// https://github.com/continuedev/continue/issues/6185 (a 503 per BerriAI/litellm#25078; misleading type)
			mistral: text{msg: "Service tier capacity exceeded for this model.", typ: "invalid_request_error"},
		})

	case ServerError, StreamError:
		return byStyle(c, 500, styleTexts{
			openai: text{msg: "The server had an error while processing your request. Sorry about that!", typ: "server_error"},
			// reconstructed
			groq: text{msg: "Internal Server Error", typ: "internal_server_error"},
			// reconstructed
			openrouter: text{msg: "Internal Server Error"},
			// PROVIDERS.md Gemini: 500 INTERNAL
			gemini: text{msg: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", grpc: "INTERNAL"},
			// Recorded: maruel/genai providers/mistral/.../GenStreamMultiModal-Document-pdf-URL.yaml
			mistral: text{msg: "Service unavailable.", typ: "internal_server_error", code: "1000"},
		})

	case Unauthorized:
		return unauthorized(c)

	case BadRequest:
		p := c.f.Param
		if p == "" {
			p = "stop"
		}
		if style(c.style) == StyleOpenAI {
			// Recorded: maruel/genai openaichat Scoreboard (sample id
			// openai-chat-400-unsupported-parameter), headers included.
			r := reply{400, jsonHeader("application/json"), openaiBody("  ", false,
				fmt.Sprintf("Unsupported parameter: '%s' is not supported with this model.", p),
				"invalid_request_error", p, "unsupported_parameter")}
			r.header.Set("X-Ratelimit-Limit-Requests", "500")
			r.header.Set("X-Ratelimit-Limit-Tokens", "200000")
			r.header.Set("X-Ratelimit-Remaining-Requests", "499")
			r.header.Set("X-Ratelimit-Remaining-Tokens", "199983")
			r.header.Set("X-Ratelimit-Reset-Requests", "120ms")
			r.header.Set("X-Ratelimit-Reset-Tokens", "5ms")
			return r
		}
		if style(c.style) == StyleOpenRouter {
			// Shape recorded: maruel/genai openrouter Scoreboard (sample id
			// openrouter-400-provider-returned-error).
			meta := `{"raw":"{\"code\":400,\"msg\":\"invalid request, invalid parameter\"}","provider_name":"AtlasCloud","is_byok":false}`
			return reply{400, jsonHeader("application/json"), openrouterBody("Provider returned error", 400, meta, true)}
		}
		if style(c.style) == StyleMistral {
			// Recorded: maruel/genai mistral Scoreboard (sample id mistral-400-image-input-not-enabled).
			return reply{400, jsonHeader("application/json"), mistralBody("Image input is not enabled for this model", "invalid_request_invalid_args", "", "3051")}
		}
		return byStyle(c, 400, styleTexts{
			// reconstructed
			groq: text{msg: fmt.Sprintf("property '%s' is unsupported, please remove it from the request", p), typ: "invalid_request_error", param: p},
			// Gemini's wording for an unknown request field.
			gemini: text{msg: fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", p), grpc: "INVALID_ARGUMENT"},
		})

	case ContextOverflow:
		win := orDefault(c.contextWindow, 131072)
		n := win + c.promptTokens
		return byStyle(c, 400, styleTexts{
			// PROVIDERS.md OpenAI "Context".
			openai: text{msg: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", win, n), typ: "invalid_request_error", param: "messages", code: "context_length_exceeded"},
			groq:   text{msg: "Please reduce the length of the messages or completion.", typ: "invalid_request_error", param: "messages", code: "context_length_exceeded"},
			// reconstructed from OpenRouter's overflow message
			openrouter: text{msg: fmt.Sprintf("This endpoint's maximum context length is %d tokens. However, you requested about %d tokens (%d of text input, %d in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.", win, n+c.maxTokens, n, c.maxTokens)},
			// PROVIDERS.md Gemini "Overflow"
			gemini: text{msg: fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", n, win), grpc: "INVALID_ARGUMENT"},
			// reconstructed
			mistral: text{msg: fmt.Sprintf("Prompt contains %d tokens, too large for model with %d maximum context length", n, win), typ: "invalid_request_error", code: "3051"},
		})

	case ModelNotFound:
		ts := styleTexts{
			openai:  text{msg: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", m), typ: "invalid_request_error", code: "model_not_found"},
			gemini:  text{msg: fmt.Sprintf("models/%s is not found for API version v1main, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", m), grpc: "NOT_FOUND"},
			mistral: text{msg: "Invalid model: " + m, typ: "invalid_model", code: "1500"},
		}
		ts.groq = ts.openai
		switch style(c.style) {
		case StyleOpenRouter:
			return reply{400, jsonHeader("application/json"), openrouterBody(m+" is not a valid model ID", 400, "", true)}
		case StyleMistral:
			return byStyle(c, 400, ts)
		}
		return byStyle(c, 404, ts)
	}
	return byStyle(c, 500, styleTexts{})
}

// rateLimit is the per-minute 429 of each style.
func rateLimit(c errCtx) reply {
	w := c.f.RetryAfter
	wait := ""
	if w > 0 {
		wait = " Please try again in " + w.String() + "."
	}
	switch style(c.style) {
	case StyleGroq:
		// Template: PROVIDERS.md Groq (TPM variant), groq-typescript#28.
		req := c.promptTokens + orDefault(c.maxTokens, 1024)
		msg := fmt.Sprintf("Rate limit reached for model `%s` in organization `%s` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Used %d, Requested %d.%s Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing", c.model, groqOrg, over(12000, req, 11654), req, wait)
		return reply{429, jsonHeader("application/json"), groqBody(msg, "tokens", "", "rate_limit_exceeded")}
	case StyleOpenRouter:
		// Shape reported in many issues: "Provider returned error" with the
		// upstream's message in metadata.raw.
		raw, _ := marshal(c.model + " is temporarily rate-limited upstream. Please retry shortly, or add your own key to accumulate your rate limits: https://openrouter.ai/settings/integrations")
		meta := `{"raw":` + string(raw) + `,"provider_name":"DeepInfra","is_byok":false}`
		return reply{429, jsonHeader("application/json"), openrouterBody("Provider returned error", 429, meta, true)}
	case StyleGemini:
		// Verbatim: https://github.com/n4ze3m/page-assist/issues/406 (OpenAI-compatible endpoint).
		return reply{429, jsonHeader("application/json"), geminiBody(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED", nil)}
	case StyleMistral:
		// Verbatim: https://github.com/cline/cline/issues/9085
		return reply{429, jsonHeader("application/json"), mistralBody("Rate limit exceeded", "rate_limited", "", "1300")}
	}
	// Wording: sample ids openai-429-tpm-ms and openai-429-rpd-long-wait.
	msg := fmt.Sprintf("Rate limit reached for %s in organization %s on requests per min (RPM): Limit 500, Used 500, Requested 1.%s Visit https://platform.openai.com/account/rate-limits to learn more.", c.model, openaiOrg, wait)
	return reply{429, jsonHeader("application/json"), openaiBody("  ", false, msg, "requests", "", "rate_limit_exceeded")}
}

// unauthorized is the bad-key answer of each style.
func unauthorized(c errCtx) reply {
	switch style(c.style) {
	case StyleGroq:
		// Recorded: sample id groq-401-invalid-api-key.
		r := reply{401, jsonHeader("application/json"), groqBody("Invalid API Key", "invalid_request_error", "", "invalid_api_key")}
		r.header.Set("X-Groq-Region", "msp")
		return r
	case StyleOpenRouter:
		if !c.keyGiven {
			// Recorded: sample id openrouter-401-auth.
			return reply{401, jsonHeader("application/json"), openrouterBody("Missing Authentication header", 401, "", false)}
		}
		// reconstructed
		return reply{401, jsonHeader("application/json"), openrouterBody("User not found.", 401, "", false)}
	case StyleGemini:
		// Gemini answers a bad key with 400 INVALID_ARGUMENT + ErrorInfo API_KEY_INVALID
		// (maruel/genai gemini bad_apiKey recording), here in the compat array.
		details := []any{
			rpcErrorInfo{"type.googleapis.com/google.rpc.ErrorInfo", "API_KEY_INVALID", "googleapis.com", map[string]string{"service": "generativelanguage.googleapis.com"}},
			rpcLocalized{"type.googleapis.com/google.rpc.LocalizedMessage", "en-US", "API key not valid. Please pass a valid API key."},
		}
		return reply{400, jsonHeader("application/json"), geminiBody(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT", details)}
	case StyleMistral:
		// Recorded: sample id mistral-401-unauthorized.
		return reply{401, jsonHeader("application/json; charset=utf-8"), []byte(`{"detail":"Unauthorized"}`)}
	}
	if !c.keyGiven {
		return reply{401, jsonHeader("application/json; charset=utf-8"), openaiBody("    ", true,
			"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username. You can obtain an API key from https://platform.openai.com/account/api-keys.",
			"invalid_request_error", "", "")}
	}
	// Recorded: sample id openai-chat-401-invalid-api-key (4-space indent, newline).
	return reply{401, jsonHeader("application/json; charset=utf-8"), openaiBody("    ", true,
		"Incorrect API key provided: "+maskKey(c.key)+". You can find your API key at https://platform.openai.com/account/api-keys.",
		"invalid_request_error", "", "invalid_api_key")}
}

// text is the message of one error in one style; unset fields mean null or absent.
type text struct {
	msg, typ, param, code string
	grpc                  string // Gemini status name
}

// styleTexts holds an error's text per style; a missing style borrows the
// OpenAI text, in its own envelope.
type styleTexts struct {
	openai, groq, openrouter, gemini, mistral text
}

// byStyle renders the style's text of an error with status in the style's envelope.
func byStyle(c errCtx, status int, ts styleTexts) reply {
	t := ts.openai
	switch style(c.style) {
	case StyleGroq:
		if ts.groq.msg != "" {
			t = ts.groq
		}
		return reply{status, jsonHeader("application/json"), groqBody(t.msg, t.typ, t.param, t.code)}
	case StyleOpenRouter:
		if ts.openrouter.msg != "" {
			t = ts.openrouter
		}
		return reply{status, jsonHeader("application/json"), openrouterBody(t.msg, status, "", true)}
	case StyleGemini:
		if ts.gemini.msg != "" {
			t = ts.gemini
		}
		g := t.grpc
		if g == "" {
			g = grpcStatus(status)
		}
		return reply{status, jsonHeader("application/json"), geminiBody(status, t.msg, g, nil)}
	case StyleMistral:
		if ts.mistral.msg != "" {
			t = ts.mistral
		}
		return reply{status, jsonHeader("application/json"), mistralBody(t.msg, t.typ, t.param, t.code)}
	}
	return reply{status, jsonHeader("application/json"), openaiBody("  ", false, t.msg, t.typ, t.param, t.code)}
}

// genericError renders a request-validation error (bad JSON, missing field)
// in the style's envelope.
func genericError(c errCtx, status int, msg, param, code string) reply {
	t := text{msg: msg, typ: "invalid_request_error", param: param, code: code}
	r := byStyle(c, status, styleTexts{openai: t})
	r.header.Set("X-Request-Id", c.requestID)
	return r
}

func style(s Style) Style {
	if s == "" {
		return StyleOpenAI
	}
	return s
}

func grpcStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

// openaiBody is OpenAI's pretty-printed envelope; empty param and code are null.
func openaiBody(indent string, newline bool, msg, typ, param, code string) []byte {
	v := struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}{}
	v.Error.Message, v.Error.Type, v.Error.Param, v.Error.Code = msg, typ, nullable(param), nullable(code)
	b := marshalIndent(v, indent)
	if newline {
		b = append(b, '\n')
	}
	return b
}

// groqBody is Groq's compact envelope with a trailing newline; empty keys are left out.
func groqBody(msg, typ, param, code string) []byte {
	v := struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type,omitempty"`
			Param   string `json:"param,omitempty"`
			Code    string `json:"code,omitempty"`
		} `json:"error"`
	}{}
	v.Error.Message, v.Error.Type, v.Error.Param, v.Error.Code = msg, typ, param, code
	b, _ := marshal(v)
	return append(b, '\n')
}

// openrouterBody is OpenRouter's envelope; metadata is raw JSON or empty.
func openrouterBody(msg string, code int, metadata string, user bool) []byte {
	v := struct {
		Error struct {
			Message  string          `json:"message"`
			Code     int             `json:"code"`
			Metadata json.RawMessage `json:"metadata,omitempty"`
		} `json:"error"`
		UserID string `json:"user_id,omitempty"`
	}{}
	v.Error.Message, v.Error.Code = msg, code
	if metadata != "" {
		v.Error.Metadata = json.RawMessage(metadata)
	}
	if user {
		v.UserID = openrouterUser
	}
	b, _ := marshal(v)
	return b
}

// geminiBody is a google.rpc.Status in the array the OpenAI-compatible
// endpoint answers with.
func geminiBody(code int, msg, status string, details []any) []byte {
	v := struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
			Details []any  `json:"details,omitempty"`
		} `json:"error"`
	}{}
	v.Error.Code, v.Error.Message, v.Error.Status, v.Error.Details = code, msg, status, details
	b := marshalIndent(v, "  ")
	return append(append([]byte("["), b...), "\n]"...)
}

// mistralBody is Mistral's flat envelope; empty param and code are null.
func mistralBody(msg, typ, param, code string) []byte {
	v := struct {
		Object  string  `json:"object"`
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}{"error", msg, typ, nullable(param), nullable(code)}
	b, _ := marshal(v)
	return b
}

// maskKey hides all but the ends of a key, as OpenAI does in its 401 message.
func maskKey(k string) string {
	if len(k) <= 10 {
		return k
	}
	return k[:3] + string(bytes.Repeat([]byte("*"), len(k)-7)) + k[len(k)-4:]
}

func jsonHeader(ct string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", ct)
	return h
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orDefault(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// over returns a "Used" count that, with requested, passes limit.
func over(limit, requested, used int) int {
	if used+requested > limit {
		return used
	}
	return limit - requested + 1
}

func ceilSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

// marshal is json.Marshal without HTML escaping, as providers write JSON.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// marshalIndent is json.MarshalIndent without HTML escaping and without a
// trailing newline. It panics on an unencodable value: every value here is
// built by this package.
func marshalIndent(v any, indent string) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", indent)
	if err := e.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
