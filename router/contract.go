package router

import (
	"fmt"
	"slices"
	"strings"

	"github.com/detourhq/detour/fit"
	"github.com/detourhq/detour/llm"
)

// contract reads what t can do with req on route before any send. A
// target of another dialect than the request's must carry each of its
// needs (llm.Carrier), or may drop the safe ones (llm.Request.Required).
// Whatever the dialect, a target that declares its capabilities (Offers)
// must offer each one the request uses (images, documents, audio, tools,
// json_schema, reasoning), every target must state what the route
// Requires (data terms, Terms: zero_retention, no_training, region-eu,
// ...; a term stated says nothing of capabilities), and
// the request must fit the target's known output cap and, with a margin,
// its context window. missing are what t cannot honour (the target is
// skipped); dropped what it goes without (the answer is then degraded and
// says so).
func contract(t *Target, req *llm.Request, route *Route) (missing, dropped []string) {
	translated := req.Raw == nil || req.Raw.Dialect != t.Dialect
	if len(req.Needs) > 0 && translated {
		c, _ := t.Client.(llm.Carrier)
		for _, n := range req.Needs {
			switch {
			case c != nil && c.Carries(n) && (!reasoningNeed(n) || slices.Contains(t.Offers, "reasoning")):
			case req.Required(n):
				missing = append(missing, n)
			default:
				dropped = append(dropped, n)
			}
		}
	}
	if f, ok := t.Client.(llm.Fitter); ok && translated {
		m, d := f.Fit(req)
		missing = append(missing, m...)
		for _, n := range d {
			if req.Required(n) {
				missing = append(missing, n)
			} else {
				dropped = append(dropped, n)
			}
		}
	}
	if t.Offers != nil {
		for _, c := range capabilities(req) {
			if !slices.Contains(t.Offers, c) {
				missing = append(missing, c)
			}
		}
	}
	for _, r := range route.Requires {
		if !t.states(r) {
			missing = append(missing, r)
		}
	}
	if t.MaxOutput > 0 && req.MaxTokens > t.MaxOutput {
		missing = append(missing, fmt.Sprintf("max_tokens %d (its output cap is %d)", req.MaxTokens, t.MaxOutput))
	}
	if t.Context > 0 && route.Adapt == nil {
		// Skipped only when it is too long even at the low end of the
		// estimate: the provider's own count decides the cases in
		// between (a context overflow). With an adaptation declared, the
		// walk shortens the request for the target instead (fitted).
		if in, low := tooLong(req, t); low {
			missing = append(missing, fmt.Sprintf("about %d input tokens (its context is %d; routes.%s.adapt would shorten the history for it)",
				in, t.Context, route.Name))
		}
	}
	return missing, dropped
}

// reserve is the output a request keeps room for in t's window: its
// max_tokens, when it sets one.
func reserve(req *llm.Request) int { return max(req.MaxTokens, 0) }

// surelyFits reports, without estimating, a request that fits window
// whatever the tokenizer: every byte of its text counted as two tokens
// (digits, which Gemini makes one token each, estimate at 1.23 a byte,
// 1.66 with the estimator's margin) and every message as 10. A request
// with media is not sure. It keeps the estimator (a few µs a KiB) off the
// common case, a request far below the window.
func surelyFits(req *llm.Request, window int) bool {
	n := 16 + reserve(req) + len(req.ToolChoice) + len(req.ResponseFormat)
	for _, m := range req.Messages {
		n += 10 + len(m.Content) + len(m.Name)
		for _, c := range m.ToolCalls {
			n += 10 + len(c.Name) + len(c.Arguments)
		}
		for _, p := range m.Parts {
			if p.Kind != llm.PartText {
				return false
			}
			n += len(p.Text)
		}
	}
	for _, tl := range req.Tools {
		n += 10 + len(tl.Name) + len(tl.Description) + len(tl.Parameters)
	}
	return 2*n <= window
}

// tooLong estimates req's input tokens for t and reports whether, even at
// the low end of the estimate, with its output reserve it passes t's
// window.
func tooLong(req *llm.Request, t *Target) (tokens int, low bool) {
	if surelyFits(req, t.Context) {
		return 0, false
	}
	tokens, relErr := fit.Estimate(req, t.ModelFamily())
	return tokens, tokens-fit.Margin(tokens, relErr)+reserve(req) > t.Context
}

// fitted returns req shortened by the route's adaptation to fit t's
// window, with what was done ("dropped 12 of 20 turns"), when it does not
// fit as it is; req itself when it does. ok is false when even the
// adapted request does not fit: t is then skipped.
func fitted(req *llm.Request, t *Target, route *Route) (out *llm.Request, did []string, ok bool) {
	if route.Adapt == nil || t.Context <= 0 || surelyFits(req, t.Context) || fit.Fits(req, t.Context, reserve(req), t.ModelFamily()) {
		return req, nil, true
	}
	out, did, ok = fit.Fit(req, t.Context, reserve(req), t.ModelFamily(), route.Adapt)
	if !ok {
		return req, nil, false
	}
	did = append([]string{"context adapted"}, did...)
	return out, did, true
}

// reasoningNeed reports whether need is a client's ask for reasoning in
// its dialect's words. Translated for another dialect it goes only to a
// target that declares it reasons (offers: [reasoning]): a model that
// does not would refuse the field with a 400, which fails the request
// closed instead of trying the next target.
func reasoningNeed(need string) bool {
	return need == "thinking" || need == "reasoning_effort" || need == "thinkingConfig"
}

// ReadsNeeds reports whether a request of dialect on r may have its Needs
// (and Reasoning) read before a send: when a target of r speaks another
// dialect, or declares what it offers. A caller that builds Needs by
// scanning the body may skip the scan otherwise: every target then gets
// the body raw, whatever it carries.
func (r *Route) ReadsNeeds(dialect string) bool {
	for i := range r.Chain {
		if t := &r.Chain[i]; t.Dialect != dialect || t.Offers != nil {
			return true
		}
	}
	return false
}

// capabilities are what req uses that a target may not offer, in the
// words of Target.Offers: images, documents, audio, tools, json_schema,
// reasoning.
func capabilities(req *llm.Request) []string {
	var out []string
	add := func(c string) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(req.Tools) > 0 {
		add("tools")
	}
	if len(req.ResponseFormat) > 0 && string(req.ResponseFormat) != "null" {
		add("json_schema")
	}
	if !req.Reasoning.Off() {
		add("reasoning")
	}
	for _, n := range req.Needs {
		switch {
		case strings.HasPrefix(n, "image"):
			add("images")
		case strings.HasPrefix(n, "document"), strings.HasPrefix(n, "file"):
			add("documents")
		case strings.HasPrefix(n, "audio"):
			add("audio")
		case n == "thinking", n == "thinking blocks", n == "reasoning_effort", n == "thinkingConfig", n == "thought parts":
			add("reasoning")
		}
	}
	return out
}

// contractReason is the skip reason of a target that cannot honour
// missing.
func contractReason(t *Target, missing []string) string {
	d := t.Dialect
	if d == "" {
		d = "its own"
	}
	return "cannot honour " + strings.Join(missing, ", ") + " (" + t.ID() + ", " + d + " dialect)"
}
