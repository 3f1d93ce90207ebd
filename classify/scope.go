package classify

import (
	"strings"

	"github.com/detourhq/detour/internal/lazyregexp"
)

// providerScope says how far a provider's failure of kind reaches (see
// Scope). Only walls need reading: a transient failure, a context overflow
// or an unknown one is the target's (another model of the provider may
// well answer), an invalid request or a refusal is the attempt's (nothing
// to park: the request itself failed closed). A wall is the target's when
// it names this model (not found, not allowed, a per-model daily quota, a
// balance too low for this model's price), the account's when it names
// the key or the account's money (a rejected key, no credits, a spend cap,
// insufficient_quota), and otherwise goes by status: 401, 402 and 403 are
// the account's, anything else the target's.
func providerScope(kind Kind, status int, codes []string, msg string, quotaIDs []string, stream bool) Scope {
	switch kind {
	case Invalid, Policy, Canceled:
		return ScopeAttempt
	case Unknown:
		if stream || status < 300 {
			return ScopeAttempt // a frame or chunk nobody recognises
		}
		return ScopeTarget
	case Wall:
	default:
		return ScopeTarget
	}
	if modelRefused(status, msg) {
		return ScopeTarget
	}
	for _, id := range quotaIDs {
		// Gemini names the quota: "...PerDayPerProjectPerModel-FreeTier".
		if strings.Contains(strings.ToLower(id), "permodel") {
			return ScopeTarget
		}
	}
	for _, c := range codes {
		switch strings.ToLower(strings.TrimSpace(c)) {
		case "model_not_found", "model_not_available", "model_decommissioned", "deploymentnotfound",
			"not_found_error", "not_found", "invalid_model", "resourcenotfoundexception":
			return ScopeTarget
		}
	}
	if affordsNothing().MatchString(msg) {
		return ScopeAccount
	}
	if r, ok := lookupMessage(targetWalls, msg); ok && r.kind == Wall {
		return ScopeTarget
	}
	for _, c := range codes {
		if accountCodes[strings.ToLower(strings.TrimSpace(c))] {
			return ScopeAccount
		}
	}
	if _, ok := lookupMessage(accountWalls, msg); ok {
		return ScopeAccount
	}
	switch status {
	case 401, 402, 403:
		return ScopeAccount
	}
	return ScopeTarget
}

// modelRefusal matches a message that says the model named is unknown to
// the provider or not open to this key. The request is not invalid: this
// target is (PROVIDERS.md §3.5), whatever the status.
var modelRefusal = lazyregexp.New(`\bmodels?\b[^.]{0,120}?(?:does not exist|do(?:es)? not exist|not exist|not found|no such model|is not allowed|not permitted|do(?:es)? not have access|don't have access|no access|permission to use|decommissioned|is not supported|not available on|not available for|unavailable for your|is not a valid model|invalid model)|\b(?:unknown|invalid|unsupported) model\b|\bno (?:such )?model\b|(?:permission to use|access to) (?:the |this )?(?:specified |requested )?model\b`)

// modelRefused reports a 4xx (not a 429) whose message refuses the model.
func modelRefused(status int, msg string) bool {
	if status < 400 || status >= 500 || status == 429 {
		return false
	}
	return modelRefusal().MatchString(msg)
}

// affordsNothing is OpenRouter's balance pre-check at nothing: "requires
// more credits ... can only afford 0". At 0 tokens no model is affordable
// on the key (its limit or its balance is spent), so it reaches the
// account, where "can only afford 2666" reaches only this model's price.
var affordsNothing = lazyregexp.New(`\bcan only afford 0\b`)

// targetWalls are wall messages about this model alone: its per-day or
// per-minute quota, its price against the balance.
var targetWalls = []msgRow{
	has(Wall, "", "(tpd)"),                           // Groq, per model (P: Groq)
	has(Wall, "", "(rpd)"),                           // OpenAI, per model
	has(Wall, "", "tokens per day"),                  // Cerebras, per model
	has(Wall, "", "per day"),                         // idem (P: §3.1)
	has(Wall, "", "per-day"),                         // idem
	has(Wall, "", "free-models-per-day"),             // OpenRouter: the free models only; paid ones still answer
	has(Wall, "", "request too large", "per min"),    // Groq TPM of this model's tier
	has(Wall, "", "requires more credits"),           // OpenRouter: balance pre-check against this model's price x max_tokens
	has(Wall, "", "fewer max_tokens"),                // idem
	has(Wall, "", "on-demand throughput isn"),        // Bedrock: this model needs provisioned throughput
	has(Wall, "", "subscription for the model"),      // Bedrock: this model's Marketplace subscription (corpus rules bedrock-doc-403-marketplace-agreement-being-created)
	{re: lazyregexp.New(`\blimit: 0\b`), kind: Wall}, // Gemini: no quota for this model on this tier
}

// accountCodes are wall codes about the key or the account's money.
var accountCodes = map[string]bool{
	"insufficient_quota": true, "credit_balance_exhausted": true, "organization_spend_limit_exceeded": true,
	"project_spend_limit_exceeded": true, "organization_usage_limit_exceeded": true, "billing_error": true,
	"enforced_spend_limit_reached": true, "invalid_api_key": true, "wrong_api_key": true,
	"authentication_error": true, "permission_error": true, "api_key_invalid": true, "unauthenticated": true,
	"permission_denied": true, "accessdeniedexception": true, "unrecognizedclientexception": true,
	"unsupported_country_region_territory": true, "failed_precondition": true, "multimodal_not_enabled": true,
}

// accountWalls are wall messages about the key or the account's money.
var accountWalls = []msgRow{
	has(Wall, "", "credit balance"),
	has(Wall, "", "api usage limits"),
	has(Wall, "", "insufficient balance"),
	has(Wall, "", "available credits"),
	has(Wall, "", "spending limit"),
	has(Wall, "", "spend limit"),
	has(Wall, "", "depleted your"),
	has(Wall, "", "usage limit reached"),
	has(Wall, "", "extra usage is required"),
	has(Wall, "", "api key"),
	has(Wall, "", "authentication fail"),
	has(Wall, "", "subscription key"),
	has(Wall, "", "user location is not supported"),
	has(Wall, "", "billing account"),
	has(Wall, "", "daily limit"),
	has(Wall, "", "daily quota"),
}
