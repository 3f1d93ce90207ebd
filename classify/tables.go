package classify

import (
	"regexp"
	"strings"

	"github.com/detourhq/detour/internal/lazyregexp"
)

// This file is detour's provider error knowledge. Each row names its source:
// a case id of testdata/errors/sample.jsonl ("sample <id>"), a part of the
// research notes that came with that sample, PROVIDERS.md ("P: <provider>"
// for its provider notes, "P: §3.n" for item n of its list of ambiguities,
// "P: §1.2" and so on for numbered sections), or the issue, recording or
// document quoted there. "idem" repeats the row above.
//
// Strong rows decide the kind whatever the HTTP status says (a 429 that is
// a quota, a 500 that is a context overflow, a 400 that is a dead key).
// Weak rows only decide when the status does not: an error frame inside a
// 200 stream, a refusal in a 200 answer.

// codeRow maps an error code, type, google.rpc status or detail reason
// (compared case-insensitively) to what it means.
type codeRow struct {
	code string
	kind Kind
	// what is the reason phrase; empty keeps the provider's own message.
	what string
}

// strongCodes decide the kind at any status. Order does not matter: a code
// has one row.
var strongCodes = []codeRow{
	// Policy.
	{"content_policy_violation", Policy, "content policy violation"},             // OpenAI moderation/images (P: §4 step 3)
	{"content_filter", Policy, "blocked by the content filter"},                  // sample azure-200-finish-reason-content-filter; Azure 400 code (openai-dotnet#55)
	{"responsibleaipolicyviolation", Policy, "blocked by the content filter"},    // Azure innererror.code (openai-dotnet#55)
	{"invalid_prompt", Policy, "prompt flagged by the usage policy"},             // OpenAI 400 (pal-mcp-server#178; P: OpenAI, Policy)
	{"bio_policy", Policy, "blocked by the bio policy"},                          // openai-go responses/response.go error.code enum
	{"image_content_policy_violation", Policy, "image content policy violation"}, // idem
	{"misalignment_policy_violation", Policy, "misalignment policy violation"},   // idem (ResponseErrorCode, v3.98.0)
	{"refusal", Policy, "the model refused"},                                     // Anthropic stop_reason (anthropic-sdk-go message.go)
	{"blockreason", Policy, "prompt blocked by safety filter"},                   // wire/openai Type for Gemini promptFeedback.blockReason
	{"safety", Policy, "blocked by safety filter"},                               // sample gemini-200-finish-reason-safety (go-genai types.go)
	{"prohibited_content", Policy, "prohibited content"},                         // go-genai types.go FinishReason/BlockedReason
	{"blocklist", Policy, "blocked by a blocklist"},                              // idem (P: Gemini, Safety)
	{"spii", Policy, "blocked: sensitive personal information"},                  // idem (P: Gemini, Safety)
	{"recitation", Policy, "blocked: recitation"},                                // idem (P: Gemini, Safety)
	{"image_safety", Policy, "image blocked by safety filter"},                   // idem (P: Gemini, Safety)
	{"image_prohibited_content", Policy, "prohibited image content"},             // idem (P: Gemini, Safety)
	{"image_recitation", Policy, "image blocked: recitation"},                    // idem (P: Gemini, Safety)
	{"model_armor", Policy, "blocked by Model Armor"},                            // idem (P: Gemini, Safety)
	{"jailbreak", Policy, "blocked as a jailbreak"},                              // idem (P: Gemini, Safety)

	// Context overflow.
	{"context_length_exceeded", ContextOverflow, "context length exceeded"},       // P: OpenAI, Context
	{"exceed_context_size_error", ContextOverflow, "context size exceeded"},       // sample llamacpp-400-exceed-context-size
	{"request_too_large", ContextOverflow, "request too large"},                   // Anthropic 413 (P: Anthropic; §3.8)
	{"model_context_window_exceeded", ContextOverflow, "context window exceeded"}, // Anthropic stop_reason (SDK enum)

	// Wall: billing and quota.
	{"insufficient_quota", Wall, "quota exhausted (insufficient_quota)"},            // sample openai-429-insufficient-quota
	{"credit_balance_exhausted", Wall, "credit balance exhausted"},                  // Microsoft Dev Proxy docs (P: OpenAI, Quota)
	{"organization_spend_limit_exceeded", Wall, "organization spend limit reached"}, // idem
	{"project_spend_limit_exceeded", Wall, "project spend limit reached"},           // idem
	{"organization_usage_limit_exceeded", Wall, "organization usage limit reached"}, // idem
	{"billing_error", Wall, "billing error"},                                        // sample anthropic-402-billing-error
	{"enforced_spend_limit_reached", Wall, "spend limit reached"},                   // Anthropic details.error_code (P: Anthropic)
	// Wall: the key or the account.
	{"invalid_api_key", Wall, ""},                                          // samples openai-chat-401-invalid-api-key, groq-401-invalid-api-key, together-401-invalid-api-key
	{"wrong_api_key", Wall, ""},                                            // Cerebras 401 (P: Cerebras)
	{"authentication_error", Wall, ""},                                     // sample deepseek-401-auth-fails; Anthropic 401; llama.cpp
	{"permission_error", Wall, ""},                                         // Anthropic 403 (P: Anthropic)
	{"api_key_invalid", Wall, "API key not valid"},                         // Gemini ErrorInfo.reason (P: Gemini)
	{"unauthenticated", Wall, ""},                                          // google.rpc status for 401
	{"permission_denied", Wall, ""},                                        // google.rpc status for 403 (P: Gemini)
	{"accessdeniedexception", Wall, ""},                                    // Bedrock x-amzn-ErrorType (P: §1.1)
	{"unrecognizedclientexception", Wall, ""},                              // idem
	{"unsupported_country_region_territory", Wall, "region not supported"}, // OpenAI 403 (error-codes guide; not in sample)
	{"failed_precondition", Wall, ""},                                      // Gemini location / billing (poenl/gemini-api#4; P: §3.3)
	{"multimodal_not_enabled", Wall, ""},                                   // Cerebras 403 org entitlement (P: §3.6)
	// Wall: this target cannot serve the model (P: §3.5).
	{"model_not_found", Wall, "model not found"},         // sample cerebras-404-model-not-found; OpenAI Responses 400
	{"model_not_available", Wall, "model not available"}, // Together 404 (recordings)
	{"deploymentnotfound", Wall, "deployment not found"}, // Azure 404 (P: Azure)
	{"not_found_error", Wall, ""},                        // Anthropic 404; Cerebras type
	{"not_found", Wall, ""},                              // sample gemini-404-model-not-found (status NOT_FOUND)
	{"invalid_model", Wall, "invalid model"},             // Mistral 400 code 1500 (P: Mistral)
	{"resourcenotfoundexception", Wall, ""},              // Bedrock

	// Unknown: a failure of this attempt that another target may not share.
	{"tool_use_failed", Unknown, "model produced an invalid tool call"}, // Groq 400 (pipecat-ai/pipecat#1168; P: §3.9)
}

// weakCodes decide only when the status does not (a 200 error frame or
// refusal, or a status with no meaning of its own).
var weakCodes = []codeRow{
	{"rate_limit_exceeded", Transient, "rate limited"},                // OpenAI/Groq 429; Responses response.failed (earendil-works/pi#1458)
	{"rate_limit_error", Transient, "rate limited"},                   // Anthropic, DeepSeek (sample deepseek-429-rate-limit-reached)
	{"rate_limited", Transient, "rate limited"},                       // Mistral code 1300 (cline/cline#9085)
	{"slow_down", Transient, "slow down"},                             // sample openai-429-slow-down
	{"too_many_tokens_error", Transient, "rate limited"},              // sample cerebras-429-tpm
	{"token_quota_exceeded", Transient, "rate limited"},               // idem (per-day variants are caught by message first)
	{"queue_exceeded", Transient, "queue full"},                       // Cerebras (P: Cerebras)
	{"capacity_exceeded", Transient, "capacity exceeded"},             // sample groq-498-flex-capacity-exceeded
	{"server_error", Transient, "server error"},                       // sample openai-responses-stream-error-event
	{"vector_store_timeout", Transient, "vector store timeout"},       // Responses response.failed (openai-go responses/response.go ResponseErrorCode)
	{"server_is_overloaded", Transient, "server overloaded"},          // Dev Proxy docs (P: OpenAI)
	{"service_unavailable_error", Transient, "service unavailable"},   // idem
	{"internal_server_error", Transient, "server error"},              // sample mistral-500-service-unavailable
	{"unavailable_error", Transient, "model loading"},                 // llama.cpp 503 (mostlygeek/llama-swap#146)
	{"overloaded_error", Transient, "model overloaded"},               // Anthropic 529, also in streams (P: Anthropic)
	{"api_error", Transient, "server error"},                          // Anthropic 500
	{"timeout_error", Transient, "provider timeout"},                  // Anthropic 504
	{"resource_exhausted", Transient, "rate limited"},                 // google.rpc 429 (sample gemini-429-no-details)
	{"unavailable", Transient, "service unavailable"},                 // google.rpc 503 (sample gemini-503-model-overloaded)
	{"internal", Transient, "server error"},                           // google.rpc 500
	{"deadline_exceeded", Transient, "provider timeout"},              // google.rpc 504
	{"throttlingexception", Transient, "throttled"},                   // Bedrock (amazon-bedrock-client-for-mac#99)
	{"serviceunavailableexception", Transient, "service unavailable"}, // idem (P: Bedrock)
	{"modeltimeoutexception", Transient, "model timeout"},             // idem (P: Bedrock)
	{"internalserverexception", Transient, "server error"},            // idem (P: Bedrock)
	{"modelstreamerrorexception", Transient, "stream error"},          // idem (P: Bedrock)
	{"modelnotreadyexception", Transient, "model not ready"},          // idem (P: Bedrock)

	{"invalid_request_error", Invalid, ""},        // OpenAI, Anthropic (P: §1.1)
	{"invalid_value", Invalid, ""},                // P: OpenAI, Unsupported parameter
	{"unsupported_parameter", Invalid, ""},        // sample openai-chat-400-unsupported-parameter
	{"unsupported_value", Invalid, ""},            // openai-go error codes
	{"invalid_argument", Invalid, ""},             // google.rpc 400
	{"validationexception", Invalid, ""},          // Bedrock
	{"badrequesterror", Invalid, ""},              // vLLM
	{"invalid_request_invalid_args", Invalid, ""}, // sample mistral-400-image-input-not-enabled
	// The Responses API's response.failed codes for an image the request
	// gave that cannot be used (openai-go responses/response.go
	// ResponseErrorCode, v3.98.0): the same image fails everywhere.
	{"invalid_image", Invalid, "invalid image"},
	{"invalid_image_format", Invalid, "invalid image format"},
	{"invalid_base64_image", Invalid, "invalid base64 image"},
	{"invalid_image_url", Invalid, "invalid image URL"},
	{"image_too_large", Invalid, "image too large"},
	{"image_too_small", Invalid, "image too small"},
	{"image_parse_error", Invalid, "image cannot be parsed"},
	{"invalid_image_mode", Invalid, "invalid image mode"},
	{"image_file_too_large", Invalid, "image file too large"},
	{"unsupported_image_media_type", Invalid, "unsupported image media type"},
	{"empty_image_file", Invalid, "empty image file"},
	{"failed_to_download_image", Invalid, "image could not be downloaded"},
	{"image_file_not_found", Invalid, "image file not found"},
}

// msgRow matches a provider's message (lower-cased): every string of all
// must appear, or re must match, or fn must say yes.
type msgRow struct {
	all  []string
	re   func() *regexp.Regexp // compiled on first use
	fn   func(msg string) bool
	kind Kind
	what string
}

func (r msgRow) match(msg string) bool {
	if r.re != nil {
		return r.re().MatchString(msg)
	}
	if r.fn != nil {
		return r.fn(msg)
	}
	for _, s := range r.all {
		if !strings.Contains(msg, s) {
			return false
		}
	}
	return len(r.all) > 0
}

// has is a msgRow on substrings.
func has(kind Kind, what string, all ...string) msgRow {
	return msgRow{all: all, kind: kind, what: what}
}

// strongMessages decide the kind at any status, in this order of kinds:
// policy, context overflow, wall, unknown, invalid.
var strongMessages = []msgRow{
	has(Policy, "prompt flagged by the usage policy", "flagged as potentially violating"),     // OpenAI invalid_prompt (pal-mcp-server#178)
	has(Policy, "blocked by the content filter", "content management policy"),                 // Azure content filter (openai-dotnet#55)
	has(Policy, "rejected by the safety system", "rejected as a result of our safety system"), // OpenAI images (not in sample)
	has(Policy, "output blocked by the content filter", "blocked by content filtering"),       // Anthropic 400 and stream error event (claude-code#37547, #58367)

	has(ContextOverflow, "context length exceeded", "maximum context length"),                                 // samples vllm-400-context-length; DeepSeek (fast-agent#621)
	has(ContextOverflow, "context length exceeded", "context_length_exceeded"),                                // the code quoted in a message (gateways)
	has(ContextOverflow, "context size exceeded", "exceeds the available context size"),                       // sample llamacpp-400-exceed-context-size; continue#9797
	has(ContextOverflow, "context size exceeded", "context size has been exceeded"),                           // llama.cpp 500 (recording; ik_llama.cpp#2420)
	has(ContextOverflow, "prompt is too long", "prompt is too long"),                                          // sample anthropic-400-prompt-too-long; Bedrock (goose#7504)
	has(ContextOverflow, "input is too long", "input is too long"),                                            // sample bedrock-400-input-too-long
	has(ContextOverflow, "input token count exceeds the maximum", "input token count", "exceeds the maximum"), // Gemini 400 (P: Gemini)

	// Request alone larger than the tier's per-minute budget: retrying never helps.
	has(Wall, "request exceeds the tier's tokens per minute (TPM)", "request too large", "per min"), // sample groq-413-request-too-large-for-tpm; aider#1880
	// Daily windows, whatever the code says (P: §3.1, 3.2).
	has(Wall, "tokens per day (TPD) exhausted", "(tpd)"),                                         // Groq (P: Groq)
	has(Wall, "requests per day (RPD) exhausted", "(rpd)"),                                       // samples openai-429-rpd-short-drip, openai-429-rpd-long-wait
	has(Wall, "tokens per day exhausted", "tokens per day"),                                      // sample cerebras-429-tpd-long-retry-after
	has(Wall, "free models per day exhausted", "free-models-per-day"),                            // OpenRouter (P: OpenRouter)
	has(Wall, "daily limit reached", "per day"),                                                  // P: §3.1
	has(Wall, "daily limit reached", "per-day"),                                                  // idem
	has(Wall, "daily limit reached", "daily limit"),                                              // idem
	has(Wall, "daily limit reached", "daily quota"),                                              // idem
	{re: lazyregexp.New(`\blimit: 0\b`), kind: Wall, what: "no quota for this model (limit: 0)"}, // sample gemini-429-limit-zero
	// Billing and spend.
	has(Wall, "credit balance too low", "credit balance is too low"),               // sample anthropic-400-credit-balance-too-low
	has(Wall, "API usage limit reached", "specified api usage limits"),             // sample anthropic-400-user-spend-limit
	has(Wall, "long context needs extra usage", "extra usage is required"),         // Anthropic 429 (claude-code#33514)
	has(Wall, "insufficient balance", "insufficient balance"),                      // DeepSeek 402 (frostime/sy-f-misc#10)
	has(Wall, "insufficient credits", "requires more credits"),                     // sample openrouter-402-insufficient-credits
	has(Wall, "credits or spending limit exhausted", "used all available credits"), // xAI 429/403 (continue#10373, warp#14863)
	has(Wall, "spending limit reached", "spending limit"),                          // xAI (idem)
	has(Wall, "spend limit reached", "spend limit"),                                // Anthropic spend caps (P: Anthropic)
	has(Wall, "credits depleted", "depleted your"),                                 // Hugging Face 402 (recording)
	has(Wall, "usage limit reached", "usage limit reached"),                        // MiniMax 5-hour window (MiniMax-M2.7#36)
	// The key.
	has(Wall, "invalid API key", "incorrect api key"),                 // samples xai-400-incorrect-api-key, openai-chat-401-invalid-api-key
	has(Wall, "invalid API key", "invalid api key"),                   // samples groq-401-invalid-api-key, together-401-invalid-api-key
	has(Wall, "API key not valid", "api key not valid"),               // Gemini 400 API_KEY_INVALID (recording)
	has(Wall, "authentication failed", "authentication fails"),        // sample deepseek-401-auth-fails
	has(Wall, "invalid subscription key", "invalid subscription key"), // Azure 401 (BotSharp#386)
	// The model or deployment (P: §3.5).
	has(Wall, "model does not exist", "model not exist"),                             // DeepSeek 400 (recording)
	has(Wall, "model not found", "is not found for api version"),                     // sample gemini-404-model-not-found
	has(Wall, "malformed model name", "unexpected model name format"),                // sample gemini-400-bad-model-name
	has(Wall, "invalid model ID", "invalid model id"),                                // OpenAI chat 400 (P: OpenAI)
	has(Wall, "model not found", "does not exist or you do not have access"),         // sample cerebras-404-model-not-found
	has(Wall, "deployment not found", "deployment for this resource does not exist"), // Azure 404 (P: Azure)
	has(Wall, "on-demand throughput not supported", "on-demand throughput isn"),      // Bedrock 400 (claude-code#1466)
	has(Wall, "location not supported", "user location is not supported"),            // Gemini 400 (poenl/gemini-api#4)
	has(Wall, "no billing account", "without a billing account"),                     // Gemini 400 (u14app/neo-chat#7)

	has(Unknown, "fetching a multimodal file timed out", "download multimodal file timed out"), // DashScope 400 (P: §3.9)

	has(Invalid, "image input not supported", "image input is not supported"), // llama.cpp 500 without mmproj (P: Local servers)
	has(Invalid, "input could not be processed", "failed to process inputs"),  // Ollama 500 image: unknown format (recording)
}

// weakMessages decide only when neither the status nor a code does.
var weakMessages = []msgRow{
	has(Transient, "model overloaded", "overloaded"),             // Anthropic, Gemini, OpenAI 503
	has(Transient, "capacity exceeded", "capacity"),              // Mistral (continue#6185), Groq flex
	has(Transient, "rate limited", "rate-limited"),               // OpenRouter upstream (P: OpenRouter)
	has(Transient, "rate limited", "rate limit"),                 // sample mistral-429-requests-rate-limit
	has(Transient, "rate limited", "too many requests"),          // Bedrock (litellm#589)
	has(Transient, "high traffic", "high traffic"),               // Cerebras queue_exceeded
	has(Transient, "temporarily unavailable", "try again later"), // sample groq-498-flex-capacity-exceeded
	has(Transient, "service unavailable", "service unavailable"), // sample mistral-500-service-unavailable
}

// lookupCode returns the first row of rows whose code is one of codes.
func lookupCode(rows []codeRow, codes []string) (codeRow, bool) {
	for _, c := range codes {
		c = strings.ToLower(strings.TrimSpace(c))
		if c == "" {
			continue
		}
		for _, r := range rows {
			if r.code == c {
				return r, true
			}
		}
	}
	return codeRow{}, false
}

// lookupMessage returns the first row of rows matching msg (lower case).
func lookupMessage(rows []msgRow, msg string) (msgRow, bool) {
	if msg == "" {
		return msgRow{}, false
	}
	for _, r := range rows {
		if r.match(msg) {
			return r, true
		}
	}
	return msgRow{}, false
}

// transientStatus are the statuses that mean "try again" by themselves:
// 408, 409 and 5xx as the official SDKs retry them (P: §1.3), 425 Too Early,
// 429, Groq's 498 flex capacity (sample groq-498-flex-capacity-exceeded),
// Anthropic's 529 (P: Anthropic) and Cloudflare's 520-524 (all in 5xx).
func transientStatus(s int) bool {
	switch s {
	case 408, 409, 425, 429, 498:
		return true
	}
	return s >= 500 && s <= 599
}
