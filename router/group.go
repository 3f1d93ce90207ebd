package router

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/detourhq/detour/llm"
)

// How a group picks the member a request goes to first.
const (
	// PickWeighted draws the order at random, each member as likely to
	// come first as its weight says.
	PickWeighted = "weighted"
	// PickLeastBusy puts first the member with the fewest sends in flight,
	// counted in the health store's records (shared by every process on
	// the store).
	PickLeastBusy = "least_busy"
	// PickMostRoom puts first the member with the most room left in its
	// declared quotas' current windows.
	PickMostRoom = "most_room"
)

// Group is a set of equals in a chain: targets that may serve the same
// request at the same cost of a swap, used side by side rather than one
// after the other. Its members are consecutive in Route.Chain and share
// one *Group. A request goes to the member Pick puts first; a failure
// moves to the next member before the chain goes on. A request whose
// prompt prefix a member served recently goes back to it first (its
// provider's prompt cache is warm) while it is healthy and has room.
type Group struct {
	// Pick is PickWeighted (the default), PickLeastBusy or PickMostRoom.
	Pick string
	// Weights are PickWeighted's weights by member ID; a member not named
	// weighs 1.
	Weights map[string]float64
	// Affinity is how long a prompt prefix keeps going back to the member
	// that served it; 0 means DefaultAffinity, negative none.
	Affinity time.Duration
}

// DefaultAffinity is how long a prompt prefix sticks to the group member
// that served it: the life of the providers' prompt caches (five minutes
// at Anthropic and OpenAI, renewed on each hit), with room for a turn's
// think time.
const DefaultAffinity = 10 * time.Minute

// minAffinityChars is the shortest prefix (system prompt, tools, earlier
// turns) worth going back for: below about a thousand tokens no
// provider caches it.
const minAffinityChars = 4096

// busyTTL bounds a send's count in flight, should its process die before
// it ends.
const busyTTL = 10 * time.Minute

// busyKey is the records key of t's sends in flight.
func busyKey(t *Target) string { return "busy:" + t.ID() }

// affinityKey is the records key of the member that last served prefix
// hash h in route's group whose first member is at position at of its
// chain.
func affinityKey(route string, at int, h string) string {
	return "affinity:" + route + ":" + strconv.Itoa(at) + ":" + h
}

// prefixHash hashes what a provider's prompt cache keys on: the system
// prompt, the tools, and every message but the last; "" when that is too
// short to be cached.
func prefixHash(req *llm.Request) string {
	if req == nil || len(req.Messages) == 0 {
		return ""
	}
	h := sha256.New()
	n := 0
	write := func(s string) {
		n += len(s)
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, tl := range req.Tools {
		write(tl.Name)
		write(tl.Description)
		write(string(tl.Parameters))
	}
	for _, m := range req.Messages[:len(req.Messages)-1] {
		write(string(m.Role))
		write(m.Content)
		for _, p := range m.Parts {
			write(p.Text + p.URL + p.Data)
		}
		for _, tc := range m.ToolCalls {
			write(tc.Name + tc.Arguments)
		}
	}
	if n < minAffinityChars {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// pickGroups orders the members of each group in the walk's candidates for
// req, and notes why each came where it did (cand.pick).
func (w *walk) pickGroups(req *llm.Request) {
	c := &w.chain
	for i := 0; i < len(c.cands); {
		g := c.cands[i].Group
		j := i + 1
		for j < len(c.cands) && g != nil && c.cands[j].Group == g {
			j++
		}
		if g != nil && j-i > 1 {
			w.pickGroup(g, i, j, req)
		}
		i = j
	}
}

// pickGroup orders c.cands[i:j], the members of g.
func (w *walk) pickGroup(g *Group, i, j int, req *llm.Request) {
	c := &w.chain
	members := c.cands[i:j]
	now := w.clk.Now()
	score := make(map[*Target]float64, len(members))
	why := make(map[*Target]string, len(members))
	switch g.Pick {
	case PickLeastBusy:
		for _, t := range members {
			// A store that cannot answer reads as idle. The count lives
			// busyTTL from its first send, whatever came after: the -1
			// of a send in flight as it expired lands on a new count, so
			// a count below 0 reads as idle too.
			n, _ := w.r.records().Add(busyKey(t), 0, busyTTL)
			n = max(n, 0)
			score[t] = -n
			why[t] = fmt.Sprintf("least_busy: %.0f in flight", n)
		}
	case PickMostRoom:
		for _, t := range members {
			room := w.room01(t, req, now)
			score[t] = room
			why[t] = fmt.Sprintf("most_room: %.0f%% of its quota left", 100*room)
		}
	default:
		// Efraimidis-Spirakis: u^(1/w) orders a weighted draw without
		// replacement.
		for _, t := range members {
			wt := 1.0
			if v, ok := g.Weights[t.ID()]; ok {
				wt = v
			}
			if wt <= 0 {
				score[t], why[t] = -1, "weighted: weight 0"
				continue
			}
			u := max(w.r.jitter(), 1e-12)
			score[t] = math.Pow(u, 1/wt)
			why[t] = "weighted: weight " + strconv.FormatFloat(wt, 'g', -1, 64)
		}
	}
	sortMembers(members, score)
	if h := w.affine(g, req); h != "" {
		for k, t := range members {
			if t.ID() == h && w.parkOf(t, now) == nil && w.quotaVerdict(t, req, now).status == "" {
				copy(members[1:k+1], members[:k])
				members[0] = t
				why[t] = "affinity: served this prompt prefix last (its cache is warm)"
				break
			}
		}
	}
	for k, t := range members {
		c.cs[i+k].pick = why[t]
	}
}

// affine returns the member that last served req's prompt prefix in g,
// "" when none did recently.
func (w *walk) affine(g *Group, req *llm.Request) string {
	if g.Affinity < 0 {
		return ""
	}
	h := prefixHash(req)
	if h == "" {
		return ""
	}
	v, ok, err := w.r.records().Get(affinityKey(w.route.Name, w.groupAt(g), h))
	if err != nil || !ok {
		return ""
	}
	return string(v)
}

// served notes that t, a group member, answered req: the prefix goes back
// to it for the group's affinity.
func (w *walk) served(t *Target, req *llm.Request) {
	g := t.Group
	if g == nil || g.Affinity < 0 {
		return
	}
	h := prefixHash(req)
	if h == "" {
		return
	}
	ttl := g.Affinity
	if ttl == 0 {
		ttl = DefaultAffinity
	}
	_ = w.r.records().Put(affinityKey(w.route.Name, w.groupAt(g), h), []byte(t.ID()), ttl) // a lost note costs one cold cache
}

// room01 is the share of t's tightest declared window still free at now,
// from 0 to 1; 1 when it declares none.
func (w *walk) room01(t *Target, req *llm.Request, now time.Time) float64 {
	room := 1.0
	rec := w.r.records()
	for _, q := range t.Quotas {
		for _, win := range q.windows() {
			used, _ := readWindow(rec, q, win, now)
			if win.limit > 0 {
				room = min(room, max(0, float64(win.limit-used)/float64(win.limit)))
			}
		}
	}
	return room
}

// groupAt is the position of g's first member in the route's chain: the
// group's name in records keys, the same whatever --start rotated.
func (w *walk) groupAt(g *Group) int {
	for i := range w.route.Chain {
		if w.route.Chain[i].Group == g {
			return i
		}
	}
	return -1
}

// sortMembers orders members by score, highest first, keeping their
// order where scores tie.
func sortMembers(members []*Target, score map[*Target]float64) {
	slices.SortStableFunc(members, func(a, b *Target) int { return cmp.Compare(score[b], score[a]) })
}

// busy counts a send to t in flight, when t's group picks the least busy
// member, and returns the key to count it out with (permits.busy).
func (w *walk) busy(t *Target) string {
	if t.Group == nil || t.Group.Pick != PickLeastBusy {
		return ""
	}
	k := busyKey(t)
	if _, err := w.r.records().Add(k, 1, busyTTL); err != nil {
		return ""
	}
	return k
}

// atHead reports whether t is the walk's head: its first candidate, or a
// member of the group of equals the walk starts with, whichever member
// the group's pick put first (the eval gate exempts the head, and that
// must not depend on a draw).
func (w *walk) atHead(t *Target) bool {
	h := w.chain.cands[0]
	return t == h || t.Group != nil && t.Group == h.Group
}
