package report

// Walls in time order, whatever order a target's lines come in.
//
// A wall begins at a mark: a failure of kind wall, or a skipped_quota
// line (a wall seen coming). It ends at the target's next answer: the
// first answer to an attempt that began after detour knew of the wall
// (the mark's time plus its seconds, when its failure came back). An
// answer to an attempt begun earlier, still in flight when the wall was
// hit, ends nothing. So a mark is placed by when it was known (its key,
// the time it was written), an answer by when its attempt began (its time,
// written only when the attempt ends, up to its seconds later).
//
// Lines come merged by when they were written (merge.go), so marks come in
// the order of their keys and an answer comes at most its own seconds
// late. A mark therefore waits (pending) until no answer still to come can
// have begun before it: a window of the longest answer seen (at least
// minWindow) after it. Then it is placed for good: it joins the target's
// last wall when no answer came between them, else it begins a new one.
// Memory is the walls and the marks of the last window, at most
// maxPending per target, never the answers.

import (
	"sort"
	"time"

	"github.com/detourhq/detour/ledger"
)

const (
	// minWindow is the least time a mark waits for answers that began
	// before it and have not been written yet.
	minWindow = 2 * time.Minute
	// windowSlack covers lines written a little out of the order of
	// their ends (two writers, one lock).
	windowSlack = 2 * time.Second
	// maxPending is the most marks a target keeps waiting; past it, the
	// oldest is placed at once.
	maxPending = 1024
)

// mark is one line saying its target is behind a wall.
type mark struct {
	key      time.Time // when detour knew: the line's time plus its seconds
	at       time.Time // the line's time
	status   string
	reason   string
	upstream string // the provider's request id
	seen     bool   // a skipped_quota: seen coming
	// gap is the earliest answer begun after key and no later than the
	// next pending mark's key (hasGap), of those come while it waited.
	gap    time.Time
	hasGap bool
}

// draft is a wall placed: its first and last marks, and the earliest
// answer begun after its last mark (closed), its end.
type draft struct {
	first, last mark
	end         time.Time
	closed      bool
}

// wallTrack is one target's walls: placed ones, in time order, and the
// marks still pending, by key.
type wallTrack struct {
	pending []mark
	walls   []draft
}

// wallClock is what a Summary knows of time for its walls: the latest end
// of an attempt read, and the longest answer.
type wallClock struct {
	high    time.Time
	longest time.Duration
}

func (c *wallClock) see(rec *ledger.Record) {
	if end := recordEnd(rec); end.After(c.high) {
		c.high = end
	}
	if rec.Status == ledger.StatusOK {
		c.longest = max(c.longest, lineSeconds(rec))
	}
}

// settled is the key before which a mark can wait no longer: no answer
// to come can have begun before it.
func (c *wallClock) settled() time.Time {
	return c.high.Add(-max(c.longest, minWindow) - windowSlack)
}

// addMark notes a mark of rec's target; marks before settled are placed.
func (t *wallTrack) addMark(rec *ledger.Record, seen bool, settled time.Time) {
	m := mark{key: recordEnd(rec), at: rec.Time, status: rec.Status, reason: rec.Reason,
		upstream: rec.ProviderRequestID, seen: seen}
	t.settle(settled)
	if m.key.Before(settled) {
		t.place(m)
		return
	}
	i := sort.Search(len(t.pending), func(i int) bool { return t.pending[i].key.After(m.key) })
	if i > 0 {
		// Answers of the gap it splits that began after it are its own.
		if p := &t.pending[i-1]; p.hasGap && p.gap.After(m.key) {
			m.gap, m.hasGap = p.gap, true
			p.hasGap = false
		}
	}
	t.pending = append(t.pending, mark{})
	copy(t.pending[i+1:], t.pending[i:])
	t.pending[i] = m
	t.settle(settled)
}

// addAnswer notes an answer of an attempt begun at a.
func (t *wallTrack) addAnswer(a time.Time, settled time.Time) {
	if i := sort.Search(len(t.pending), func(i int) bool { return !t.pending[i].key.Before(a) }); i > 0 {
		if p := &t.pending[i-1]; !p.hasGap || a.Before(p.gap) {
			p.gap, p.hasGap = a, true
		}
	}
	// The placed wall whose marks or whose end a falls within: the last
	// that began before it.
	i := sort.Search(len(t.walls), func(i int) bool { return !t.walls[i].first.key.Before(a) }) - 1
	if i >= 0 {
		w := &t.walls[i]
		if a.After(w.last.key) {
			if !w.closed || a.Before(w.end) {
				w.end, w.closed = a, true
			}
		} else {
			// An answer begun between two of the wall's marks, come after
			// both were placed (an attempt longer than any before): the
			// wall ended there. Which marks followed it is no longer
			// known: the rest of the wall begins at its last.
			rest := draft{first: w.last, last: w.last, end: w.end, closed: w.closed}
			w.last, w.end, w.closed = w.first, a, true
			t.walls = append(t.walls, draft{})
			copy(t.walls[i+2:], t.walls[i+1:])
			t.walls[i+1] = rest
		}
	}
	t.settle(settled)
}

// settle places the pending marks older than before, and the oldest
// past maxPending.
func (t *wallTrack) settle(before time.Time) {
	n := 0
	for n < len(t.pending) && (t.pending[n].key.Before(before) || len(t.pending)-n > maxPending) {
		t.place(t.pending[n])
		n++
	}
	if n > 0 {
		t.pending = append(t.pending[:0], t.pending[n:]...)
	}
}

// place puts m, no longer pending, into the walls.
func (t *wallTrack) place(m mark) {
	if n := len(t.walls); n > 0 {
		w := &t.walls[n-1]
		if !m.key.Before(w.last.key) {
			if w.closed && !w.end.After(m.key) {
				// An answer came between: a new wall.
				t.walls = append(t.walls, draft{first: m, last: m, end: m.gap, closed: m.hasGap})
				return
			}
			w.last = m
			if m.hasGap && (!w.closed || m.gap.Before(w.end)) {
				w.end, w.closed = m.gap, true
			}
			return
		}
		// A mark come after later ones were placed: lines out of the
		// order they were written in. It joins the first wall not ended
		// before it; whether an answer came between is no longer known.
		i := sort.Search(n, func(i int) bool { w := &t.walls[i]; return !w.closed || w.end.After(m.key) })
		if i < n {
			if w := &t.walls[i]; m.key.Before(w.first.key) {
				w.first = m
			} else if m.key.After(w.last.key) {
				w.last = m
			}
			return
		}
	}
	t.walls = append(t.walls, draft{first: m, last: m, end: m.gap, closed: m.hasGap})
}

// done returns the target's walls with every pending mark placed,
// leaving t as it was (a Summary can go on reading).
func (t *wallTrack) done() []draft {
	c := wallTrack{walls: append([]draft(nil), t.walls...)}
	for _, m := range t.pending {
		c.place(m)
	}
	return c.walls
}

// wall is d as a Report's Wall of target name; an open one runs to end,
// the report's end.
func (d *draft) wall(name string, end time.Time) Wall {
	w := Wall{Target: name, Start: d.first.at, Open: !d.closed, Status: d.first.status, Reason: d.first.reason,
		SeenComing: d.first.seen, UpstreamRequestID: d.first.upstream}
	stop := end
	if d.closed {
		e := d.end
		w.End, stop = &e, e
	}
	if stop.After(w.Start) {
		w.Seconds = stop.Sub(w.Start).Seconds()
	}
	return w
}
