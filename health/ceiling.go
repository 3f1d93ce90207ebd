package health

import (
	"container/heap"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Ceiling bounds one class of kept records (Records.Keep): the records
// whose keys share their RecordClass, such as the gateway's idempotency
// answers ("idem:") or the router's kept answers ("answer:"). Past it the
// records that expire soonest are evicted first: each class holds what a
// client sends, and without a ceiling a client that sends distinct keys
// grows the store without bound. The zero value is no ceiling.
type Ceiling struct {
	// Count caps how many kept records the class holds; 0 means no cap.
	Count int
	// Bytes caps the sum of their sizes (key plus value, in bytes); 0
	// means no cap.
	Bytes int64
}

// ErrOverCeiling means a value is larger on its own than its ceiling's
// Bytes: it is not kept (and nothing is evicted for it).
var ErrOverCeiling = errors.New("record is larger than its ceiling")

// RecordClass is the class of key among kept records: its text up to and
// including its first ':' ("idem:" of "idem:3f2a..."), or "" when it has
// none.
func RecordClass(key string) string {
	if i := strings.IndexByte(key, ':'); i >= 0 {
		return key[:i+1]
	}
	return ""
}

// over reports whether a class of n records of total bytes, plus one
// more of size, passes c.
func (c Ceiling) over(n int, total, size int64) bool {
	return (c.Count > 0 && n+1 > c.Count) || (c.Bytes > 0 && total+size > c.Bytes)
}

// tooLarge returns ErrOverCeiling, wrapped with the sizes, when a record
// of size cannot fit c even alone.
func (c Ceiling) tooLarge(key string, size int64) error {
	if c.Bytes > 0 && size > c.Bytes {
		return fmt.Errorf("%w: %d bytes under %q, ceiling %d bytes: raise the ceiling to keep such records",
			ErrOverCeiling, size, RecordClass(key), c.Bytes)
	}
	return nil
}

// keptClass is the kept records of one class, a min-heap by expiry, and
// the sum of their sizes.
type keptClass struct {
	recs  []*record
	bytes int64
}

func (k *keptClass) Len() int           { return len(k.recs) }
func (k *keptClass) Less(i, j int) bool { return k.recs[i].expires.Before(k.recs[j].expires) }
func (k *keptClass) Swap(i, j int) {
	k.recs[i], k.recs[j] = k.recs[j], k.recs[i]
	k.recs[i].idx, k.recs[j].idx = i, j
}

// Push adds x, a *record (heap.Interface).
func (k *keptClass) Push(x any) {
	r := x.(*record)
	r.idx = len(k.recs)
	k.recs = append(k.recs, r)
}

// Pop removes the last record (heap.Interface).
func (k *keptClass) Pop() any {
	n := len(k.recs) - 1
	r := k.recs[n]
	k.recs[n], k.recs = nil, k.recs[:n]
	return r
}

// size is what a record costs its class: its key and its value.
func (r *record) size() int64 { return int64(len(r.key) + len(r.val)) }

// unkeep takes r out of its class, if it is kept.
func (r *record) unkeep() {
	if c := r.class; c != nil {
		heap.Remove(c, r.idx)
		c.bytes -= r.size()
		r.class, r.idx = nil, -1
	}
}

// Keep implements Records: the class's kept records are a heap by
// expiry, so that each eviction takes the one that expires soonest
// (an expired one first, which is not counted as evicted).
func (m *MemoryRecords) Keep(key string, value []byte, ttl time.Duration, c Ceiling) (int, error) {
	size := int64(len(key) + len(value))
	if err := c.tooLarge(key, size); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.dropLocked(key)
	name := RecordClass(key)
	cls := m.kept[name]
	if cls == nil {
		if m.kept == nil {
			m.kept = make(map[string]*keptClass)
		}
		cls = &keptClass{}
		m.kept[name] = cls
	}
	evicted := 0
	for cls.Len() > 0 && c.over(cls.Len(), cls.bytes, size) {
		old := cls.recs[0]
		if now.Before(old.expires) {
			evicted++
		}
		m.dropLocked(old.key)
	}
	r := m.putLocked(key, value, ttl, now)
	r.class = cls
	heap.Push(cls, r)
	cls.bytes += r.size()
	return evicted, nil
}

// Kept returns how many kept records (Keep) of class m holds and their
// size in bytes, expired ones not yet dropped included.
func (m *MemoryRecords) Kept(class string) (n int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cls := m.kept[class]; cls != nil {
		return cls.Len(), cls.bytes
	}
	return 0, 0
}
