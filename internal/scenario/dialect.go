package scenario

import sim "github.com/detourhq/detour/simulate"

// ForDialect reports whether row's expectation holds for a primary A of
// dialect d, and why not. The suite's faults fall at the same point of an
// answer in every dialect (a fault's Chunks counts the simulator's
// writes, and a Responses API stream's opening events go in one, as a
// chat stream's role chunk does), but one row's expectation is chat
// completions' own: a stream without its terminal marker counts as
// complete there ([DONE] is optional), while a Responses API stream
// without its response.completed has neither its finish nor its usage,
// and reads as a cut.
func (r Row) ForDialect(d sim.Dialect) (ok bool, why string) {
	if d == sim.DialectResponses && len(r.A) == 1 && r.A[0].Kind == sim.NoDone {
		return false, "a Responses stream without response.completed is a cut"
	}
	return true, ""
}
