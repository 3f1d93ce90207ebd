package fit

import (
	"fmt"

	"github.com/detourhq/detour/llm"
)

// work is a request being adapted: the system prompt, the rest of the
// conversation from cut on, and the cost of each message.
type work struct {
	req             *llm.Request
	p               *profile
	window, reserve int
	reqTok          int
	reqErr          float64
	sys             []entry // the system prompt in use
	origSys         []entry // the request's, while a shorter one is in use
	rest            []entry
	cut             int // rest[cut:] is kept
	turns, dropped  int
	elided          []int // indexes in rest of the results elided
}

// entry is one message and its cost.
type entry struct {
	m   llm.Message
	tok int
	err float64
}

func newWork(req *llm.Request, p *profile, window, reserve int) *work {
	w := &work{req: req, p: p, window: window, reserve: max(reserve, 0)}
	w.reqTok, w.reqErr = p.requestCost(req)
	n := 0
	for n < len(req.Messages) && req.Messages[n].Role == llm.RoleSystem {
		n++
	}
	w.sys = w.entries(req.Messages[:n])
	w.rest = w.entries(req.Messages[n:])
	return w
}

func (w *work) entries(ms []llm.Message) []entry {
	es := make([]entry, len(ms))
	for i := range ms {
		es[i].m = ms[i]
		es[i].tok, es[i].err = w.p.messageCost(&ms[i])
	}
	return es
}

// fits reports whether the request as it stands fits, summing as
// Estimate does, in the same order, so that Fits(out) agrees.
func (w *work) fits() bool {
	t, e := w.reqTok, w.reqErr
	for _, es := range [][]entry{w.sys, w.rest[w.cut:]} {
		for i := range es {
			t += es[i].tok
			e += es[i].err
		}
	}
	relErr := 0.0
	if t > 0 {
		relErr = e / float64(t)
	}
	return t+Margin(t, relErr)+w.reserve <= w.window
}

// elide replaces tool results older than the last k turns by Placeholder,
// oldest first, until the request fits.
func (w *work) elide(k int) bool {
	if k <= 0 {
		return false
	}
	users := userIndexes(w.rest)
	if len(users) <= k {
		return false
	}
	before := users[len(users)-k]
	for i := 0; i < before; i++ {
		e := &w.rest[i]
		if e.m.Role != llm.RoleTool {
			continue
		}
		m := e.m
		m.Content, m.Parts = Placeholder, nil
		tok, err := w.p.messageCost(&m)
		if tok >= e.tok {
			continue
		}
		e.m, e.tok, e.err = m, tok, err
		w.elided = append(w.elided, i)
		if w.fits() {
			return true
		}
	}
	return false
}

// shortSystem swaps in short for the system prompt when it is shorter.
func (w *work) shortSystem(short string) bool {
	if short == "" || len(w.sys) == 0 {
		return false
	}
	s := w.entries([]llm.Message{{Role: llm.RoleSystem, Content: short}})
	old := 0
	for _, e := range w.sys {
		old += e.tok
	}
	if s[0].tok >= old {
		return false
	}
	w.origSys, w.sys = w.sys, s
	return w.fits()
}

// dropTurns drops the fewest old turns that make the request fit, keeping
// at least the last keep, and never a cut between a tool call and its
// results. When none fits, it drops all it may, and reports false.
func (w *work) dropTurns(keep int) bool {
	if keep <= 0 {
		return false
	}
	users := userIndexes(w.rest)
	w.turns = len(users)
	blocked := splitCuts(w.rest)
	last := -1
	for j := 1; j <= len(users)-keep; j++ {
		c := users[j]
		if blocked[c] {
			continue
		}
		w.cut, w.dropped, last = c, j, c
		if w.fits() {
			return true
		}
	}
	if last < 0 {
		w.cut, w.dropped = 0, 0
	}
	return false
}

// restore undoes what a later step made needless, while the request
// still fits: the system prompt, then elided results, newest first.
func (w *work) restore() {
	if w.origSys != nil {
		short := w.sys
		w.sys = w.origSys
		if w.fits() {
			w.origSys = nil
		} else {
			w.sys = short
		}
	}
	orig := w.req.Messages[len(w.req.Messages)-len(w.rest):]
	var kept []int
	for i := len(w.elided) - 1; i >= 0; i-- {
		idx := w.elided[i]
		if idx < w.cut {
			continue
		}
		e := &w.rest[idx]
		saved := *e
		e.m = orig[idx]
		e.tok, e.err = w.p.messageCost(&e.m)
		if !w.fits() {
			*e = saved
			kept = append(kept, idx)
		}
	}
	w.elided = kept
}

// request builds the adapted request: req itself when nothing changed.
func (w *work) request() *llm.Request {
	if len(w.elided) == 0 && w.origSys == nil && w.cut == 0 {
		return w.req
	}
	out := w.req.Clone()
	out.Raw = nil
	out.Messages = make([]llm.Message, 0, len(w.sys)+len(w.rest)-w.cut)
	for _, es := range [][]entry{w.sys, w.rest[w.cut:]} {
		for i := range es {
			out.Messages = append(out.Messages, es[i].m)
		}
	}
	return out
}

// did says what request changed.
func (w *work) did() []string {
	var did []string
	n := 0
	for _, i := range w.elided {
		if i >= w.cut {
			n++
		}
	}
	switch {
	case n == 1:
		did = append(did, "1 old tool result elided")
	case n > 1:
		did = append(did, fmt.Sprintf("%d old tool results elided", n))
	}
	if w.origSys != nil {
		did = append(did, "shorter system prompt")
	}
	if w.cut > 0 {
		did = append(did, fmt.Sprintf("dropped %d of %d turns", w.dropped, w.turns))
	}
	return did
}
