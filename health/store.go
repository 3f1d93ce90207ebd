package health

import (
	"sync"
	"time"

	"github.com/detourhq/detour/classify"
)

// Entry is one target's breaker state: what a Store keeps per key and what
// Snapshot reports. It is a plain value with JSON tags, so a store may keep
// it as bytes.
type Entry struct {
	// Key is the target ("provider/model").
	Key string `json:"key"`
	// State is Closed, Open or HalfOpen. An Open entry whose Until has
	// passed is half-open in fact; Snapshot and Get report it so.
	State State `json:"state"`
	// Until is the end of the current (or last) park; zero when the target
	// was never parked or has closed since.
	Until time.Time `json:"until,omitzero"`
	// Since is when the key last left closed: the start of its run of
	// parks (parks and probes that fail in a row keep it); zero while
	// closed. `detour check` flags a route whose head has been parked
	// since long ago.
	Since time.Time `json:"since,omitzero"`
	// Reason is the one-line reason of the current (or last) park.
	Reason string `json:"reason,omitempty"`
	// Kind and Status are the failure kind and ledger status of the last
	// failure counted while the entry was not parked: what parked it, or
	// what last counted towards parking it. Cleared by a success.
	Kind   classify.Kind `json:"kind,omitempty"`
	Status string        `json:"status,omitempty"`
	// Failures counts consecutive failures (transient, unknown, wall); a
	// success resets it. Outcomes that are not the target's fault leave it.
	Failures int `json:"failures"`
	// Generation changes on every state change and every probe issued;
	// outcomes of permits from another generation are dropped.
	Generation uint64 `json:"generation"`
	// ProbeUntil is set while a half-open probe is out: until then no other
	// caller may probe. Zero when no probe is out.
	ProbeUntil time.Time `json:"probe_until,omitzero"`
	// Touched is when the breaker last wrote the entry; an entry nothing
	// holds (no park, no probe) that stays untouched for Settings.Forget
	// is dropped (Sweeper).
	Touched time.Time `json:"touched,omitzero"`
}

// forgettable reports whether e holds nothing the breaker still needs at
// now: forget has passed since its last write, the end of its park and
// the end of its probe, whichever came last. Until then an ended park
// still gives its one probe (half-open), however long the park was.
func forgettable(e Entry, now time.Time, forget time.Duration) bool {
	last := e.Touched
	for _, t := range []time.Time{e.Until, e.ProbeUntil} {
		if t.After(last) {
			last = t
		}
	}
	return !now.Before(last.Add(forget))
}

// Store keeps breaker entries: MemoryStore in this process, and the shared
// stores (health/sqlitestore for processes on one machine,
// health/redisstore for a fleet) implement the same two methods.
type Store interface {
	// Update calls fn with the entry stored under key (or a zero Entry when
	// there is none) and, when fn returns true, stores what fn left. Reading,
	// fn and writing are one atomic step with respect to every other Update
	// of the key, in this process and, for a shared store, in others. An
	// optimistic store may call fn again on conflict, with the entry read
	// afresh; only the last call counts, so fn must not rely on running once.
	Update(key string, fn func(e *Entry) (save bool)) error
	// Entries returns a copy of every stored entry, in any order.
	Entries() ([]Entry, error)
}

// Sweeper is a Store that can drop, in one pass, the entries drop
// selects: how the breaker forgets targets nobody asks for any more, so
// that a stream of names seen once leaves no state behind. A store
// without it keeps every entry.
type Sweeper interface {
	// Sweep removes every entry for which drop returns true and returns
	// how many it removed.
	Sweep(drop func(e Entry) bool) int
}

// Peeker is a Store that can also read one entry on its own, with no
// callback: the breaker's fast path for the common case, a key that is
// closed and clean, where Allow and a success's Done change nothing.
type Peeker interface {
	// Peek returns the entry stored under key, and whether there is one.
	Peek(key string) (Entry, bool)
}

// MemoryStore is a Store held in this process's memory. The zero value is
// ready to use; it is safe for concurrent use.
type MemoryStore struct {
	mu      sync.RWMutex     // guards entries, and makes each Update atomic
	entries map[string]Entry // by key
}

// Peek implements Peeker.
func (m *MemoryStore) Peek(key string) (Entry, bool) {
	m.mu.RLock()
	e, ok := m.entries[key]
	m.mu.RUnlock()
	return e, ok
}

// Update implements Store. fn runs with the store's lock held, once.
func (m *MemoryStore) Update(key string, fn func(e *Entry) bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[key]
	if fn(&e) {
		if m.entries == nil {
			m.entries = make(map[string]Entry)
		}
		m.entries[key] = e
	}
	return nil
}

// Sweep implements Sweeper.
func (m *MemoryStore) Sweep(drop func(e Entry) bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, e := range m.entries {
		if drop(e) {
			delete(m.entries, k)
			n++
		}
	}
	return n
}

// Len returns how many entries m holds.
func (m *MemoryStore) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.entries)
}

// Entries implements Store.
func (m *MemoryStore) Entries() ([]Entry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Entry, 0, len(m.entries))
	for _, e := range m.entries {
		out = append(out, e)
	}
	return out, nil
}

// Status is what a store says about itself: for /readyz, the
// detour_health_store_up metric and `detour check`.
type Status struct {
	// Kind names the store: "memory", "sqlite" or "redis".
	Kind string `json:"kind"`
	// Where is the store's file or address, with no password; empty for
	// memory.
	Where string `json:"where,omitempty"`
	// Up is false while a shared store cannot be used and the process
	// runs on its own memory instead (what it learns then is synced when
	// the store returns, where the store can).
	Up bool `json:"up"`
	// Detail says, in one line, why the store is down (or how it runs).
	Detail string `json:"detail,omitempty"`
}

// Reporter is a Store that can say how it is. A store without it is a
// memory store, always up.
type Reporter interface {
	Status() Status
}

// StoreStatus returns the status of b's store.
func (b *Breaker) StoreStatus() Status {
	if r, ok := b.store.(Reporter); ok {
		return r.Status()
	}
	return Status{Kind: "memory", Up: true}
}

// Store returns b's store.
func (b *Breaker) Store() Store { return b.store }
