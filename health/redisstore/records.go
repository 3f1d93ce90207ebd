package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/redis/go-redis/v9"
)

// The Store implements health.Records: values under detour:NS:rec:KEY with
// Redis's own expiry, so a record holds across replicas. While Redis
// cannot be used, records live in this process's memory (s.local) and
// hold for this replica alone; they are not pushed when Redis returns
// (a record is short-lived, and the first replica's may be there).

// recKey is key's record in Redis.
func (s *Store) recKey(key string) string { return s.c.recPrefix + key }

// recCall runs f against Redis within OpTimeout when Redis is up, and
// reports false (after marking the store down on a failure of Redis
// itself) when the caller must use local memory instead.
func (s *Store) recCall(f func(ctx context.Context) error) bool {
	if !s.live() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.c.opTimeout)
	defer cancel()
	if err := f(ctx); err != nil {
		s.markDown(err)
		return false
	}
	return true
}

// Claim implements health.Records with SET NX PX, and takes key out of
// its class's kept index in the same step (claimScript), so that no
// eviction can drop the claim of a request in flight.
func (s *Store) Claim(key string, value []byte, ttl time.Duration) (held []byte, claimed bool, err error) {
	if s.recCall(func(ctx context.Context) error {
		res, err := claimScript.Run(ctx, s.client, s.keptKeys(key), value, max(ttl.Milliseconds(), 1), key).Slice()
		if err != nil {
			return err
		}
		if claimed = len(res) > 0 && res[0] == int64(1); !claimed && len(res) > 1 {
			if v, ok := res[1].(string); ok { // a false (expired in between) is nil: claim again next time
				held = []byte(v)
			}
		}
		return nil
	}) {
		return held, claimed, nil
	}
	return s.local.Claim(key, value, ttl)
}

// Put implements health.Records with SET PX, out of key's kept index.
func (s *Store) Put(key string, value []byte, ttl time.Duration) error {
	if s.recCall(func(ctx context.Context) error {
		return putScript.Run(ctx, s.client, s.keptKeys(key), value, max(ttl.Milliseconds(), 1), key).Err()
	}) {
		return nil
	}
	return s.local.Put(key, value, ttl)
}

// Get implements health.Records.
func (s *Store) Get(key string) (val []byte, found bool, err error) {
	if s.recCall(func(ctx context.Context) error {
		val, err = s.client.Get(ctx, s.recKey(key)).Bytes()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		found = err == nil
		return err
	}) {
		return val, found, nil
	}
	return s.local.Get(key)
}

// Delete implements health.Records, out of key's kept index too.
func (s *Store) Delete(key string) error {
	s.local.Delete(key) //nolint:errcheck // memory: never fails
	s.recCall(func(ctx context.Context) error {
		return deleteScript.Run(ctx, s.client, s.keptKeys(key), key).Err()
	})
	return nil
}

// addScript adds ARGV[1] to KEYS[1] and gives a new key an expiry of
// ARGV[2] ms, in one step.
var addScript = redis.NewScript(`
local v = redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v
`)

// Add implements health.Records with INCRBYFLOAT.
func (s *Store) Add(key string, delta float64, ttl time.Duration) (sum float64, err error) {
	if s.recCall(func(ctx context.Context) error {
		v, err := addScript.Run(ctx, s.client, []string{s.recKey(key)},
			strconv.FormatFloat(delta, 'g', -1, 64), ttl.Milliseconds()).Text()
		if err != nil {
			return err
		}
		sum, err = strconv.ParseFloat(v, 64)
		return err
	}) {
		return sum, nil
	}
	return s.local.Add(key, delta, ttl)
}

// reserveScript adds ARGV[1] to KEYS[1] when the sum stays within ARGV[2]
// (the limit with health.ReserveSlack), giving a new key an expiry of
// ARGV[3] ms, in one step: Redis runs a script alone, so no replica reads
// the sum between the check and the add. It returns {1, the new sum} or
// {0, the sum as it is}, sums as strings (a Lua number would come back
// an integer).
var reserveScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1]) or '0'
if (tonumber(cur) or 0) + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return {0, cur} end
local v = redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {1, v}
`)

// Reserve implements health.Records with reserveScript. While Redis
// cannot be used it reserves nothing (health.ErrUnreachable).
func (s *Store) Reserve(key string, amount, limit float64, ttl time.Duration) (sum float64, ok bool, err error) {
	if s.recCall(func(ctx context.Context) error {
		res, err := reserveScript.Run(ctx, s.client, []string{s.recKey(key)}, strconv.FormatFloat(amount, 'g', -1, 64),
			strconv.FormatFloat(limit+health.ReserveSlack, 'g', -1, 64), max(ttl.Milliseconds(), 1)).Slice()
		if err != nil {
			return err
		}
		if len(res) != 2 {
			return fmt.Errorf("redisstore: the reserve script answered %v", res)
		}
		ok = res[0] == int64(1)
		v, _ := res[1].(string)
		if sum, err = strconv.ParseFloat(v, 64); err != nil {
			sum = 0 // not a number: INCRBYFLOAT refused it, or GET read one that is not
		}
		return nil
	}) {
		return sum, ok, nil
	}
	return 0, false, health.ErrUnreachable
}
