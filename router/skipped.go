package router

import (
	"slices"
	"strconv"

	"github.com/detourhq/detour/llm"
)

// An answer whose target's stream left out events it could not read
// (llm.Skipper: one bad event between readable ones does not end it) is
// degraded: it lacks what those events carried. Its Result and its
// attempt's record say so, and name them among what was dropped.

// skippedNote names n events left out, for Dropped: "1 malformed event".
func skippedNote(n int) string {
	if n == 1 {
		return "1 malformed event"
	}
	return strconv.Itoa(n) + " malformed events"
}

// withSkipped returns dropped and the note of n events left out, in an
// array of its own (dropped is shared with the walk's state); dropped as
// it is when n is 0.
func withSkipped(dropped []string, n int) []string {
	if n == 0 {
		return dropped
	}
	return append(slices.Clip(dropped), skippedNote(n))
}

// skippedWhole marks res, and a, the attempt that answered it whole with
// resp, degraded when resp was read from a stream that left events out.
func skippedWhole(a *Attempt, res *Result, resp *llm.Response) {
	if resp.Skipped == 0 {
		return
	}
	res.Dropped, res.Degraded = withSkipped(res.Dropped, resp.Skipped), true
	a.Dropped, a.Degraded = res.Dropped, true
}

// noteSkipped marks the stream's Result and attempt degraded when its
// target's stream left out events so far: what was dropped before the
// answer began (s.dropped) and the note of how many. It is called when the
// answer is handed over (a buffered answer is then whole, and its headers
// name them) and when it ends, never per chunk.
func (s *routedStream) noteSkipped() {
	n := llm.SkippedOf(s.inner)
	if n == 0 {
		return
	}
	d := withSkipped(s.dropped, n)
	s.res.Dropped, s.res.Degraded = d, true
	s.attempt.Dropped, s.attempt.Degraded = d, true
}
