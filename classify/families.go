package classify

import (
	"strconv"

	"github.com/detourhq/detour/internal/lazyregexp"
)

// This file reads failures by family (issue 36): the same cause worded
// differently by every provider, proxy and local server. A family is a
// table of codes and a table of messages, and it says how far its failures
// reach (scope), so a new provider's wording of a known cause is read
// right without a row of its own.
//
// Every row names its source, as in tables.go: an official document, an
// SDK's or a server's own source, a case of the corpus's "rules" split
// (testdata/errors/corpus-*.jsonl, cited "rules <id>"), or issue 36, whose
// list of families some generic rows transcribe. No row was written from
// the corpus's "heldout" split (public issue threads): that split measures
// these tables (classify/corpus_test.go).
//
// Families are read after the strong rows of tables.go and before the
// status: codes first, then messages; the status is the last resort.

// family is one cause and its wordings.
type family struct {
	name  string
	codes []codeRow
	msgs  []msgRow
	// scope is what every failure of the family reaches; empty leaves it
	// to providerScope.
	scope Scope
}

// re is a msgRow on a regular expression (lower-case input).
func re(kind Kind, what, pattern string) msgRow {
	return msgRow{re: lazyregexp.New(pattern), kind: kind, what: what}
}

// families are read in this order; the first match of the highest kind wins
// (kindRank), as for the strong rows.
var families = []family{
	{name: "context window", scope: ScopeTarget, msgs: contextWindow},
	{name: "retired or unknown model", scope: ScopeTarget, codes: retiredModelCodes, msgs: retiredModels},
	{name: "disabled account", scope: ScopeAccount, codes: disabledAccountCodes, msgs: disabledAccounts},
	{name: "no credits", scope: ScopeAccount, msgs: noCredits},
	{name: "unsupported operation", scope: ScopeTarget, codes: unsupportedOpCodes, msgs: unsupportedOps},
	{name: "model cannot load", scope: ScopeTarget, msgs: cannotLoad},
	{name: "moderation", scope: ScopeAttempt, codes: moderationCodes, msgs: moderation},
	{name: "model output unreadable", scope: ScopeTarget, msgs: outputUnreadable},
	{name: "retry later", scope: ScopeTarget, msgs: retryLater},
}

// contextWindow: the request does not fit the model's window (prompt, or
// prompt plus the output budget). A longer-context target may take it.
var contextWindow = []msgRow{
	// "input length and `max_tokens` exceed context limit", "exceeds the
	// available context size", "exceeds the model's context length".
	re(ContextOverflow, "context window exceeded", `\bexceeds?\b[^.]{0,20}\bcontext (?:limit|window|size|length)\b`),                                    // issue 36 (input plus max_tokens exceeds); llama.cpp server "exceeds the available context size" (sample llamacpp-400-exceed-context-size)
	re(ContextOverflow, "prompt longer than the model's length", `\bis longer than the (?:maximum model length|model's (?:maximum )?context length)\b`), // vLLM vllm/v1/engine/processor.py "The decoder prompt (length N) is longer than the maximum model length of M"; SGLang tokenizer_manager "The input (N tokens) is longer than the model's context length (M tokens)"
	re(ContextOverflow, "prompt longer than the model's length", `\bmaximum (?:prompt|input) length\b`),                                                 // issue 36 (prompt length); OpenAI "maximum context length" kin
	has(ContextOverflow, "context length exceeded", "reduce the length of the messages"),                                                                // OpenAI context_length_exceeded message "Please reduce the length of the messages or completion" (P: OpenAI, Context)
	has(ContextOverflow, "inputs plus max_new_tokens over the limit", "`inputs` tokens + `max_new_tokens` must be <="),                                  // TGI router/src/validation.rs MaxTotalTokens
	has(ContextOverflow, "inputs over the limit", "`inputs` must have less than"),                                                                       // TGI router/src/validation.rs InputLength
	re(ContextOverflow, "no room left for output", `\bmax_tokens must be at least 1, got -\d`),                                                          // vLLM vllm/sampling_params.py: the budget it derives (window - prompt) went negative
	re(ContextOverflow, "request too long", `\b(?:prompt|input|request|context|conversation|messages?) (?:is|are) too long\b`),                          // issue 36 ("too long"); Anthropic "prompt is too long" (P: Anthropic)
}

// retiredModelCodes: the model is gone or unknown here: a wall for this
// target (P: §3.5), whatever the status.
var retiredModelCodes = []codeRow{
	{"model_decommissioned", Wall, "model decommissioned"}, // Groq docs/deprecations (code named in scope.go since the sample)
}

var retiredModels = []msgRow{
	// A model name may hold dots ("llama-3.1-70b"): quoted names are skipped whole.
	re(Wall, "model retired", "\\bmodel\\b\\s+(?:`[^`]*`|'[^']*'|\"[^\"]*\"|\\S+)\\s+(?:has been|is|was)\\s+(?:decommissioned|retired|deprecated|discontinued|removed)\\b"), // Groq docs/deprecations; issue 36 (retired/decommissioned)
	has(Wall, "no deployment serves this model", "no healthy deployments for this model"),                                                                                   // LiteLLM docs (chatgpt provider): a model name the proxy does not serve
	has(Wall, "invalid model identifier", "model identifier is invalid"),                                                                                                    // rules bedrock-repost-400-model-identifier-invalid
	re(Wall, "model not accessible", `\bunable to access (?:[a-z-]+ )?model\b`),                                                                                             // rules together-404-unable-to-access-model
}

// disabledAccountCodes: the key's organisation or account is shut, or not
// allowed the operation at all: every target on the key is (issue 36).
var disabledAccountCodes = []codeRow{
	{"account_deactivated", Wall, "account deactivated"},         // OpenAI error code (openai-go: errors carry code)
	{"organization_restricted", Wall, "organization restricted"}, // Groq error code (issue 36: disabled organisations)
	{"no_organization", Wall, "no organization"},                 // OpenAI 401 "You must be a member of an organization to use the API" (docs/guides/error-codes)
	{"consumer_suspended", Wall, "consumer suspended"},           // google.rpc ErrorInfo reason CONSUMER_SUSPENDED (Google API error model)
	{"access_terminated_error", Wall, "access terminated"},       // issue 36 (suspended accounts)
	{"arrearage", Wall, "account in arrears"},                    // rules alibaba-doc-400-arrearage
	{"1113", Wall, "balance exhausted"},                          // Zhipu error code 1113 (docs.bigmodel.cn API error codes: 余额不足)
}

var disabledAccounts = []msgRow{
	re(Wall, "account or organization disabled", `\b(?:organi[sz]ation|account|project|api key|team)\b[^.]{0,40}\b(?:disabled|deactivated|suspended|restricted|terminated|banned)\b`), // issue 36 (disabled/suspended organisations or accounts)
	re(Wall, "account or organization disabled", `\b(?:disabled|deactivated|suspended|banned) (?:organi[sz]ation|account)\b`),                                                         // idem
	has(Wall, "access terminated", "access terminated"),                                       // idem
	has(Wall, "account not in good standing", "good standing"),                                // rules alibaba-doc-400-arrearage
	re(Wall, "account not allowed this operation", `\baccount is not authorized to invoke\b`), // rules bedrock-repost-400-not-authorized-to-invoke
	has(Wall, "balance exhausted", "余额不足"),                                                    // Zhipu 1113 (docs.bigmodel.cn), DashScope Arrearage (help.aliyun.com error codes)
}

// noCredits: the account's prepaid money is spent; every target on the
// key is dry until someone pays (a wall, not a retry).
var noCredits = []msgRow{
	re(Wall, "no credits left", `\binsufficient (?:credits?|balance|funds)\b`), // OpenRouter docs api-reference/errors: 402 "Your account or API key has insufficient credits. Add more credits and retry the request."
}

// unsupportedOpCodes: this model or server does not do what was asked
// (tools, streaming, this endpoint): a wall for this target, another may.
var unsupportedOpCodes = []codeRow{
	{"operationnotsupported", Wall, "operation not supported by this model"}, // Azure OpenAI OperationNotSupported (learn.microsoft.com models/operations table)
}

var unsupportedOps = []msgRow{
	re(Wall, "operation not supported by this model", `\bdoes not support (?:tools|tool use|tool calling|function calling|the [^ ]+ (?:api|endpoint)|this (?:operation|endpoint))\b`), // Ollama server: errCapabilities "does not support" + errCapabilityTools "tools"; issue 36 (unsupported operations)
	has(Wall, "operation not supported by this model", "operation does not work with the specified model"),                                                                            // Azure OpenAI OperationNotSupported message (learn.microsoft.com)
	re(Wall, "not served on this endpoint", `\bnot supported in the v1/`),                                                                                                             // OpenAI chat vs completions endpoints (issue 36: unsupported operations)
	has(Wall, "no provider supports the request's features", "no endpoints found that support"),                                                                                       // OpenRouter provider routing (docs: require_parameters)
	re(Wall, "server not started with the needed flag", `\b(?:tools param|tool choice) requires --`),                                                                                  // llama.cpp examples/server/utils.hpp "tools param requires --jinja flag"; vLLM serving_chat (rules vllm-src-400-auto-tool-choice)
	has(Wall, "server does not take tools", "unsupported param: tool"),                                                                                                                // llama.cpp examples/server/utils.hpp "Unsupported param: tool_choice"
	re(Wall, "organization not verified for this model", `\bmust be verified to (?:stream|use|access)\b`),                                                                             // OpenAI organization verification (help.openai.com "API Organization Verification")
	re(Wall, "not served with this server's speculative decoding", `\bnot (?:currently )?supported with speculative decoding\b`),                                                      // an MLX server's engine/generation.py: ValueError "Structured response_format is not supported with speculative decoding." (the server's set-up, not the request: another target may serve it)
}

// cannotLoad: a local server that cannot load the model (memory, a crashed
// runner, nothing loaded): the same request will fail the same way there.
var cannotLoad = []msgRow{
	has(Wall, "model does not fit in memory", "requires more system memory"),                            // Ollama llm/server.go "model requires more system memory (%s) than is available (%s)"
	has(Wall, "model runner crashed", "llama runner process has terminated"),                            // Ollama llm/server.go
	has(Wall, "out of memory", "out of memory"),                                                         // issue 36 (a local server out of memory: target wall)
	re(Wall, "model failed to load", `\b(?:failed to load|error loading|cannot load) (?:the )?model\b`), // issue 36 (cannot load a model); llama.cpp "error loading model"
	has(Wall, "no model loaded", "no models loaded"),                                                    // LM Studio server, `lms load` (lmstudio.ai/docs/cli/load)
}

// moderationCodes: a refusal on content, whatever the provider calls it.
var moderationCodes = []codeRow{
	{"data_inspection_failed", Policy, "flagged by content inspection"}, // rules alibaba-doc-400-data-inspection-failed
	{"datainspectionfailed", Policy, "flagged by content inspection"},   // DashScope native API code (help.aliyun.com error codes)
	{"1301", Policy, "flagged as unsafe content"},                       // Zhipu error code 1301 (docs.bigmodel.cn API error codes)
}

var moderation = []msgRow{
	re(Policy, "content flagged", `\b(?:inappropriate|unsafe|sensitive|harmful|prohibited|illegal)\b[^.]{0,30}\bcontent\b|\bcontent\b[^.]{0,20}\b(?:risk|flagged|violat\w*)\b`), // rules alibaba-doc-400-data-inspection-failed "Input data may contain inappropriate content"; issue 36 (moderation under any label)
	re(Policy, "content flagged", `\b(?:considered|rated|flagged as) (?:high[- ])?risk`),                                                                                        // issue 36 (moderation under any label)
	re(Policy, "content flagged", `\bsensitive words?\b`),                                                                                                                       // idem
	re(Policy, "content flagged", `不安全|敏感内容|敏感词|违规内容`),                                                                                                                          // Zhipu 1301 message (docs.bigmodel.cn)
}

// outputUnreadable: the server could not parse what the model produced
// (a malformed tool call): not the request's fault, not the server's
// health either. Another try or target may do better: one hop.
var outputUnreadable = []msgRow{
	has(Unknown, "model produced an invalid tool call", "error parsing tool call"),   // Ollama tool-call parser (issue 36: the server failing to parse the model's own output)
	has(Unknown, "model produced an invalid tool call", "failed to call a function"), // Groq tool_use_failed message (P: §3.9)
	{fn: tpmOverLimit, kind: Wall, what: "request larger than the per-minute limit"}, // sample groq-413-request-too-large-for-tpm: a request alone over the tier's TPM
}

// retryLater: a 4xx that asks to be sent again later.
var retryLater = []msgRow{
	has(Transient, "service quota exceeded; resubmit later", "resubmit your request later"), // rules bedrock-doc-400-service-quota-exceeded
}

// tpmLimits reads "Limit 7000, Used 0, Requested ~12903" (Groq, OpenAI).
var tpmLimits = lazyregexp.New(`\blimit (\d+), used (\d+), requested ~?(\d+)`)

// tpmOverLimit reports a per-minute limit smaller than the request alone:
// waiting for the minute to pass never helps.
func tpmOverLimit(msg string) bool {
	m := tpmLimits().FindStringSubmatch(msg)
	if m == nil {
		return false
	}
	limit, err1 := strconv.Atoi(m[1])
	req, err2 := strconv.Atoi(m[3])
	return err1 == nil && err2 == nil && req > limit
}

// readFamilies is the best verdict the families give.
func readFamilies(codes []string, msg string) verdict {
	var v verdict
	for _, f := range families {
		for _, c := range codes {
			if r, ok := lookupCode(f.codes, []string{c}); ok {
				v = better(v, verdict{kind: r.kind, what: r.what, ok: true, scope: f.scope})
			}
		}
		if r, ok := lookupMessage(f.msgs, msg); ok {
			v = better(v, verdict{kind: r.kind, what: r.what, ok: true, scope: f.scope})
		}
	}
	return v
}
