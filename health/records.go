package health

import (
	"errors"
	"strconv"
	"sync"
	"time"
)

// Records keep small values under keys until they expire: what must hold
// across requests (and, in a shared store, across processes) beside the
// breaker's entries. The gateway's idempotency records live here. A shared
// store implements it too (health/redisstore), so a key's record holds
// across replicas.
type Records interface {
	// Claim stores value under key for ttl when key holds nothing, and
	// reports true; otherwise it stores nothing and returns what key
	// holds. One Claim of a key wins, in this process and, for a shared
	// store, in every other.
	Claim(key string, value []byte, ttl time.Duration) (held []byte, claimed bool, err error)
	// Put stores value under key for ttl, whatever key held.
	Put(key string, value []byte, ttl time.Duration) error
	// Get returns what key holds, and false when it holds nothing.
	Get(key string) ([]byte, bool, error)
	// Delete drops key's value.
	Delete(key string) error
	// Keep stores value under key for ttl, as Put does, as one of the
	// kept records of key's class (RecordClass) that c bounds: to stay
	// within c it first evicts other kept records of the class, the
	// soonest to expire first, and returns how many live ones it evicted.
	// Only kept records are ever evicted: a Claim (a request in flight),
	// a Put or an Add never is, and a Claim, Put or Delete of key takes
	// it out of its class. A value that alone is larger than c.Bytes is
	// not kept (ErrOverCeiling); a zero field of c is no cap.
	Keep(key string, value []byte, ttl time.Duration, c Ceiling) (evicted int, err error)
	// Add adds delta to the number key holds (0 when it holds nothing,
	// and then it keeps the sum for ttl) and returns the sum: a counter,
	// such as a day's spend, atomic in this process and, for a shared
	// store, across processes.
	Add(key string, delta float64, ttl time.Duration) (float64, error)
	// Reserve adds amount (at least 0) to the number key holds, as Add
	// does, only when the sum with it stays within limit (ReserveSlack
	// past it at most), and reports whether it did: sum is the new sum
	// when it did, else what key holds, untouched. Check and add are one
	// step, atomic in this process and, for a shared store, across
	// processes: of reservers racing for the last room under one limit,
	// only as many as fit get it. An Add of a negative delta gives room
	// back (a send settling what it reserved to what it cost). A shared
	// store that cannot reach what it shares reserves nothing and returns
	// ErrUnreachable.
	Reserve(key string, amount, limit float64, ttl time.Duration) (sum float64, ok bool, err error)
}

// ErrUnreachable is Reserve's error from a shared store that cannot reach
// what it shares (Redis down, a SQLite file given up for memory). It
// reserves nothing rather than in this process's memory: a reservation
// held there would be settled in the shared store once it is back, and
// take from its count what was never added to it.
var ErrUnreachable = errors.New("health: the shared store cannot be reached")

// ReserveSlack is how far past its limit a Reserve's sum may land and
// still be within it: sums of decimal amounts are not exact in floating
// point (0.02 added 25 times is not 0.5), and a billionth of a dollar is
// no money.
const ReserveSlack = 1e-9

// MemoryRecords are Records in this process's memory, safe for concurrent
// use; the zero value is ready. Now, when set, is the clock expiry reads
// (nil: time.Now). Expired values are dropped as later calls pass them.
// Kept records (Keep) are counted per class, so a ceiling costs one heap
// operation per record.
type MemoryRecords struct {
	Now func() time.Time

	mu    sync.Mutex // guards vals, kept and swept
	vals  map[string]*record
	kept  map[string]*keptClass // by RecordClass
	swept time.Time
}

// record is one value and when it expires; a kept one (Keep) is in its
// class's heap at idx.
type record struct {
	key     string
	val     []byte
	expires time.Time
	class   *keptClass
	idx     int
}

// recordSweepEvery is how often, at most, MemoryRecords drops every
// expired value in one pass.
const recordSweepEvery = time.Minute

func (m *MemoryRecords) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// getLocked returns key's live value, dropping an expired one.
func (m *MemoryRecords) getLocked(key string, now time.Time) ([]byte, bool) {
	r, ok := m.vals[key]
	if !ok {
		return nil, false
	}
	if !now.Before(r.expires) {
		m.dropLocked(key)
		return nil, false
	}
	return r.val, true
}

// putLocked stores a copy of value, and now and then sweeps; it returns
// the new record.
func (m *MemoryRecords) putLocked(key string, value []byte, ttl time.Duration, now time.Time) *record {
	if m.vals == nil {
		m.vals = make(map[string]*record)
	}
	if now.Sub(m.swept) >= recordSweepEvery {
		m.swept = now
		for k, r := range m.vals {
			if !now.Before(r.expires) {
				m.dropLocked(k)
			}
		}
	}
	m.dropLocked(key)
	r := &record{key: key, val: append([]byte(nil), value...), expires: now.Add(ttl), idx: -1}
	m.vals[key] = r
	return r
}

// dropLocked drops key's value, out of its class when it was kept.
func (m *MemoryRecords) dropLocked(key string) {
	if r, ok := m.vals[key]; ok {
		r.unkeep()
		delete(m.vals, key)
	}
}

// Claim implements Records.
func (m *MemoryRecords) Claim(key string, value []byte, ttl time.Duration) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if v, ok := m.getLocked(key, now); ok {
		return append([]byte(nil), v...), false, nil
	}
	m.putLocked(key, value, ttl, now)
	return nil, true, nil
}

// Put implements Records.
func (m *MemoryRecords) Put(key string, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putLocked(key, value, ttl, m.now())
	return nil
}

// Get implements Records.
func (m *MemoryRecords) Get(key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.getLocked(key, m.now())
	return append([]byte(nil), v...), ok, nil
}

// Delete implements Records.
func (m *MemoryRecords) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(key)
	return nil
}

// Add implements Records.
func (m *MemoryRecords) Add(key string, delta float64, ttl time.Duration) (float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	sum := m.sumLocked(key, now) + delta
	m.setSumLocked(key, sum, ttl, now)
	return sum, nil
}

// Reserve implements Records under m's lock.
func (m *MemoryRecords) Reserve(key string, amount, limit float64, ttl time.Duration) (float64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	sum := m.sumLocked(key, now)
	if sum+amount > limit+ReserveSlack {
		return sum, false, nil
	}
	sum += amount
	m.setSumLocked(key, sum, ttl, now)
	return sum, true, nil
}

// sumLocked is the number key holds at now: 0 when it holds nothing (or
// no number).
func (m *MemoryRecords) sumLocked(key string, now time.Time) float64 {
	if v, ok := m.getLocked(key, now); ok {
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return f
		}
	}
	return 0
}

// setSumLocked stores sum under key: in its live record, whose expiry
// stands, or else in a new one for ttl.
func (m *MemoryRecords) setSumLocked(key string, sum float64, ttl time.Duration, now time.Time) {
	if r, ok := m.vals[key]; ok && now.Before(r.expires) {
		r.unkeep() // a counter is never evicted
		r.val = strconv.AppendFloat(r.val[:0], sum, 'g', -1, 64)
		return
	}
	m.putLocked(key, strconv.AppendFloat(nil, sum, 'g', -1, 64), ttl, now)
}

// Len returns how many values m holds, expired ones not yet dropped
// included.
func (m *MemoryRecords) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.vals)
}

// RecordsOf returns the Records of b's store when it keeps them (a
// shared store), else nil.
func (b *Breaker) RecordsOf() Records {
	r, _ := b.store.(Records)
	return r
}
