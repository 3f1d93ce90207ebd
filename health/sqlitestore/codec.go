package sqlitestore

import (
	"encoding/json"
	"math"
	"time"

	"github.com/detourhq/detour/health"
)

// decode reads a row's entry bytes. A row that does not decode is treated
// as absent (the next write under its key, or a sweep, replaces it) and
// logged, once per key and Store.
func (s *Store) decode(key string, b []byte) (health.Entry, bool) {
	var e health.Entry
	if err := json.Unmarshal(b, &e); err != nil {
		if _, seen := s.corrupt.LoadOrStore(key, true); !seen {
			s.log.Warn("health store: corrupt row read as absent", "file", s.path, "key", key, "err", err)
		}
		return health.Entry{}, false
	}
	return e, true
}

// expires returns when (Unix ns) e's row holds nothing the breaker needs:
// Forget after its last write, park end or probe end, whichever came last.
// The write itself counts at wrote, so an entry with no times (or times
// from a caller's fake clock in the past) is kept Forget after it was
// written.
func (s *Store) expires(e health.Entry, wrote time.Time) int64 {
	last := wrote
	for _, t := range []time.Time{e.Touched, e.Until, e.ProbeUntil} {
		if t.After(last) {
			last = t
		}
	}
	return unixNano(last.Add(s.opts.Forget))
}

// unixNano is t.UnixNano, clamped to the int64 range where t is outside it.
func unixNano(t time.Time) int64 {
	switch {
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	}
	return t.UnixNano()
}
