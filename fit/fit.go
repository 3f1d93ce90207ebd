package fit

import (
	"math"

	"github.com/detourhq/detour/llm"
)

// Adaptation is what a route allows to make a request fit a smaller window.
type Adaptation struct {
	// KeepLastTurns, when not 0, allows dropping old turns down to the
	// last KeepLastTurns (a turn is a user message and what follows it
	// until the next user message); the system prompt is always kept.
	KeepLastTurns int
	// ShortSystem, when not "", is a shorter system prompt to swap in for
	// the request's.
	ShortSystem string
	// DropToolResults, when not 0, allows replacing the tool results
	// older than the last DropToolResults turns by Placeholder.
	DropToolResults int
}

// Placeholder is the one line an elided tool result is replaced by.
const Placeholder = "[tool result elided by detour to fit a smaller context window]"

// Fits reports whether req fits window with reserve tokens left for the
// answer: its estimate for family, plus the estimator's error as a
// margin, plus reserve, is at most window (Margin). A window of 0 or less
// is unknown, and anything fits it. It copies nothing.
func Fits(req *llm.Request, window, reserve int, family string) bool {
	if window <= 0 {
		return true
	}
	t, e := Estimate(req, family)
	return t+Margin(t, e)+max(reserve, 0) <= window
}

// Margin is the tokens Fits and Fit add to an estimate of tokens with
// relative error relErr: tokens×relErr, rounded up.
func Margin(tokens int, relErr float64) int {
	return int(math.Ceil(float64(tokens) * relErr))
}

// Fit returns req changed as little as a allows and needs for it to fit
// window with reserve tokens for the answer (as Fits counts it); what it
// did, in words for the ledger and headers ("3 old tool results elided",
// "shorter system prompt", "dropped 12 of 20 turns"); and whether out
// fits.
//
// A request that fits comes back as it is (out == req, did empty). Else
// Fit applies a's steps in order, each only as far as needed: it elides
// tool results older than the last a.DropToolResults turns, oldest first;
// swaps in a.ShortSystem when it is shorter than the system prompt (the
// leading system messages); drops the oldest turns, keeping at least the
// last a.KeepLastTurns. Then it undoes what the last step made needless:
// the system prompt, then elided results, newest first, come back while
// the request still fits.
//
// A tool call is never split from its results: an assistant message with
// ToolCalls and the tool messages answering it (by ToolCallID; one with
// no matching call belongs to the last call before it) are kept or
// dropped together; a cut that would split them drops the next turn too.
// When turns are dropped, the kept conversation starts, after the system
// prompt, with a user message; the last user message is always kept.
//
// ok is false when even the fully adapted request does not fit, or a is
// nil and req does not fit; out is then the most Fit could do (req when
// a is nil), for the record only. req is never modified: out is a copy
// sharing what did not change. out.Raw is nil when out is not req: a
// client's raw body holds the whole conversation, so an adapted request
// must be encoded from its fields (what only Raw carried is lost; Needs
// still name it).
func Fit(req *llm.Request, window, reserve int, family string, a *Adaptation) (out *llm.Request, did []string, ok bool) {
	if req == nil || Fits(req, window, reserve, family) {
		return req, nil, true
	}
	if a == nil {
		return req, nil, false
	}
	w := newWork(req, profileOf(family), window, reserve)
	ok = w.elide(a.DropToolResults) || w.shortSystem(a.ShortSystem) || w.dropTurns(a.KeepLastTurns)
	if ok {
		w.restore()
	}
	return w.request(), w.did(), ok
}
