package redisstore

import (
	"context"
	"strings"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/redis/go-redis/v9"
)

// Kept records (health.Records.Keep) are bounded by their class's ceiling
// across every replica: each class has an index in Redis, a sorted set of
// its kept keys by expiry (detour:NS:kept:CLASS idx), a hash of their
// sizes (... size) and their total (... bytes), changed only inside the
// scripts below, each one atomic step. Keep drops the class's expired
// entries, evicts the soonest to expire while the class would pass the
// ceiling, and adds its own; Claim, Put and Delete take their key out of
// the index in the same step as their write, so an eviction never drops a
// claim in flight or a value that was not kept. The index holds at most
// the ceiling's count of entries (its bytes bound them too), so it stays
// small; it has no expiry of its own. The scripts name the evicted
// records' keys from their index (not in KEYS), which a standalone Redis
// (what this store speaks to) allows and Redis Cluster does not.
//
// Redis's own maxmemory (allkeys-lru, say) is a second bound an operator
// may add; it is not relied on: with noeviction, Redis's default, writes
// would fail instead.

// keptKeys returns the record key of key and its class's index keys:
// the sorted set, the sizes and the total.
func (s *Store) keptKeys(key string) []string {
	base := strings.TrimSuffix(s.c.recPrefix, "rec:") + "kept:" + health.RecordClass(key)
	return []string{s.recKey(key), base + "idx", base + "size", base + "bytes"}
}

// keptDrop is the scripts' helper: it takes member out of the index.
const keptDrop = `
local function drop(m)
  local sz = redis.call('HGET', KEYS[3], m)
  if sz then
    redis.call('HDEL', KEYS[3], m)
    redis.call('DECRBY', KEYS[4], sz)
  end
  redis.call('ZREM', KEYS[2], m)
end
`

// claimScript: SET NX PX ARGV[1] for ARGV[2] ms; when set, ARGV[3] leaves
// the index and it returns {1}; else {0, what the key holds}.
var claimScript = redis.NewScript(keptDrop + `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  drop(ARGV[3])
  return {1}
end
return {0, redis.call('GET', KEYS[1])}
`)

// putScript: SET PX, out of the index.
var putScript = redis.NewScript(keptDrop + `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
drop(ARGV[3])
return 1
`)

// deleteScript: DEL, out of the index.
var deleteScript = redis.NewScript(keptDrop + `
redis.call('DEL', KEYS[1])
drop(ARGV[1])
return 1
`)

// keepScript keeps ARGV[1] under KEYS[1] for ARGV[2] ms as member ARGV[3]
// of the index, ARGV[4] bytes, at ARGV[5] (now, ms), within ARGV[6]
// records and ARGV[7] bytes (0: no cap); ARGV[8] is the prefix of the
// records' keys. It returns how many live records it evicted.
var keepScript = redis.NewScript(keptDrop + `
drop(ARGV[3])
local now, size = tonumber(ARGV[5]), tonumber(ARGV[4])
local maxn, maxb = tonumber(ARGV[6]), tonumber(ARGV[7])
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do
  drop(m)
  redis.call('DEL', ARGV[8] .. m)
end
local evicted = 0
while true do
  local n = redis.call('ZCARD', KEYS[2])
  local total = tonumber(redis.call('GET', KEYS[4]) or '0')
  if n == 0 or not ((maxn > 0 and n + 1 > maxn) or (maxb > 0 and total + size > maxb)) then break end
  local m = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  drop(m)
  evicted = evicted + redis.call('DEL', ARGV[8] .. m)
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3])
redis.call('HSET', KEYS[3], ARGV[3], size)
redis.call('INCRBY', KEYS[4], size)
return evicted
`)

// Keep implements health.Records in one script (keepScript), so the
// ceiling holds across replicas.
func (s *Store) Keep(key string, value []byte, ttl time.Duration, c health.Ceiling) (evicted int, err error) {
	size := int64(len(key) + len(value))
	if c.Bytes > 0 && size > c.Bytes {
		return s.local.Keep(key, value, ttl, c) // refused there, with the same error, without a write
	}
	ms := max(ttl.Milliseconds(), 1)
	if s.recCall(func(ctx context.Context) error {
		n, err := keepScript.Run(ctx, s.client, s.keptKeys(key), value, ms, key, size,
			s.c.now().UnixMilli(), c.Count, c.Bytes, s.c.recPrefix).Int()
		evicted = n
		return err
	}) {
		return evicted, nil
	}
	return s.local.Keep(key, value, ttl, c)
}
