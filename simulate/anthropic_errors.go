package simulate

import (
	"fmt"
	"strconv"
	"time"
)

// anthropicOrg is the organisation named in rate-limit messages; fake and
// fixed, the one of sample anthropic-429-with-ratelimit-headers.
const anthropicOrg = "00000000-0000-0000-0000-000000000000"

// anthropicReply is Anthropic's error envelope, compact and without a
// trailing newline: {"type":"error","error":{"type","message"[,"details"]},
// "request_id"}, with Content-Type application/json and a request-id header
// (recorded: maruel/genai providers/anthropic/testdata/TestClient/errors/
// bad_apiKey/GenSync.yaml). The recordings carry x-should-retry: false on
// 400, 401 and 404 (PROVIDERS.md, Anthropic).
func anthropicReply(c errCtx, status int, typ, msg string, details any) reply {
	v := struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Details any    `json:"details,omitempty"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}{Type: "error", RequestID: c.requestID}
	v.Error.Type, v.Error.Message, v.Error.Details = typ, msg, details
	b, _ := marshal(v)
	h := headerOf("Content-Type", "application/json", "Request-Id", c.requestID)
	switch status {
	case 400, 401, 403, 404:
		h.Set("X-Should-Retry", "false")
	}
	return reply{status, h, b}
}

// anthropicError is the answer of an error kind in Anthropic's dialect. Each
// body names its source; "reconstructed" marks a real envelope around a
// message that was not captured verbatim.
func anthropicError(c errCtx) reply {
	switch c.f.Kind {
	case RateLimit:
		// Body: sample anthropic-429-with-ratelimit-headers (newer docs
		// links); headers: names and formats from a recorded response (RFC
		// 3339 resets, tidyllm fixture), remaining 0 on the token buckets
		// whose reset is the wait. Without RetryAfter, no hint at all.
		msg := "This request would exceed the rate limit for your organization (" + anthropicOrg + ") of 80,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://claude.com/contact-sales to discuss your options for a rate limit increase."
		r := anthropicReply(c, 429, "rate_limit_error", msg, nil)
		if w := c.f.RetryAfter; w > 0 {
			now := rfc3339(c.now)
			reset := rfc3339(c.now.Add(w).Add(time.Second - 1))
			for _, hv := range [][2]string{
				{"Retry-After", strconv.Itoa(ceilSeconds(w))},
				{"Anthropic-Ratelimit-Requests-Limit", "1000"},
				{"Anthropic-Ratelimit-Requests-Remaining", "998"},
				{"Anthropic-Ratelimit-Requests-Reset", now},
				{"Anthropic-Ratelimit-Input-Tokens-Limit", "80000"},
				{"Anthropic-Ratelimit-Input-Tokens-Remaining", "0"},
				{"Anthropic-Ratelimit-Input-Tokens-Reset", reset},
				{"Anthropic-Ratelimit-Output-Tokens-Limit", "16000"},
				{"Anthropic-Ratelimit-Output-Tokens-Remaining", "16000"},
				{"Anthropic-Ratelimit-Output-Tokens-Reset", now},
				{"Anthropic-Ratelimit-Tokens-Limit", "96000"},
				{"Anthropic-Ratelimit-Tokens-Remaining", "0"},
				{"Anthropic-Ratelimit-Tokens-Reset", reset},
				{"X-Should-Retry", "true"},
			} {
				r.header.Set(hv[0], hv[1])
			}
		}
		return r

	case DailyQuota:
		// Anthropic's API has no daily quota; its real wall of this shape is
		// the spend limit an organisation sets, a 400 that is no invalid
		// request. Verbatim: sample anthropic-400-user-spend-limit
		// (anthropics/claude-code#38035). Access comes back at Now+RetryAfter
		// (to the minute), by default on the first of next month.
		back := firstOfNextMonth(c.now)
		if w := c.f.RetryAfter; w > 0 {
			back = c.now.Add(w).Add(time.Minute - 1).Truncate(time.Minute)
		}
		msg := "You have reached your specified API usage limits. You will regain access on " + back.UTC().Format("2006-01-02 at 15:04 UTC") + "."
		return anthropicReply(c, 400, "invalid_request_error", msg, nil)

	case InsufficientQuota:
		// The tier's monthly spend cap: 429 rate_limit_error with
		// details.error_code enforced_spend_limit_reached and no retry-after
		// (platform.claude.com/docs/api/rate-limits; wording as quoted from a
		// real response in third-party test fixtures).
		msg := "You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on " + firstOfNextMonth(c.now).Format("2006-01-02 at 15:04 UTC") + "."
		return anthropicReply(c, 429, "rate_limit_error", msg, map[string]string{"error_code": "enforced_spend_limit_reached"})

	case NoCredits:
		// Verbatim: sample anthropic-400-credit-balance-too-low
		// (anthropics/claude-code#66314): billing exhaustion as a 400.
		return anthropicReply(c, 400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.", nil)

	case Unavailable:
		// Verbatim: anthropics/claude-code#5184, status 529.
		return anthropicReply(c, 529, "overloaded_error", "Overloaded", nil)

	case ServerError, StreamError:
		// Reported verbatim in many Claude Code logs: "API Error: 500
		// {"type":"error","error":{"type":"api_error","message":"Internal server error"}}".
		return anthropicReply(c, 500, "api_error", "Internal server error", nil)

	case Unauthorized:
		if !c.keyGiven {
			// reconstructed: message as widely reported for a request without a key.
			return anthropicReply(c, 401, "authentication_error", "x-api-key header is required", nil)
		}
		// Recorded: maruel/genai anthropic errors/bad_apiKey/GenSync.yaml.
		return anthropicReply(c, 401, "authentication_error", "invalid x-api-key", nil)

	case BadRequest:
		// reconstructed: pydantic's wording for an unknown field, as the
		// Messages API rejects one (e.g. "tools.0.custom.input_examples:
		// Extra inputs are not permitted").
		p := c.f.Param
		if p == "" {
			p = "stop"
		}
		return anthropicReply(c, 400, "invalid_request_error", p+": Extra inputs are not permitted", nil)

	case ContextOverflow:
		// Verbatim shape: sample anthropic-400-prompt-too-long (anthropics/claude-code#12186).
		win := orDefault(c.contextWindow, 200000)
		return anthropicReply(c, 400, "invalid_request_error", fmt.Sprintf("prompt is too long: %d tokens > %d maximum", win+c.promptTokens, win), nil)

	case ModelNotFound:
		// Recorded: maruel/genai anthropic errors/bad_model/GenStream.yaml.
		return anthropicReply(c, 404, "not_found_error", "model: "+c.model, nil)
	}
	return anthropicReply(c, 500, "api_error", "Internal server error", nil)
}

// rfc3339 formats t in UTC to the second, as Anthropic's reset headers are.
func rfc3339(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// firstOfNextMonth is 00:00 UTC on the first day of the month after t's.
func firstOfNextMonth(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}
