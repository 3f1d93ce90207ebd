package classify

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/llm"
)

// Classify reads one failed attempt and says what it means. err is an
// *llm.ProviderError (found with errors.As, so it may be wrapped) or a
// transport error; now is the time of the failure, used for Until and for
// reset times given as dates. A nil err gives the zero Failure. Classify is
// pure and safe for concurrent use.
//
// A provider error is read in this order (PROVIDERS.md §4), the first
// signal of the highest kind winning:
//
//  1. Policy, ContextOverflow, Wall, Unknown or Invalid signals that hold at
//     any status: codes and types (tables.go strongCodes), message patterns
//     (strongMessages), and body details (a Gemini QuotaFailure PerDay, an
//     OpenRouter daily limit source or moderation flags, Azure innererror,
//     Anthropic details.error_code), then the families of families.go
//     (context window, retired model, disabled account, unsupported
//     operation, a model that cannot load, moderation, unreadable model
//     output), each of which also names its scope;
//  2. a 4xx other than 429 whose message refuses the model (not found,
//     not allowed, decommissioned) is a Wall of the target: the request is
//     not invalid, the target is (scope.go modelRefusal);
//  3. the status: 401, 402, 403 are Wall; 408, 409, 425, 429, 498 and 5xx
//     Transient; 400 and 422 Invalid; 404 Wall when it says the model or
//     deployment is not found, else Unknown; 413 ContextOverflow; any other
//     status Unknown. A 200 (a refusal, or a stream error frame, whose
//     numeric code, when it has one, stands for the status) is read from its
//     code, type and message (weakCodes, weakMessages), else Unknown;
//  4. a Transient failure whose server wait (or exhausted bucket's reset)
//     is beyond MaxTransientWait becomes a Wall.
//
// x-should-retry is reported in ShouldRetry and never changes the kind: a
// "true" does not override a wall in the body, and a "false" on a
// transient failure is left to policy (which moves on instead of retrying).
//
// Every failure also gets a Scope (scope.go providerScope for provider
// errors): how far it reaches beyond this attempt.
//
// Transport errors: see the status words of status.go; the decisions on
// ambiguous cases are documented on classifyTransport.
func Classify(err error, now time.Time) Failure {
	if err == nil {
		return Failure{}
	}
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		if pe == nil {
			return Failure{Kind: Unknown, Status: StatusNetError, Reason: "nil provider error"}
		}
		return classifyProvider(pe, now)
	}
	return classifyTransport(err)
}

// kindRank orders the kinds that strong signals decide: the first wins.
// Transient comes last: a 4xx that asks to be resent later (families.go
// retryLater) yields to any other reading.
var kindRank = map[Kind]int{Policy: 1, ContextOverflow: 2, Wall: 3, Unknown: 4, Invalid: 5, Transient: 6}

// verdict is one signal's reading.
type verdict struct {
	kind Kind
	what string
	ok   bool
	// scope is the family's (families.go); empty leaves it to providerScope.
	scope Scope
}

// better keeps the higher-ranked of two verdicts (the first on a tie).
func better(a, b verdict) verdict {
	if !a.ok || (b.ok && kindRank[b.kind] < kindRank[a.kind]) {
		return b
	}
	return a
}

// classifyProvider reads a provider's error response or error frame.
func classifyProvider(e *llm.ProviderError, now time.Time) Failure {
	fx := readFacts(e.Body)
	msg := strings.ToLower(e.Message)
	h := readHints(e.Status, e.Header, e.Message, fx, now)

	status := e.Status
	stream := e.Phase == llm.PhaseStream
	if n, err := strconv.Atoi(strings.TrimSpace(e.Code)); err == nil && n >= 400 && n <= 599 && (stream || status < 300) {
		// An error frame or 200 body that names an HTTP status
		// (OpenRouter's {"code":502}, llama.cpp's {"code":500}).
		status = n
	}
	codes := append([]string{e.Code, e.Type}, fx.codes...)

	// 1. Strong signals.
	var v verdict
	for _, c := range codes {
		if r, ok := lookupCode(strongCodes, []string{c}); ok {
			v = better(v, verdict{kind: r.kind, what: r.what, ok: true})
		}
	}
	if r, ok := lookupMessage(strongMessages, msg); ok {
		v = better(v, verdict{kind: r.kind, what: r.what, ok: true})
	}
	if fx.flagged {
		// OpenRouter 403 moderation: metadata.reasons / flagged_input (P: OpenRouter).
		v = better(v, verdict{kind: Policy, what: "flagged by moderation", ok: true})
	}
	for _, id := range fx.quotaIDs {
		if strings.Contains(strings.ToLower(id), "perday") {
			// Gemini QuotaFailure (sample gemini-429-limit-zero; python-genai#2044).
			v = better(v, verdict{kind: Wall, what: "daily quota exhausted", ok: true})
			break
		}
	}
	if strings.Contains(strings.ToLower(fx.limitSource), "daily") {
		// OpenRouter metadata.limit_source openrouter_free_tier_daily (atlas#543).
		v = better(v, verdict{kind: Wall, what: "daily limit reached", ok: true})
	}
	// Families of causes across providers (families.go).
	v = better(v, readFamilies(codes, msg))

	// 2. A 4xx that refuses the model: this target cannot serve it, the
	// request is not invalid (P: §3.5).
	if !v.ok && modelRefused(status, msg) {
		v = verdict{kind: Wall, what: "model not found or not allowed", ok: true}
	}
	// 3. The status.
	alone := false
	if !v.ok {
		v, alone = statusVerdict(status, codes, msg)
	}

	// 4. A far wait makes a transient failure a wall.
	if v.kind == Transient && h.far() > MaxTransientWait {
		v.kind = Wall
		alone = false // the wait spoke too
	}

	f := Failure{
		Kind:        v.kind,
		Status:      HTTPStatus(e.Status),
		Scope:       v.scope,
		Code:        failureCode(e),
		RetryAfter:  h.wait,
		ShouldRetry: h.shouldRetry,
		Detail:      detail(e.Message),
		StatusAlone: alone,
	}
	if f.Scope == "" {
		f.Scope = providerScope(v.kind, status, codes, msg, fx.quotaIDs, stream)
	}
	if stream {
		f.Status = StatusStream
	}
	switch {
	case !h.until.IsZero():
		f.Until = h.until
	case h.wait > 0:
		f.Until = now.Add(h.wait)
	}
	if f.Kind == Wall && h.bucket > h.wait {
		// The latest exhausted bucket decides when the target works again.
		f.Until = now.Add(h.bucket)
	}
	if t, ok := dailyReset(f.Kind, e, fx, f.Until, now); ok {
		f.Until = t // a Google daily quota: midnight Pacific (gemini.go)
	}
	f.Reason = reason(reasonPrefix(e, stream), reasonWhat(v.what, e), reasonSuffix(f, now))
	return f
}

// statusVerdict reads the status when no strong signal did. alone is
// set when the status decided by itself: no weak code or message of the
// body agreed (a 429 saying "rate limit" is not alone), and the status was
// not a 2xx (an error frame or refusal nobody recognises is Unknown, not a
// reading of its 200).
func statusVerdict(status int, codes []string, msg string) (v verdict, alone bool) {
	if status < 200 || status >= 300 {
		_, byCode := lookupCode(weakCodes, codes)
		_, byMsg := lookupMessage(weakMessages, msg)
		alone = !byCode && !byMsg
	}
	switch {
	case status == 401 || status == 402 || status == 403:
		return verdict{kind: Wall, ok: true}, alone
	case transientStatus(status):
		return verdict{kind: Transient, ok: true}, alone
	case status == 400 || status == 422:
		return verdict{kind: Invalid, ok: true}, alone
	case status == 404:
		// A 404 that says what is missing is the target's (P: 3.5);
		// a bare 404 may be a wrong path of this endpoint: one hop.
		if strings.Contains(msg, "not found") || strings.Contains(msg, "does not exist") || strings.Contains(msg, "no such model") {
			return verdict{kind: Wall, ok: true}, false
		}
		return verdict{kind: Unknown, ok: true}, alone
	case status == 413:
		// Anthropic's 413 request_too_large (P: 3.8): make the request smaller.
		return verdict{kind: ContextOverflow, what: "request too large", ok: true}, alone
	case status >= 200 && status < 300:
		if r, ok := lookupCode(weakCodes, codes); ok {
			return verdict{kind: r.kind, what: r.what, ok: true}, false
		}
		if r, ok := lookupMessage(weakMessages, msg); ok {
			return verdict{kind: r.kind, what: r.what, ok: true}, false
		}
	}
	return verdict{kind: Unknown, ok: true}, alone
}

// failureCode is the code a Failure reports: the provider's code, or its
// type when the code is only a number (an HTTP status, a Mistral numeric
// code) or absent. A code equal to the status says nothing and is dropped.
func failureCode(e *llm.ProviderError) string {
	code := strings.TrimSpace(e.Code)
	if _, err := strconv.Atoi(code); err == nil || code == "" {
		if t := strings.TrimSpace(e.Type); t != "" {
			code = t
		} else if code == strconv.Itoa(e.Status) {
			code = ""
		}
	}
	return cut(oneLine(Scrub(code)), 100)
}

// reasonPrefix is "429" for an error response, "stream error:" for a
// frame, nothing for a refusal in a 2xx answer.
func reasonPrefix(e *llm.ProviderError, stream bool) string {
	switch {
	case stream:
		return "stream error:"
	case e.Status >= 200 && e.Status < 300:
		return ""
	}
	return strconv.Itoa(e.Status)
}

// reasonWhat is the middle of a reason: the matched row's phrase, else the
// provider's message, else its code or type, else the status text.
func reasonWhat(what string, e *llm.ProviderError) string {
	if what != "" {
		return what
	}
	if m := strings.TrimSpace(e.Message); m != "" {
		return m
	}
	if c := failureCode(e); c != "" {
		return c
	}
	if t := http.StatusText(e.Status); t != "" && e.Phase != llm.PhaseStream {
		return strings.ToLower(t)
	}
	return "unrecognised error"
}

// reasonSuffix names the wait: "; retry in 644ms", "; resets in 7m12s",
// "; resets 2026-04-01 00:00 UTC".
func reasonSuffix(f Failure, now time.Time) string {
	var s string
	switch {
	case f.Kind == Wall && !f.Until.IsZero():
		if d := f.Until.Sub(now); d <= 48*time.Hour {
			s = "; resets in " + fmtDur(d)
		} else {
			s = "; resets " + f.Until.UTC().Format("2006-01-02 15:04 UTC")
		}
	case f.Kind == Transient && f.RetryAfter > 0:
		s = "; retry in " + fmtDur(f.RetryAfter)
	}
	if f.Kind == Transient && f.ShouldRetry < 0 {
		s += "; x-should-retry: false"
	}
	if f.StatusAlone {
		s += "; " + StatusAloneNote
	}
	return s
}
