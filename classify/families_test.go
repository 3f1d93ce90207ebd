package classify_test

import (
	"strings"
	"testing"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
)

// TestFamilies reads one wording of each family from the sources its rows
// cite, and messages that look alike but belong elsewhere.
func TestFamilies(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		code   string
		msg    string
		kind   classify.Kind
		scope  classify.Scope
	}{
		// Context window.
		{"tgi inputs plus max_new_tokens", 422, "", "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 512 `max_new_tokens`", classify.ContextOverflow, classify.ScopeTarget},
		{"vllm decoder prompt", 400, "", "The decoder prompt (length 9000) is longer than the maximum model length of 8192.", classify.ContextOverflow, classify.ScopeTarget},
		{"a context error in a 500", 500, "", "The decoder prompt (length 9000) is longer than the maximum model length of 8192.", classify.ContextOverflow, classify.ScopeTarget},
		{"vllm negative budget", 400, "", "max_tokens must be at least 1, got -12.", classify.ContextOverflow, classify.ScopeTarget},
		{"input plus max_tokens", 400, "invalid_request_error", "input length and `max_tokens` exceed context limit: 190000 + 32000 > 200000", classify.ContextOverflow, classify.ScopeTarget},
		// Retired or unknown models.
		{"groq decommissioned code", 400, "model_decommissioned", "The model `x` is gone.", classify.Wall, classify.ScopeTarget},
		{"dotted model name retired", 400, "", "The model `llama-3.1-8b` has been decommissioned and is no longer supported.", classify.Wall, classify.ScopeTarget},
		// Disabled accounts.
		{"organization disabled", 400, "invalid_request_error", "This organization has been disabled.", classify.Wall, classify.ScopeAccount},
		{"account deactivated code", 401, "account_deactivated", "Your account is not active.", classify.Wall, classify.ScopeAccount},
		// Unsupported operations.
		{"ollama tools", 400, "", "registry.ollama.ai/library/gemma:2b does not support tools", classify.Wall, classify.ScopeTarget},
		{"llama.cpp jinja in a 500", 500, "", "tools param requires --jinja flag", classify.Wall, classify.ScopeTarget},
		{"azure operation", 400, "OperationNotSupported", "The chatCompletion operation does not work with the specified model, x.", classify.Wall, classify.ScopeTarget},
		// A local server that cannot load the model.
		{"ollama memory", 500, "", "model requires more system memory (9.1 GiB) than is available (7.0 GiB)", classify.Wall, classify.ScopeTarget},
		// Moderation under any label.
		{"inappropriate content", 400, "", "Input data may contain inappropriate content.", classify.Policy, classify.ScopeAttempt},
		{"zhipu 1301 code", 400, "1301", "blocked", classify.Policy, classify.ScopeAttempt},
		// The server could not read the model's output.
		{"ollama tool call parse", 500, "", "error parsing tool call: raw='{\"a\":', err=unexpected end of JSON input", classify.Unknown, classify.ScopeTarget},
		// A request alone over the per-minute limit.
		{"tpm request over the limit", 429, "rate_limit_exceeded", "Rate limit reached on tokens per minute (TPM): Limit 6000, Used 0, Requested 9000. Please try again in 30s.", classify.Wall, classify.ScopeTarget},

		// Look-alikes the families leave to other rules.
		{"unsupported parameter stays invalid", 400, "unsupported_parameter", "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", classify.Invalid, classify.ScopeAttempt},
		{"a long string stays invalid", 400, "", "Invalid 'messages[0].name': string too long. Expected a string with maximum length 64.", classify.Invalid, classify.ScopeAttempt},
		{"a tpm limit not yet reached stays transient", 429, "rate_limit_exceeded", "Rate limit reached on tokens per minute (TPM): Limit 6000, Used 5000, Requested 2000. Please try again in 10s.", classify.Transient, classify.ScopeTarget},
		{"max_tokens of zero stays invalid", 400, "", "max_tokens must be at least 1, got 0.", classify.Invalid, classify.ScopeAttempt},
		{"content type stays invalid", 400, "", "Content-Type must be application/json", classify.Invalid, classify.ScopeAttempt},
		{"a tool schema stays invalid", 400, "", "Invalid schema for function 'f': 'object' is not valid under any of the given schemas.", classify.Invalid, classify.ScopeAttempt},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &llm.ProviderError{Dialect: "openai", Status: tt.status, Code: tt.code, Message: tt.msg, Phase: llm.PhaseResponse}
			f := classify.Classify(e, t0)
			checkFailure(t, f)
			if f.Kind != tt.kind || f.Scope != tt.scope {
				t.Errorf("got %s/%s, want %s/%s (%s)", f.Kind, f.Scope, tt.kind, tt.scope, f.Reason)
			}
		})
	}
}

// TestStatusAlone: a failure whose body says nothing detour knows is read
// from its status, and says so; one whose body spoke does not.
func TestStatusAlone(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		code   string
		msg    string
		phase  llm.Phase
		alone  bool
	}{
		{"a 503 with an unknown message", 503, "", "upstream went away", llm.PhaseResponse, true},
		{"a 400 with an unknown message", 400, "", "something odd", llm.PhaseResponse, true},
		{"a 418 says nothing either", 418, "", "", llm.PhaseResponse, true},
		{"a 429 whose message says rate limit", 429, "", "Rate limit exceeded", llm.PhaseResponse, false},
		{"a 429 whose code says rate limit", 429, "rate_limit_exceeded", "slow", llm.PhaseResponse, false},
		{"a strong row", 400, "context_length_exceeded", "too long", llm.PhaseResponse, false},
		{"a family row", 500, "", "model requires more system memory (9 GiB) than is available (7 GiB)", llm.PhaseResponse, false},
		{"a 404 naming what is missing", 404, "", "deployment not found", llm.PhaseResponse, false},
		{"a stream frame nobody knows", 200, "", "something odd", llm.PhaseStream, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &llm.ProviderError{Dialect: "openai", Status: tt.status, Code: tt.code, Message: tt.msg, Phase: tt.phase}
			f := classify.Classify(e, t0)
			checkFailure(t, f)
			if f.StatusAlone != tt.alone {
				t.Errorf("StatusAlone = %v, want %v (%s)", f.StatusAlone, tt.alone, f.Reason)
			}
			if got := strings.HasSuffix(f.Reason, "; "+classify.StatusAloneNote); got != tt.alone {
				t.Errorf("reason %q: ends in the note = %v, want %v", f.Reason, got, tt.alone)
			}
		})
	}
}
