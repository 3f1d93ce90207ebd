package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/detourhq/detour/health"
)

// Store is a health.Store shared through Redis by gateway replicas. It
// also implements health.Peeker, health.Sweeper and health.Reporter. It
// is safe for concurrent use; Close it when done.
//
// Entries live under detour:NAMESPACE:health:KEY as JSON, expiring Forget
// after the last time they matter. Update is a compare-and-set Lua script
// that also publishes the entry on detour:NAMESPACE:health:changes; every
// replica applies those to a local cache, which Peek and Entries read, and
// reloads it in full at each (re)connection and every ResyncEvery. While
// Redis is down, Updates run on the local cache, and their entries are
// merged into Redis (the longer park wins) when it answers again.
type Store struct {
	c      config
	client *redis.Client
	ps     *redis.PubSub
	cas    *redis.Script
	origin string // this Store's mark on its change messages

	ctx      context.Context // canceled by Close
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	wake     chan struct{} // a buffered nudge to the background loop
	upSignal chan struct{} // a buffered nudge to the subscriber: up
	resync   atomic.Bool   // a full reload is wanted (a new subscription)
	closed   atomic.Bool
	up       atomic.Bool // written with reportMu held

	mu     sync.RWMutex
	items  map[string]item     // the local cache, by key
	dirty  map[string]struct{} // keys written here and not yet in Redis
	seq    uint64              // counts local cache changes
	detail string              // Status.Detail

	locks keyLocks
	local health.MemoryRecords // records while Redis cannot be used

	reportMu sync.Mutex // orders up/down changes, their log lines and OnChange
	reported int        // what was last reported: 0 nothing yet, 1 up, -1 down

	lastResync time.Time // background loop only
}

// item is one key in the local cache.
type item struct {
	e health.Entry // what this process holds for the key
	// raw is what Redis was last seen to hold for the key (the script's
	// expected value), when inRedis.
	raw     string
	inRedis bool
	seq     uint64 // the cache's seq when the item was last set
}

// Open returns a Store for opts. It fails only when opts cannot be used
// (a bad URL or namespace); an unreachable Redis is no error: the store
// starts down, serves from local memory, and connects in the background.
func Open(opts Options) (*Store, error) {
	c, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	var id [originLen / 2]byte
	_, _ = rand.Read(id[:])
	s := &Store{
		c:        c,
		client:   redis.NewClient(c.redis),
		cas:      redis.NewScript(casScript),
		origin:   hex.EncodeToString(id[:]),
		wake:     make(chan struct{}, 1),
		upSignal: make(chan struct{}, 1),
		items:    make(map[string]item),
		dirty:    make(map[string]struct{}),
		detail:   "connecting to " + c.display,
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.ps = s.client.Subscribe(s.ctx) // no channel yet: no network
	s.wg.Add(2)
	go s.run()
	go s.listen()
	return s, nil
}

// Close stops the background goroutines and closes the connections.
// Afterwards the store keeps serving from local memory only.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.cancel()
	_ = s.ps.Close()
	s.wg.Wait()
	s.reportMu.Lock()
	s.up.Store(false)
	s.mu.Lock()
	s.detail = "closed"
	s.mu.Unlock()
	s.reportMu.Unlock()
	return s.client.Close()
}

// Status implements health.Reporter: Kind "redis", Where host:port/db
// (never a password), Up false while Redis cannot be used.
func (s *Store) Status() health.Status {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return health.Status{Kind: "redis", Where: s.c.where, Up: s.up.Load(), Detail: s.detail}
}

// Peek implements health.Peeker from local memory only: it never waits on
// Redis.
func (s *Store) Peek(key string) (health.Entry, bool) {
	s.mu.RLock()
	it, ok := s.items[key]
	s.mu.RUnlock()
	return it.e, ok
}

// Entries implements health.Store from local memory only: the entries
// this replica knows, kept fresh by pub/sub and resyncs.
func (s *Store) Entries() ([]health.Entry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]health.Entry, 0, len(s.items))
	for _, it := range s.items {
		out = append(out, it.e)
	}
	return out, nil
}

// Sweep implements health.Sweeper on local memory: Redis drops the same
// entries itself, as they expire.
func (s *Store) Sweep(drop func(e health.Entry) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, it := range s.items {
		if drop(it.e) {
			delete(s.items, k)
			delete(s.dirty, k)
			n++
		}
	}
	return n
}

// live reports whether Updates go to Redis.
func (s *Store) live() bool { return s.up.Load() && !s.closed.Load() }

// nudge wakes the background loop, unless it is already due to wake.
func (s *Store) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// setLocked stores it under key; s.mu must be held.
func (s *Store) setLocked(key string, it item) {
	s.seq++
	it.seq = s.seq
	s.items[key] = it
}

// learn records in the local cache what Redis was just seen to hold for
// key (inRedis false: nothing usable). seq0 is the item's seq when the
// caller read it: when the item changed since, in is kept only if it is
// newer. A key with local changes not yet pushed is left alone unless
// pushed says this is their push.
func (s *Store) learn(key string, e health.Entry, raw string, inRedis bool, seq0 uint64, pushed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, d := s.dirty[key]; d {
		if !pushed {
			return
		}
		delete(s.dirty, key)
	}
	cur, have := s.items[key]
	if have && cur.seq != seq0 && (!inRedis || !newer(e, cur.e, s.c.forget)) {
		return
	}
	switch {
	case inRedis:
		s.setLocked(key, item{e: e, raw: raw, inRedis: true})
	case have:
		delete(s.items, key)
		s.seq++
	}
}
