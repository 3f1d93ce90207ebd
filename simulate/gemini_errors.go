package simulate

import (
	"fmt"
	"html"
	"net/http"
	"strconv"
	"time"
)

// The google.rpc detail messages Gemini's errors carry, in the field order
// of the recorded bodies.
type (
	rpcErrorInfo struct {
		Type     string            `json:"@type"`
		Reason   string            `json:"reason"`
		Domain   string            `json:"domain"`
		Metadata map[string]string `json:"metadata"`
	}
	rpcLocalized struct {
		Type    string `json:"@type"`
		Locale  string `json:"locale"`
		Message string `json:"message"`
	}
	rpcLink struct {
		Description string `json:"description"`
		URL         string `json:"url"`
	}
	rpcHelp struct {
		Type  string    `json:"@type"`
		Links []rpcLink `json:"links"`
	}
	rpcViolation struct {
		QuotaMetric     string `json:"quotaMetric"`
		QuotaID         string `json:"quotaId"`
		QuotaDimensions struct {
			Location string `json:"location"`
			Model    string `json:"model"`
		} `json:"quotaDimensions"`
		QuotaValue string `json:"quotaValue,omitempty"`
	}
	rpcQuotaFailure struct {
		Type       string         `json:"@type"`
		Violations []rpcViolation `json:"violations"`
	}
	rpcRetryInfo struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
	}
	rpcFieldViolation struct {
		Description string `json:"description"`
	}
	rpcBadRequest struct {
		Type            string              `json:"@type"`
		FieldViolations []rpcFieldViolation `json:"fieldViolations"`
	}
)

// The quota metrics and ids of Gemini's free tier (sample gemini-429-limit-zero,
// RooCodeInc/Roo-Code#3883, googleapis/python-genai#2044).
const (
	metricRequests    = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
	metricInputTokens = "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count"
	quotaPerDay       = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
	quotaPerMinute    = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
	quotaTokensMinute = "GenerateContentInputTokensPerModelPerMinute-FreeTier"
	quotaMessage      = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
)

// geminiReply is a google.rpc.Status pretty-printed with two spaces and a
// trailing newline (recorded: maruel/genai gemini errors/bad_apiKey/GenSync.yaml).
// On the streaming endpoint the same JSON body comes with Content-Type
// text/event-stream (recorded: errors/bad_apiKey/GenStream.yaml).
func geminiReply(c errCtx, code int, msg, status string, details []any) reply {
	v := struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
			Details []any  `json:"details,omitempty"`
		} `json:"error"`
	}{}
	v.Error.Code, v.Error.Message, v.Error.Status, v.Error.Details = code, msg, status, details
	ct := "application/json; charset=UTF-8"
	if c.stream {
		ct = "text/event-stream"
	}
	return reply{code, headerOf("Content-Type", ct), append(marshalIndent(v, "  "), '\n')}
}

// geminiError is the answer of an error kind in Gemini's native dialect.
// Each body names its source; "reconstructed" marks a real envelope around
// a message or detail that was not captured verbatim.
func geminiError(c errCtx) reply {
	m := c.model
	switch c.f.Kind {
	case RateLimit:
		// Layout verbatim from RooCodeInc/Roo-Code#3883 (QuotaFailure with
		// quotaValue, Help, RetryInfo); the violated quota is the per-minute
		// request one here (reconstructed). RetryInfo carries RetryAfter, in
		// whole seconds; without RetryAfter it is left out.
		details := []any{quotaFailure(rpcViolationOf(metricRequests, quotaPerMinute, m, "10")), quotaHelp()}
		if w := c.f.RetryAfter; w > 0 {
			details = append(details, retryInfo(w))
		}
		return geminiReply(c, 429, quotaMessage, "RESOURCE_EXHAUSTED", details)

	case DailyQuota:
		// The per-day wall in the same layout (quotaId as in
		// googleapis/python-genai#2044). Its RetryInfo is short although the
		// window is a day, as in that issue (47s) and voideditor/void#557
		// (5s): RetryAfter, by default 47s.
		w := c.f.RetryAfter
		if w <= 0 {
			w = 47 * time.Second
		}
		details := []any{quotaFailure(rpcViolationOf(metricRequests, quotaPerDay, m, "250")), quotaHelp(), retryInfo(w)}
		return geminiReply(c, 429, quotaMessage, "RESOURCE_EXHAUSTED", details)

	case InsufficientQuota:
		// No quota at all for the model on this tier ("limit: 0"): sample
		// gemini-429-limit-zero (continuedev/continue#10066), byte for byte.
		// RetryAfter is the wait the message names, by default 7.967587226s.
		w := c.f.RetryAfter
		if w <= 0 {
			w = 7967587226 * time.Nanosecond
		}
		msg := quotaMessage + " To monitor your current usage, head to: https://ai.dev/rate-limit. \n"
		for _, metric := range []string{metricRequests, metricRequests, metricInputTokens} {
			msg += "* Quota exceeded for metric: " + metric + ", limit: 0, model: " + m + "\n"
		}
		msg += "Please retry in " + strconv.FormatFloat(w.Seconds(), 'f', -1, 64) + "s."
		details := []any{quotaHelp(), quotaFailure(
			rpcViolationOf(metricRequests, quotaPerDay, m, ""),
			rpcViolationOf(metricRequests, quotaPerMinute, m, ""),
			rpcViolationOf(metricInputTokens, quotaTokensMinute, m, ""),
		), retryInfo(w)}
		return geminiReply(c, 429, msg, "RESOURCE_EXHAUSTED", details)

	case NoCredits:
		// Gemini's prepaid billing: status 402 RESOURCE_EXHAUSTED per the API
		// errors page (ai.google.dev/gemini-api/docs/troubleshooting, "Your
		// Prepay credit balance is depleted ... Don't retry"); message verbatim
		// from dyad-sh/dyad#3626. Envelope reconstructed.
		return geminiReply(c, 402, "Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing.", "RESOURCE_EXHAUSTED", nil)

	case Unavailable:
		// Sample gemini-503-model-overloaded (google-gemini/gemini-cli#7392),
		// pretty-printed as Google sends it.
		return geminiReply(c, 503, "The model is overloaded. Please try again later.", "UNAVAILABLE", nil)

	case ServerError, StreamError:
		// PROVIDERS.md Gemini: 500 INTERNAL.
		return geminiReply(c, 500, "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", "INTERNAL", nil)

	case Unauthorized:
		if !c.keyGiven {
			// Google's answer to a call without a key (403 PERMISSION_DENIED).
			return geminiReply(c, 403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.", "PERMISSION_DENIED", nil)
		}
		// Recorded: maruel/genai gemini errors/bad_apiKey/GenSync.yaml.
		const msg = "API key not valid. Please pass a valid API key."
		return geminiReply(c, 400, msg, "INVALID_ARGUMENT", []any{
			rpcErrorInfo{"type.googleapis.com/google.rpc.ErrorInfo", "API_KEY_INVALID", "googleapis.com", map[string]string{"service": "generativelanguage.googleapis.com"}},
			rpcLocalized{"type.googleapis.com/google.rpc.LocalizedMessage", "en-US", msg},
		})

	case BadRequest:
		// reconstructed: Google's wording for an unknown request field, with
		// its google.rpc.BadRequest detail.
		p := c.f.Param
		if p == "" {
			p = "stop"
		}
		msg := fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", p)
		return geminiReply(c, 400, msg, "INVALID_ARGUMENT", []any{fieldViolation(msg)})

	case ContextOverflow:
		// PROVIDERS.md Gemini "Overflow" (gemini-cli#5807).
		win := orDefault(c.contextWindow, 1048576)
		return geminiReply(c, 400, fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", win+c.promptTokens, win), "INVALID_ARGUMENT", nil)

	case ModelNotFound:
		// Recorded: sample gemini-404-model-not-found.
		v := c.apiVersion
		if v == "" {
			v = "v1beta"
		}
		return geminiReply(c, 404, "models/"+m+" is not found for API version "+v+", or is not supported for generateContent. Call ModelService.ListModels to see the list of available models and their supported methods.", "NOT_FOUND", nil)
	}
	return geminiReply(c, 500, "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", "INTERNAL", nil)
}

func rpcViolationOf(metric, id, model, value string) rpcViolation {
	v := rpcViolation{QuotaMetric: metric, QuotaID: id, QuotaValue: value}
	v.QuotaDimensions.Location, v.QuotaDimensions.Model = "global", model
	return v
}

func quotaFailure(vs ...rpcViolation) rpcQuotaFailure {
	return rpcQuotaFailure{"type.googleapis.com/google.rpc.QuotaFailure", vs}
}

func quotaHelp() rpcHelp {
	return rpcHelp{"type.googleapis.com/google.rpc.Help", []rpcLink{{"Learn more about Gemini API quotas", "https://ai.google.dev/gemini-api/docs/rate-limits"}}}
}

// retryInfo carries w in whole seconds, truncated, as Google writes it
// ("7s" for a message saying 7.967587226s).
func retryInfo(w time.Duration) rpcRetryInfo {
	return rpcRetryInfo{"type.googleapis.com/google.rpc.RetryInfo", strconv.FormatInt(int64(w/time.Second), 10) + "s"}
}

func fieldViolation(msg string) rpcBadRequest {
	return rpcBadRequest{"type.googleapis.com/google.rpc.BadRequest", []rpcFieldViolation{{msg}}}
}

// googleNotFound is the HTML page Google's front end answers for a path it
// does not serve (reconstructed: the page's text, its style sheet left out).
func googleNotFound(path string) reply {
	body := "<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n  <meta name=viewport content=\"initial-scale=1, minimum-scale=1, width=device-width\">\n  <title>Error 404 (Not Found)!!1</title>\n  <a href=//www.google.com/><span id=logo aria-label=Google></span></a>\n  <p><b>404.</b> <ins>That’s an error.</ins>\n  <p>The requested URL <code>" + html.EscapeString(path) + "</code> was not found on this server.  <ins>That’s all we know.</ins>\n"
	return reply{404, http.Header{"Content-Type": {"text/html; charset=UTF-8"}}, []byte(body)}
}
