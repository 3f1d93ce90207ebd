package health

import (
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
	// Add adds delta to the number key holds (0 when it holds nothing,
	// and then it keeps the sum for ttl) and returns the sum: a counter,
	// such as a day's spend, atomic in this process and, for a shared
	// store, across processes.
	Add(key string, delta float64, ttl time.Duration) (float64, error)
}

// MemoryRecords are Records in this process's memory, safe for concurrent
// use; the zero value is ready. Now, when set, is the clock expiry reads
// (nil: time.Now). Expired values are dropped as later calls pass them.
type MemoryRecords struct {
	Now func() time.Time

	mu    sync.Mutex
	vals  map[string]record
	swept time.Time
}

// record is one value and when it expires.
type record struct {
	val     []byte
	expires time.Time
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
		delete(m.vals, key)
		return nil, false
	}
	return r.val, true
}

// putLocked stores a copy of value, and now and then sweeps.
func (m *MemoryRecords) putLocked(key string, value []byte, ttl time.Duration, now time.Time) {
	if m.vals == nil {
		m.vals = make(map[string]record)
	}
	if now.Sub(m.swept) >= recordSweepEvery {
		m.swept = now
		for k, r := range m.vals {
			if !now.Before(r.expires) {
				delete(m.vals, k)
			}
		}
	}
	m.vals[key] = record{val: append([]byte(nil), value...), expires: now.Add(ttl)}
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
	delete(m.vals, key)
	return nil
}

// Add implements Records.
func (m *MemoryRecords) Add(key string, delta float64, ttl time.Duration) (float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	sum := delta
	if v, ok := m.getLocked(key, now); ok {
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			sum += f
		}
		r := m.vals[key]
		r.val = strconv.AppendFloat(r.val[:0], sum, 'g', -1, 64)
		m.vals[key] = r
		return sum, nil
	}
	m.putLocked(key, strconv.AppendFloat(nil, sum, 'g', -1, 64), ttl, now)
	return sum, nil
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
