package classify_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/openai"
)

func TestClassify_Invalid(t *testing.T) {
	runHTTP(t, []httpCase{
		{
			// Sample openai-chat-400-unsupported-parameter (rate headers not exhausted).
			name: "OpenAI400Unsupported", status: 400,
			header: hdr("X-Ratelimit-Remaining-Requests", "499", "X-Ratelimit-Reset-Requests", "120ms"),
			body:   `{"error":{"message":"Unsupported parameter: 'stop' is not supported with this model.","type":"invalid_request_error","param":"stop","code":"unsupported_parameter"}}`,
			kind:   classify.Invalid, code: "unsupported_parameter", reason: "400 Unsupported parameter: 'stop'",
		},
		{
			// Mistral 422 pydantic (P: Mistral).
			name: "Mistral422", status: 422,
			body: `{"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required","input":{}}]}`,
			kind: classify.Invalid, reason: "422 body.messages: Field required",
		},
		{
			// Fireworks via the HF router (P: Together, Fireworks).
			name: "Fireworks400Schema", status: 400,
			body: `{"error":{"object":"error","type":"invalid_request_error","code":"invalid_request_error","message":"Invalid json_schema format: missing 'type'"}}`,
			kind: classify.Invalid,
		},
		{
			// OpenRouter 400 schema error carrying retry_after_seconds (P: 3.10).
			name: "OpenRouter400WithRetryAfter", status: 400,
			body: `{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"error\":{\"message\":\"Invalid schema for function 'f'\"}}","provider_name":"OpenAI","retry_after_seconds":2}}}`,
			kind: classify.Invalid, retryAfter: 2 * time.Second,
		},
		{
			// llama.cpp 500 without mmproj (P: Local servers).
			name: "LlamaCpp500NoImages", status: 500,
			body: `{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}`,
			kind: classify.Invalid,
		},
		{
			// Ollama 500 bad image (recording).
			name: "Ollama500BadImage", status: 500,
			body: `{"error":"Failed to create new sequence: failed to process inputs: image: unknown format"}`,
			kind: classify.Invalid,
		},
		{
			name: "StreamInvalidRequest", stream: true,
			body: `{"error":{"message":"Invalid 'tools[0].function.name'","type":"invalid_request_error","param":"tools[0].function.name","code":"invalid_value"}}`,
			kind: classify.Invalid, code: "invalid_value",
		},
	})
}

func TestClassify_ContextOverflow(t *testing.T) {
	runHTTP(t, []httpCase{
		{
			// P: OpenAI, Context.
			name: "OpenAI400ContextLengthExceeded", status: 400,
			body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			kind: classify.ContextOverflow, code: "context_length_exceeded", reason: "400 context length exceeded",
		},
		{
			// DeepSeek: generic code, message only (evalstate/fast-agent#621).
			name: "DeepSeek400Message", status: 400,
			body: `{"error":{"message":"This model's maximum context length is 131072 tokens. However, you requested 131134 tokens (122942 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`,
			kind: classify.ContextOverflow,
		},
		{
			// llama.cpp 500 (recording; ik_llama.cpp#2420): message before status.
			name: "LlamaCpp500", status: 500,
			body: `{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}`,
			kind: classify.ContextOverflow,
		},
		{
			// Gemini (P: Gemini).
			name: "Gemini400InputTokenCount", status: 400,
			body: `{"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}}`,
			kind: classify.ContextOverflow,
		},
		{
			// Anthropic 413 from Cloudflare (P: Anthropic; §3.8).
			name: "Anthropic413", status: 413,
			body: `{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`,
			kind: classify.ContextOverflow, code: "request_too_large",
		},
		{
			// llama.cpp mid-generation overflow frame (recording).
			name: "StreamLlamaCpp", stream: true,
			body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}`,
			kind: classify.ContextOverflow,
		},
	})
}

func TestClassify_Policy(t *testing.T) {
	runHTTP(t, []httpCase{
		{
			// OpenAI images (code content_policy_violation).
			name: "OpenAI400ContentPolicyViolation", status: 400,
			body: `{"error":{"code":"content_policy_violation","message":"Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system.","param":null,"type":"invalid_request_error"}}`,
			kind: classify.Policy, code: "content_policy_violation",
		},
		{
			// pal-mcp-server#178.
			name: "OpenAI400InvalidPrompt", status: 400,
			body: "{\n  \"error\": {\n    \"message\": \"Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please try again with a different prompt: https://platform.openai.com/docs/guides/reasoning#advice-on-prompting\",\n    \"type\": \"invalid_request_error\",\n    \"param\": null,\n    \"code\": \"invalid_prompt\"\n  }\n}",
			kind: classify.Policy, code: "invalid_prompt",
		},
		{
			// Azure 400 content filter with innererror (openai-dotnet#55).
			name: "Azure400ContentFilter", status: 400,
			body: `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}}`,
			kind: classify.Policy, code: "content_filter",
		},
		{
			// OpenRouter 403 moderation (P: OpenRouter).
			name: "OpenRouter403Moderation", status: 403,
			body: `{"error":{"code":403,"message":"meta-llama/llama-guard flagged your input","metadata":{"reasons":["violence"],"flagged_input":"...","provider_name":"OpenAI","model_slug":"openai/gpt-4o"}}}`,
			kind: classify.Policy, reason: "403 flagged by moderation",
		},
		{
			// Sample azure-200-finish-reason-content-filter.
			name: "Status200ContentFilter", status: 200,
			body: `{"id":"chatcmpl-x","object":"chat.completion","choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant","content":null}}]}`,
			kind: classify.Policy, code: "content_filter", reason: "blocked by the content filter",
		},
		{
			// Gemini prompt block (go-genai types.go).
			name: "Status200BlockReason", status: 200,
			body: `{"promptFeedback":{"blockReason":"OTHER"}}`,
			kind: classify.Policy,
		},
		{
			// Anthropic refusal (anthropic-sdk-go message.go).
			name: "Status200Refusal", status: 200,
			body: `{"type":"message","role":"assistant","stop_reason":"refusal","content":[]}`,
			kind: classify.Policy, code: "refusal",
		},
		{
			name: "StreamInvalidPrompt", stream: true,
			body: `{"type":"response.failed","response":{"error":{"code":"invalid_prompt","message":"Invalid prompt: your prompt was flagged"}}}`,
			kind: classify.Policy, code: "invalid_prompt",
		},
	})
}

func TestClassify_Unknown(t *testing.T) {
	runHTTP(t, []httpCase{
		{
			// Sample groq-424-failed-dependency.
			name: "Groq424", status: 424,
			body: `{"error":{"message":"Failed Dependency: the remote MCP server returned an authentication error","type":"invalid_request_error"}}`,
			kind: classify.Unknown,
		},
		{
			// Groq tool_use_failed (pipecat-ai/pipecat#1168; P: 3.9).
			name: "Groq400ToolUseFailed", status: 400,
			body: `{"error":{"message":"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"<function=x>"}}`,
			kind: classify.Unknown, code: "tool_use_failed",
		},
		{name: "Teapot", status: 418, body: `I'm a teapot`, kind: classify.Unknown, reason: "418 I'm a teapot"},
		{name: "Bare404", status: 404, body: ``, kind: classify.Unknown, reason: "404 not found"},
		{name: "Status405HTML", status: 405, body: `<html><body>Method Not Allowed</body></html>`, kind: classify.Unknown},
		{name: "Status200NoError", status: 200, body: `{"id":"x","choices":[{"finish_reason":"stop"}]}`, kind: classify.Unknown},
		{name: "Status302", status: 302, body: `Found`, kind: classify.Unknown},
		{name: "Status0", status: 0, body: `{"error":{}}`, kind: classify.Unknown},
		{name: "Binary", status: 451, body: "\x00\xff\xfe\n\r\u2028garbage", kind: classify.Unknown},
		{name: "StreamUnknownCode", stream: true, body: `{"error":{"message":"something odd"}}`, kind: classify.Unknown},
	})
}

func TestClassify_ShouldRetryFalseStaysTransient(t *testing.T) {
	runHTTP(t, []httpCase{
		{
			// Anthropic recordings carry x-should-retry (P: Anthropic); policy
			// moves on instead of retrying when it is false.
			name: "Anthropic500ShouldRetryFalse", status: 500, header: hdr("X-Should-Retry", "false"),
			body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			kind: classify.Transient, should: -1, reason: "; x-should-retry: false",
		},
		{
			name: "Anthropic429ShouldRetryTrue", status: 429, header: hdr("X-Should-Retry", "true", "Retry-After", "20"),
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"rate limited"}}`,
			kind: classify.Transient, should: 1, retryAfter: 20 * time.Second,
		},
	})
}

func TestClassify_RetryHints(t *testing.T) {
	rate := `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`
	runHTTP(t, []httpCase{
		{name: "RetryAfterSeconds", status: 429, header: hdr("Retry-After", "20"), body: rate, kind: classify.Transient, retryAfter: 20 * time.Second},
		{name: "RetryAfterFloat", status: 503, header: hdr("Retry-After", "1.5"), body: ``, kind: classify.Transient, retryAfter: 1500 * time.Millisecond},
		{
			name: "RetryAfterHTTPDate", status: 503, header: hdr("Retry-After", t0.Add(30*time.Second).Format(http.TimeFormat)),
			body: ``, kind: classify.Transient, retryAfter: 30 * time.Second, until: t0.Add(30 * time.Second),
		},
		{
			name: "RetryAfterHTTPDateFar", status: 503, header: hdr("Retry-After", t0.Add(2*time.Hour).Format(http.TimeFormat)),
			body: ``, kind: classify.Wall, retryAfter: 2 * time.Hour, until: t0.Add(2 * time.Hour),
		},
		{name: "RetryAfterPastDate", status: 503, header: hdr("Retry-After", t0.Add(-time.Hour).Format(http.TimeFormat)), body: ``, kind: classify.Transient},
		{name: "RetryAfterNegativeIgnored", status: 429, header: hdr("Retry-After", "-5"), body: rate, kind: classify.Transient},
		{
			// openai-go reads retry-after-ms first.
			name: "RetryAfterMsPreferred", status: 429, header: hdr("Retry-After-Ms", "1500", "Retry-After", "20"),
			body: rate, kind: classify.Transient, retryAfter: 1500 * time.Millisecond,
		},
		{
			name: "HeaderBeatsMessage", status: 429, header: hdr("Retry-After", "3"),
			body: `{"error":{"message":"Please try again in 9.5s.","code":"rate_limit_exceeded"}}`,
			kind: classify.Transient, retryAfter: 3 * time.Second,
		},
		{
			// sample openai-chat-400-unsupported-parameter header forms.
			name: "ResetRequestsDuration", status: 429,
			header: hdr("X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "120ms"),
			body:   rate, kind: classify.Transient, retryAfter: 120 * time.Millisecond,
		},
		{
			name: "ResetTokensDuration", status: 429,
			header: hdr("X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "7m12.3s"),
			body:   rate, kind: classify.Wall, retryAfter: 7*time.Minute + 12300*time.Millisecond,
		},
		{
			name: "ResetWithoutRemainingOn429", status: 429, header: hdr("X-Ratelimit-Reset-Requests", "1s"),
			body: rate, kind: classify.Transient, retryAfter: time.Second,
		},
		{
			name: "ResetWithoutRemainingOn503Ignored", status: 503, header: hdr("X-Ratelimit-Reset-Requests", "1s"),
			body: ``, kind: classify.Transient,
		},
		{
			name: "ResetNotExhaustedIgnored", status: 429,
			header: hdr("X-Ratelimit-Remaining-Tokens", "12", "X-Ratelimit-Reset-Tokens", "2h1m"),
			body:   rate, kind: classify.Transient,
		},
		{
			// Azure Responses quirk: -1/-1/0 (openai-dotnet#838).
			name: "AzureMinusOne", status: 429,
			header: hdr("X-Ratelimit-Remaining-Tokens", "-1", "X-Ratelimit-Reset-Tokens", "0"),
			body:   rate, kind: classify.Transient,
		},
		{
			// Sample anthropic-429-with-ratelimit-headers, without retry-after: the RFC 3339 reset.
			name: "AnthropicResetRFC3339", status: 429,
			header: hdr("Anthropic-Ratelimit-Input-Tokens-Remaining", "0", "Anthropic-Ratelimit-Input-Tokens-Reset", "2025-08-21T12:41:19Z"),
			body:   `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit"}}`,
			kind:   classify.Transient, retryAfter: 20 * time.Second,
		},
	})
}

func TestClassify_Nil(t *testing.T) {
	if f := classify.Classify(nil, t0); f != (classify.Failure{}) {
		t.Errorf("Classify(nil) = %+v, want the zero Failure", f)
	}
	var pe *llm.ProviderError
	f := classify.Classify(pe, t0)
	checkFailure(t, f)
}

func TestClassify_ReasonFitsAndScrubs(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("A1b2", 12)
	long := strings.Repeat("é long message ", 40)
	e := openai.ParseError(429, hdr("Retry-After", "7"), []byte(`{"error":{"message":"`+long+`\nkey `+key+`\n","code":"rate_limit_exceeded"}}`))
	f := classify.Classify(e, t0)
	checkFailure(t, f)
	if strings.Contains(f.Reason+f.Detail, key) {
		t.Errorf("key leaked: %q / %q", f.Reason, f.Detail)
	}
	if !strings.HasSuffix(f.Reason, "…; retry in 7s") {
		t.Errorf("Reason = %q, want the message cut and the wait kept", f.Reason)
	}
	if !strings.Contains(f.Detail, "[redacted]") || !strings.Contains(f.Detail, "\n") {
		t.Errorf("Detail = %q, want the full message, scrubbed", f.Detail)
	}
}
