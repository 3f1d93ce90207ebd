package redisstore

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/health"
)

// decode reads an entry as Redis holds it: a JSON object. Anything else
// (garbage, another writer's value) reads as no entry at all.
func decode(raw string) (health.Entry, bool) {
	var e health.Entry
	if !strings.HasPrefix(strings.TrimLeft(raw, " \t\r\n"), "{") {
		return health.Entry{}, false
	}
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return health.Entry{}, false
	}
	return e, true
}

// encode returns e as Redis holds it.
func encode(e health.Entry) (string, error) {
	b, err := json.Marshal(e)
	return string(b), err
}

// lastNeeded is the latest time e still matters at: its last write, the
// end of its park or the end of its probe.
func lastNeeded(e health.Entry) time.Time {
	last := e.Touched
	for _, t := range []time.Time{e.Until, e.ProbeUntil} {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// ttl is how long Redis keeps e after a write: until forget has passed
// since lastNeeded, counted from e.Touched (the breaker stamps each write
// with its now), so that no two clocks are compared. An entry with no
// Touched counts from now.
func ttl(e health.Entry, forget time.Duration, now time.Time) time.Duration {
	if e.Touched.IsZero() {
		e.Touched = now
	}
	return lastNeeded(e).Add(forget).Sub(e.Touched)
}

// millis is d in whole milliseconds, rounded up, at least 1 (PX's unit).
func millis(d time.Duration) int64 {
	return max(1, int64((d+time.Millisecond-1)/time.Millisecond))
}

// newer reports whether in, another replica's write of a key, should
// replace cur in the local cache. A later generation wins; within one,
// the later (or equal) Touched. An earlier generation wins only when it
// was written after cur could be forgotten: the key was dropped and
// begun afresh.
func newer(in, cur health.Entry, forget time.Duration) bool {
	switch {
	case in.Generation > cur.Generation:
		return true
	case in.Generation == cur.Generation:
		return !in.Touched.Before(cur.Touched)
	}
	return !in.Touched.Before(lastNeeded(cur).Add(forget))
}

// merge returns what a key should hold when loc, written here while Redis
// was away, meets cur, what Redis (or another replica) holds: the entry
// that parks longer, else the one touched later. A park learned in an
// outage is never lost. When loc wins, its generation is moved past
// cur's, so permits of cur's generation are stale. changed reports
// whether the result differs from cur.
func merge(cur, loc health.Entry) (m health.Entry, changed bool) {
	ref := cur.Touched
	if loc.Touched.After(ref) {
		ref = loc.Touched
	}
	lp, cp := parkEnd(loc, ref), parkEnd(cur, ref)
	switch {
	case lp.After(cp):
	case cp.After(lp), !loc.Touched.After(cur.Touched):
		return cur, false
	}
	if loc.Generation <= cur.Generation {
		loc.Generation = cur.Generation + 1
	}
	return loc, true
}

// parkEnd is the end of e's park when it is still in force at ref; zero
// when e does not park.
func parkEnd(e health.Entry, ref time.Time) time.Time {
	if e.State == health.Open && e.Until.After(ref) {
		return e.Until
	}
	return time.Time{}
}

// originLen is the length of a store's origin: 16 hex digits.
const originLen = 16

// header is the head of a change message: origin, the key's length, the
// key. The script appends the entry's bytes. Keys may hold any byte.
func header(origin, key string) string {
	return origin + ":" + strconv.Itoa(len(key)) + ":" + key
}

// parseMessage splits a change message into the writer's origin, the key
// and the entry's bytes; ok is false for anything malformed.
func parseMessage(m string) (origin, key, raw string, ok bool) {
	if len(m) < originLen+1 || m[originLen] != ':' {
		return "", "", "", false
	}
	origin, rest := m[:originLen], m[originLen+1:]
	i := strings.IndexByte(rest, ':')
	if i < 1 || i > 10 {
		return "", "", "", false
	}
	n, err := strconv.Atoi(rest[:i])
	if err != nil || n < 0 || rest[0] < '0' || rest[0] > '9' || rest[0] == '0' && i > 1 || n > len(rest)-i-1 {
		return "", "", "", false
	}
	rest = rest[i+1:]
	return origin, rest[:n], rest[n:], true
}
