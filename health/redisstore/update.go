package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/detourhq/detour/health"
)

// casScript compares KEYS[1] with what the caller read and, when it is
// the same, writes the caller's new value (if any) with its expiry and
// publishes it, all in one step. Otherwise it returns what the key holds.
//
// KEYS[2] is the key's lease: a writer that lost twice claims it (when it
// loses again), and until that writer writes (or the lease expires), no
// one else may write the key. Without it, a replica whose writers follow
// each other with a fresh cache would win every race against a replica
// that must first learn what changed.
//
//	ARGV[1] what was read: "0" no key, "1" a string, "2" another type
//	ARGV[2] the string read ("" unless "1")
//	ARGV[3] the new value, "" to write nothing
//	ARGV[4] its expiry in ms; ARGV[5] the channel; ARGV[6] the message head
//	ARGV[7] the writer's lease token, "" to claim none; ARGV[8] its expiry in ms
//
// It returns {1} when it matched (and wrote), else {0, state, string}.
const casScript = `
local ok, cur = pcall(redis.call, 'GET', KEYS[1])
local st = '1'
if not ok then st, cur = '2', '' elseif not cur then st, cur = '0', '' end
local match = st == ARGV[1] and cur == ARGV[2]
if ARGV[3] == '' then
  if match then return {1} end
  return {0, st, cur}
end
local lease = redis.call('GET', KEYS[2])
if lease and lease ~= ARGV[7] then return {0, st, cur} end
if not match then
  if ARGV[7] ~= '' then redis.call('SET', KEYS[2], ARGV[7], 'PX', ARGV[8]) end
  return {0, st, cur}
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
if lease then redis.call('DEL', KEYS[2]) end
redis.call('PUBLISH', ARGV[5], ARGV[6] .. ARGV[3])
return {1}
`

// maxAttempts is how many times an Update tries its compare-and-set
// before it gives up on a key too busy to write.
const maxAttempts = 10

var (
	// errConflict: the key changed under every attempt.
	errConflict = errors.New("the key changed under each of 10 attempts")
	// errWrite stops a lock-free attempt whose fn wants to write.
	errWrite = errors.New("fn wants to write")
	// errEncode: fn left an entry JSON cannot hold.
	errEncode = errors.New("entry cannot be encoded")
)

// Update implements health.Store. While Redis is up, fn runs on the entry
// Redis holds and its result is written with a compare-and-set, tried
// again (fn with it) when another writer got there first; an fn that
// writes nothing is checked against Redis the same way. While Redis is
// down, or when it fails now, fn runs on local memory, and the change is
// pushed (merged) when Redis is back. The whole call is bounded by
// Options.OpTimeout.
func (s *Store) Update(key string, fn func(e *health.Entry) (save bool)) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.c.opTimeout)
	defer cancel()
	if s.live() {
		// Most calls write nothing (a parked key refused): check the read
		// against Redis with no lock; only writers queue for the key.
		err := s.compareAndSet(ctx, key, fn, modeRead)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, errWrite):
			if !s.outage(err) {
				return fmt.Errorf("redisstore: %w", err)
			}
		}
	}
	unlock, err := s.locks.lock(ctx, key)
	if err != nil {
		return fmt.Errorf("redisstore: %q: other updates of the key held it past %s", key, s.c.opTimeout)
	}
	defer unlock()
	if s.live() {
		err := s.push(ctx, key)
		if err == nil {
			err = s.compareAndSet(ctx, key, fn, modeWrite)
		}
		switch {
		case err == nil:
			return nil
		case !s.outage(err):
			return fmt.Errorf("redisstore: %w", err)
		}
	}
	return s.applyLocal(key, fn)
}

// outage reports whether err means Redis cannot be used, and if so marks
// the store down. A conflict or an entry that cannot be encoded is the
// call's own trouble, not the store's.
func (s *Store) outage(err error) bool {
	if errors.Is(err, errConflict) || errors.Is(err, errEncode) {
		return false
	}
	s.markDown(err)
	return true
}

// applyLocal runs fn on key's entry in local memory and keeps a written
// entry as a local change, to push when Redis answers. The key's lock
// must be held.
func (s *Store) applyLocal(key string, fn func(e *health.Entry) bool) error {
	changed, err := s.applyLocked(key, fn)
	if changed && s.up.Load() { // Redis came back meanwhile: push it now
		s.nudge()
	}
	return err
}

// applyLocked is applyLocal's work under s.mu.
func (s *Store) applyLocked(key string, fn func(e *health.Entry) bool) (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[key]
	e := it.e
	if !fn(&e) {
		return false, nil
	}
	if _, err := encode(e); err != nil {
		return false, fmt.Errorf("redisstore: %w: %v", errEncode, err)
	}
	it.e = e
	s.setLocked(key, it)
	s.dirty[key] = struct{}{}
	return true, nil
}

// mode is how compareAndSet runs.
type mode int

const (
	modeRead  mode = iota // stop with errWrite as soon as fn wants to write
	modeWrite             // the key's lock is held
	modePush              // the key's lock is held; the write pushes a local change
)

// compareAndSet runs fn on key's entry in Redis and writes what fn left,
// as one atomic step (casScript). It starts from the local cache's copy
// of Redis's bytes, which saves a read when it is fresh; when it is not,
// the script answers with the fresh bytes and fn runs again on them.
func (s *Store) compareAndSet(ctx context.Context, key string, fn func(e *health.Entry) bool, m mode) error {
	s.mu.RLock()
	it, have := s.items[key]
	_, dirty := s.dirty[key]
	s.mu.RUnlock()
	if dirty && m == modeRead {
		return errWrite // a local change to push first, under the key's lock
	}
	st, raw := "0", ""
	if have && it.inRedis {
		st, raw = "1", it.raw
	}
	keys := []string{s.c.prefix + key, s.c.leasePrefix + key}
	token, lease := "", millis(s.c.opTimeout)
	for attempt := range maxAttempts {
		if attempt >= 2 {
			if backoff(ctx, attempt) != nil {
				return errConflict // busy, not down: Redis answered each time
			}
			token = s.origin // the key's lock makes this Store its only writer here
		}
		e, inRedis := health.Entry{}, false
		if st == "1" {
			e, inRedis = decode(raw)
		}
		save := fn(&e)
		if save && m == modeRead {
			return errWrite
		}
		var val string
		var px int64
		if save {
			var err error
			if val, err = encode(e); err != nil {
				return fmt.Errorf("%w: %v", errEncode, err)
			}
			px = millis(ttl(e, s.c.forget, s.c.now()))
		}
		res, err := s.cas.Run(ctx, s.client, keys, st, raw, val, px, s.c.channel, header(s.origin, key), token, lease).Slice()
		if err != nil {
			return err
		}
		if len(res) == 1 {
			if save {
				s.learn(key, e, val, true, it.seq, m == modePush)
			} else {
				s.learn(key, e, raw, inRedis, it.seq, m == modePush)
			}
			return nil
		}
		if len(res) != 3 {
			return fmt.Errorf("the script answered %v", res)
		}
		st, _ = res[1].(string)
		raw, _ = res[2].(string)
	}
	return errConflict
}

// backoff waits a little, more after each conflict, so that writers of
// one busy key take turns.
func backoff(ctx context.Context, attempt int) error {
	t := time.NewTimer(time.Duration(rand.Int64N(int64(attempt) * int64(100*time.Microsecond))))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// push writes key's local change, if it has one, into Redis: as it is
// when Redis holds no entry, merged with Redis's entry otherwise (the
// longer park wins, else the later write). The key's lock must be held.
func (s *Store) push(ctx context.Context, key string) error {
	s.mu.RLock()
	_, d := s.dirty[key]
	loc, have := s.items[key]
	s.mu.RUnlock()
	if !d {
		return nil
	}
	if !have {
		s.mu.Lock() // swept meanwhile
		delete(s.dirty, key)
		s.mu.Unlock()
		return nil
	}
	return s.compareAndSet(ctx, key, func(e *health.Entry) bool {
		if *e == (health.Entry{}) {
			*e = loc.e
			return true
		}
		var changed bool
		*e, changed = merge(*e, loc.e)
		return changed
	}, modePush)
}
