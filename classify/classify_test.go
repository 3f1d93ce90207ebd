package classify_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/wire/openai"
)

// hdr builds a header from name/value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// httpCase is one provider response and what Classify must read in it.
type httpCase struct {
	name   string
	status int
	header http.Header
	body   string
	stream bool // body is the data of an error frame in a 200 stream

	kind       classify.Kind
	code       string        // "" skips the check
	retryAfter time.Duration // checked always
	until      time.Time     // zero: now+retryAfter when retryAfter > 0, else zero
	reason     string        // substring of Reason; "" skips the check
	should     int
}

func runHTTP(t *testing.T, tests []httpCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.stream {
				e, ok := openai.ParseStreamError([]byte(tt.body))
				if !ok {
					t.Fatalf("ParseStreamError found no error in %q", tt.body)
				}
				err = e
			} else {
				err = openai.ParseError(tt.status, tt.header, []byte(tt.body))
			}
			f := classify.Classify(err, t0)
			checkFailure(t, f)
			if f.Kind != tt.kind {
				t.Errorf("Kind = %s, want %s (reason %q)", f.Kind, tt.kind, f.Reason)
			}
			wantStatus := classify.HTTPStatus(tt.status)
			if tt.stream {
				wantStatus = classify.StatusStream
			}
			if f.Status != wantStatus {
				t.Errorf("Status = %q, want %q", f.Status, wantStatus)
			}
			if tt.code != "" && f.Code != tt.code {
				t.Errorf("Code = %q, want %q", f.Code, tt.code)
			}
			if f.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", f.RetryAfter, tt.retryAfter)
			}
			until := tt.until
			if until.IsZero() && tt.retryAfter > 0 {
				until = t0.Add(tt.retryAfter)
			}
			if !f.Until.Equal(until) {
				t.Errorf("Until = %v, want %v", f.Until, until)
			}
			if tt.reason != "" && !strings.Contains(f.Reason, tt.reason) {
				t.Errorf("Reason = %q, want it to contain %q", f.Reason, tt.reason)
			}
			if f.ShouldRetry != tt.should {
				t.Errorf("ShouldRetry = %d, want %d", f.ShouldRetry, tt.should)
			}
		})
	}
}

func TestClassify_Transient(t *testing.T) {
	runHTTP(t, []httpCase{
		{
			// OpenAI per-minute limit (continue#10502).
			name: "OpenAI429RateLimitExceeded", status: 429,
			body: `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 28039, Requested 3906. Please try again in 3.89s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			kind: classify.Transient, code: "rate_limit_exceeded", retryAfter: 3890 * time.Millisecond, reason: "; retry in 3.89s",
		},
		{
			// Groq per-minute limit (P: Groq, message template).
			name: "Groq429TPM", status: 429,
			body: `{"error":{"message":"Rate limit reached for model ` + "`llama-3.3-70b-versatile`" + ` in organization ` + "`org_01`" + ` service tier ` + "`on_demand`" + ` on tokens per minute (TPM): Limit 6000, Used 5379, Requested 855. Please try again in 2.34s.","type":"tokens","code":"rate_limit_exceeded"}}`,
			kind: classify.Transient, retryAfter: 2340 * time.Millisecond,
		},
		{
			// OpenAI 500 (P: OpenAI, Server).
			name: "OpenAI500", status: 500,
			body: `{"error":{"message":"The server had an error processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			kind: classify.Transient, code: "server_error", reason: "500 The server had an error",
		},
		{
			// Cloudflare 502 HTML page.
			name: "HTML502", status: 502, header: hdr("Content-Type", "text/html"),
			body: "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n",
			kind: classify.Transient, reason: "502 502 Bad Gateway",
		},
		{
			// OpenAI 503 overloaded (P: OpenAI, Server).
			name: "OpenAI503", status: 503,
			body: `{"error":{"message":"That model is currently overloaded with other requests. You can retry your request.","type":"server_error","param":null,"code":null}}`,
			kind: classify.Transient,
		},
		{
			// Anthropic 504 timeout_error (docs).
			name: "Anthropic504", status: 504,
			body: `{"type":"error","error":{"type":"timeout_error","message":"Request timed out"},"request_id":"req_1"}`,
			kind: classify.Transient, code: "timeout_error",
		},
		{
			// Anthropic 529 (claude-code#5184).
			name: "Anthropic529", status: 529,
			body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			kind: classify.Transient, code: "overloaded_error", reason: "529 Overloaded",
		},
		{name: "Cloudflare524", status: 524, body: "error code: 524", kind: classify.Transient},
		{
			// Mistral capacity on 503 with a misleading type (continue#6185, litellm#25078).
			name: "Mistral503Capacity", status: 503,
			body: `{"object":"error","message":"Service tier capacity exceeded for this model.","type":"invalid_request_error","param":null,"code":null}`,
			kind: classify.Transient,
		},
		{
			// llama.cpp 503 while loading (mostlygeek/llama-swap#146).
			name: "LlamaCppLoading", status: 503,
			body: `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`,
			kind: classify.Transient, code: "unavailable_error",
		},
		{
			// OpenRouter upstream rate limit (P: OpenRouter).
			name: "OpenRouterUpstream429", status: 429,
			body: `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"meta-llama/llama-3.3-70b-instruct:free is temporarily rate-limited upstream. Please retry shortly, or add your own key to accumulate your rate limits: https://openrouter.ai/settings/integrations","provider_name":"Chutes"}}}`,
			kind: classify.Transient, reason: "(Chutes)",
		},
		{
			// Bedrock throttling behind a gateway (amazon-bedrock-client-for-mac#99).
			name: "BedrockThrottling", status: 429, header: hdr("X-Amzn-Errortype", "ThrottlingException"),
			body: `{"message":"Too many tokens, please wait before trying again."}`,
			kind: classify.Transient, code: "ThrottlingException",
		},
		{
			// Gemini per-minute quota with RetryInfo (RooCodeInc/Roo-Code#3883).
			name: "GeminiPerMinuteRetryInfo", status: 429,
			body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`,
			kind: classify.Transient, code: "RESOURCE_EXHAUSTED", retryAfter: 37 * time.Second,
		},
		{
			// Sample openai-responses-stream-error-event.
			name: "StreamServerError", stream: true,
			body: `{"type":"error","code":"server_error","message":"An error occurred while processing your request.","param":null,"sequence_number":7}`,
			kind: classify.Transient, code: "server_error", reason: "stream error: server error",
		},
		{
			// Anthropic overloaded frame in a 200 stream (SDK fixtures).
			name: "StreamOverloaded", stream: true,
			body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			kind: classify.Transient, code: "overloaded_error",
		},
		{
			// OpenRouter mid-stream error: the code is the HTTP status (recording).
			name: "StreamNumericStatus", stream: true,
			body: `{"id":"gen-1","choices":[],"error":{"code":502,"message":"Provider returned error"}}`,
			kind: classify.Transient,
		},
		{
			// Responses response.failed with a rate limit (earendil-works/pi#1458).
			name: "StreamResponseFailedRateLimit", stream: true,
			body: `{"type":"response.failed","response":{"status":"failed","error":{"code":"rate_limit_exceeded","message":"Rate limit reached for gpt-4.1. Please try again in 1.2s."}}}`,
			kind: classify.Transient, retryAfter: 1200 * time.Millisecond,
		},
		{name: "Status408", status: 408, body: `{"error":{"message":"Request Timeout","code":408}}`, kind: classify.Transient},
		{name: "Status409", status: 409, body: `{"type":"error","error":{"type":"conflict_error","message":"Conflict"}}`, kind: classify.Transient},
	})
}

func TestClassify_Wall(t *testing.T) {
	runHTTP(t, []httpCase{
		{
			// Sample openai-429-insufficient-quota.
			name: "OpenAI429InsufficientQuota", status: 429,
			body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			kind: classify.Wall, code: "insufficient_quota", reason: "429 quota exhausted (insufficient_quota)",
		},
		{
			// Microsoft Dev Proxy docs: newer billing codes under the same type.
			name: "OpenAI429SpendLimit", status: 429,
			body: `{"error":{"message":"You have exceeded your organization's spend limit.","type":"insufficient_quota","param":null,"code":"organization_spend_limit_exceeded"}}`,
			kind: classify.Wall, code: "organization_spend_limit_exceeded",
		},
		{
			// Groq TPD (P: Groq; huggingface/smolagents#1119 template).
			name: "Groq429TPD", status: 429,
			body: `{"error":{"message":"Rate limit reached for model ` + "`llama-3.3-70b-versatile`" + ` in organization ` + "`org_01`" + ` service tier ` + "`on_demand`" + ` on tokens per day (TPD): Limit 100000, Used 99876, Requested 1134. Please try again in 7m12.3s. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing","type":"tokens","code":"rate_limit_exceeded"}}`,
			kind: classify.Wall, code: "rate_limit_exceeded", retryAfter: 7*time.Minute + 12300*time.Millisecond,
			reason: "429 tokens per day (TPD) exhausted; resets in 7m12s",
		},
		{
			// OpenRouter 402 carrying the upstream body in metadata.raw
			// (shape per openrouter.ai errors docs; upstream body illustrative).
			name: "OpenRouter402Raw", status: 402,
			body: `{"error":{"message":"Provider returned error","code":402,"metadata":{"raw":"{\"error\":{\"message\":\"Insufficient credits on the upstream account\",\"type\":\"billing_error\"}}","provider_name":"Anthropic"}}}`,
			kind: classify.Wall, code: "billing_error", reason: "402 billing error",
		},
		{
			// Sample openrouter-402-insufficient-credits.
			name: "OpenRouter402Credits", status: 402,
			body: `{"error":{"message":"This request requires more credits, or fewer max_tokens. You requested up to 32000 tokens, but can only afford 27342.","code":402,"metadata":{"provider_name":null}}}`,
			kind: classify.Wall, reason: "402 insufficient credits",
		},
		{
			// DeepSeek 402 (frostime/sy-f-misc#10), sent as octet-stream.
			name: "DeepSeek402", status: 402, header: hdr("Content-Type", "application/octet-stream"),
			body: `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`,
			kind: classify.Wall, reason: "402 insufficient balance",
		},
		{
			// Sample openai-chat-401-invalid-api-key.
			name: "OpenAI401", status: 401,
			body: `{"error":{"message":"Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz0123. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			kind: classify.Wall, code: "invalid_api_key", reason: "401 Incorrect API key provided: [redacted].",
		},
		{name: "Mistral401Detail", status: 401, body: `{"detail":"Unauthorized"}`, kind: classify.Wall, reason: "401 Unauthorized"}, // sample mistral-401-unauthorized
		{
			// Anthropic 403 permission_error (docs).
			name: "Anthropic403", status: 403,
			body: `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`,
			kind: classify.Wall, code: "permission_error",
		},
		{
			// xAI credits exhausted as 403 (warpdotdev/warp#14863).
			name: "XAI403Credits", status: 403,
			body: `{"code":"The caller does not have permission to execute the specified operation","error":"Your team abc has either used all available credits or reached its monthly spending limit. To continue making API requests, please purchase more credits or raise your spending limit."}`,
			kind: classify.Wall,
		},
		{
			// Cerebras 403 entitlement (P: Cerebras).
			name: "Cerebras403Multimodal", status: 403,
			body: `{"message":"Multimodal is not enabled for this organization.","type":"permission_denied","param":"","code":"multimodal_not_enabled"}`,
			kind: classify.Wall, code: "multimodal_not_enabled",
		},
		{
			// Gemini bad key is a 400 (recording; P: 3.3).
			name: "Gemini400APIKeyInvalid", status: 400,
			body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`,
			kind: classify.Wall, code: "INVALID_ARGUMENT",
		},
		{
			// Gemini region (poenl/gemini-api#4).
			name: "Gemini400Location", status: 400,
			body: `{"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION"}}`,
			kind: classify.Wall,
		},
		{
			// Anthropic spend cap 429 with no retry-after (docs example).
			name: "Anthropic429SpendCap", status: 429,
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your monthly spend limit.","details":{"error_code":"enforced_spend_limit_reached"}}}`,
			kind: classify.Wall, code: "rate_limit_error",
		},
		{
			// Anthropic user spend limit with a date (sample anthropic-400-user-spend-limit).
			name: "Anthropic400SpendLimitDate", status: 400,
			body:       `{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC."}}`,
			kind:       classify.Wall,
			retryAfter: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC).Sub(t0),
			until:      time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC),
			reason:     "; resets 2026-04-01 00:00 UTC",
		},
		{
			// OpenRouter free tier per day, reset in metadata.headers (Gitlawb/openclaude#936).
			name: "OpenRouterFreeModelsPerDay", status: 429,
			body: `{"error":{"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day","code":429,"metadata":{"headers":{"X-RateLimit-Limit":"50","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"1755820800000"}}}}`,
			kind: classify.Wall, retryAfter: time.UnixMilli(1755820800000).Sub(t0), reason: "429 free models per day exhausted",
		},
		{
			// Sample cerebras-404-model-not-found.
			name: "Cerebras404Model", status: 404,
			body: `{"message":"Model bad model does not exist or you do not have access to it.","type":"not_found_error","param":"model","code":"model_not_found"}`,
			kind: classify.Wall, code: "model_not_found",
		},
		{
			// Ollama native 404 (recording).
			name: "Ollama404", status: 404, body: `{"error":"model 'llama9' not found"}`,
			kind: classify.Wall,
		},
		{
			// Azure 404 DeploymentNotFound (P: Azure).
			name: "Azure404Deployment", status: 404,
			body: `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}`,
			kind: classify.Wall, code: "DeploymentNotFound",
		},
		{
			// Groq 413 request too large for the TPM (sample groq-413-request-too-large-for-tpm).
			name: "Groq413TPM", status: 413,
			body: `{"error":{"message":"Request too large for model ` + "`llama-3.3-70b-versatile`" + ` in organization ` + "`org_01`" + ` service tier ` + "`on_demand`" + ` on tokens per minute (TPM): Limit 6000, Requested 14810, please reduce your message size and try again.","type":"tokens","code":"rate_limit_exceeded"}}`,
			kind: classify.Wall,
		},
		{
			// A far Retry-After turns a rate limit into a wall (sample azure-429-retry-after-86400).
			name: "RetryAfterFar", status: 429, header: hdr("Retry-After", "3600"),
			body: `{"error":{"code":"429","message":"Requests have exceeded the token rate limit."}}`,
			kind: classify.Wall, retryAfter: time.Hour, reason: "; resets in 1h",
		},
		{
			// A Retry-After too large for any wait is a far reset: a wall
			// that parks, not a value to ignore and retry after a backoff.
			name: "RetryAfterBeyondAnyWait", status: 429, header: hdr("Retry-After", "99999999999999999999999"),
			body: `{"error":{"code":"429","message":"Requests have exceeded the token rate limit."}}`,
			kind: classify.Wall, retryAfter: 100 * 365 * 24 * time.Hour,
		},
		{
			// OpenAI: remaining 0 with a far reset (P: 1.2 header forms).
			name: "RemainingZeroFarReset", status: 429,
			header: hdr("X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "6m0s",
				"X-Ratelimit-Remaining-Tokens", "1000", "X-Ratelimit-Reset-Tokens", "20ms"),
			body: `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			kind: classify.Wall, retryAfter: 6 * time.Minute,
		},
		{
			// Cerebras daily request bucket empty, float seconds (P: 1.2).
			name: "CerebrasRequestsDayEmpty", status: 429,
			header: hdr("X-Ratelimit-Remaining-Requests-Day", "0", "X-Ratelimit-Reset-Requests-Day", "33011.382867097855"),
			body:   `{"message":"Requests per day limit exceeded - too many requests processed.","type":"too_many_requests_error","param":"quota","code":"request_quota_exceeded"}`,
			kind:   classify.Wall, retryAfter: 33011382867098 * time.Nanosecond,
		},
		{
			// A short Retry-After does not hide a far exhausted bucket: Until is the bucket's reset.
			name: "ShortRetryAfterFarBucket", status: 429,
			header: hdr("Retry-After", "2", "Anthropic-Ratelimit-Tokens-Remaining", "0", "Anthropic-Ratelimit-Tokens-Reset", "2025-08-21T14:40:59Z"),
			body:   `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			kind:   classify.Wall, retryAfter: 2 * time.Second, until: t0.Add(2 * time.Hour),
		},
		{
			// x-should-retry: true never overrides a wall in the body (P: §4).
			name: "ShouldRetryTrueStillWall", status: 429, header: hdr("X-Should-Retry", "true"),
			body: `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`,
			kind: classify.Wall, should: 1,
		},
	})
}
