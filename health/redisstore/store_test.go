package redisstore

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/detourhq/detour/health"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// rawClient is a plain go-redis client on addr, to look at Redis directly.
func rawClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// rawEntry reads key of s's namespace straight from Redis.
func rawEntry(t testing.TB, c *redis.Client, s *Store, key string) (health.Entry, bool) {
	t.Helper()
	v, err := c.Get(context.Background(), s.c.prefix+key).Result()
	if err == redis.Nil {
		return health.Entry{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var e health.Entry
	if err := json.Unmarshal([]byte(v), &e); err != nil {
		t.Fatalf("Redis holds %q under %s: %v", v, key, err)
	}
	return e, true
}

var _ interface {
	health.Store
	health.Peeker
	health.Sweeper
	health.Reporter
} = (*Store)(nil)

// Two Store values are two replicas: their Updates of one key never lose
// an increment.
func TestUpdateAtomicAcrossStores(t *testing.T) {
	addr, _, _ := startRedis(t)
	o := Options{OpTimeout: 5 * time.Second} // atomicity, not speed, under -race
	stores := []*Store{open(t, addr, o, true), open(t, addr, o, true)}
	const key, workers, each = "openai/gpt-4o", 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for range each {
				errs <- stores[w%2].Update(key, func(e *health.Entry) bool {
					e.Key = key
					e.Failures++
					return true
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	if e, _ := rawEntry(t, rawClient(t, addr), stores[0], key); e.Failures != workers*each {
		t.Fatalf("Redis holds %d failures, want %d", e.Failures, workers*each)
	}
	for i, s := range stores {
		var got int
		if err := s.Update(key, func(e *health.Entry) bool { got = e.Failures; return false }); err != nil {
			t.Fatal(err)
		}
		if got != workers*each {
			t.Errorf("store %d: Update read %d failures, want %d", i, got, workers*each)
		}
	}
}

// Redis keeps an entry until Forget past the last of its write, park and
// probe, counted from its Touched.
func TestExpiry(t *testing.T) {
	addr, _, _ := startRedis(t)
	s := open(t, addr, Options{Forget: 10 * time.Minute}, true)
	c := rawClient(t, addr)
	cases := []struct {
		key  string
		e    health.Entry
		want time.Duration
	}{
		{"closed", health.Entry{State: health.Closed, Generation: 1, Touched: t0}, 10 * time.Minute},
		{"parked", health.Entry{State: health.Open, Generation: 2, Touched: t0, Until: t0.Add(time.Hour)}, 70 * time.Minute},
		{"probing", health.Entry{State: health.HalfOpen, Generation: 3, Touched: t0, Until: t0.Add(-time.Minute),
			ProbeUntil: t0.Add(2 * time.Minute)}, 12 * time.Minute},
		{"a key: with spaces, \x00 and \xff", health.Entry{State: health.Closed, Generation: 1, Touched: t0}, 10 * time.Minute},
	}
	for _, tc := range cases {
		if err := s.Update(tc.key, func(e *health.Entry) bool { *e = tc.e; return true }); err != nil {
			t.Fatal(err)
		}
		got, err := c.PTTL(context.Background(), s.c.prefix+tc.key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got > tc.want || got < tc.want-2*time.Second {
			t.Errorf("%q: PTTL %s, want %s", tc.key, got, tc.want)
		}
		if e, ok := rawEntry(t, c, s, tc.key); !ok || e.Generation != tc.e.Generation {
			t.Errorf("%q: Redis holds %+v, %v", tc.key, e, ok)
		}
	}
}

func TestOpenRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "no URL"},
		{Options{URL: "http://host:6379"}, "redis://"},
		{Options{URL: "redis://:s3cret@host:notaport/0"}, "redis://host:6379/0"},
		{Options{URL: "redis://:s3cret@host:6379/zero"}, "redis://host:6379/0"},
		{Options{URL: "redis://host:6379/0", Namespace: "a:b"}, "namespace"},
		{Options{URL: "redis://host:6379/0", Namespace: strings.Repeat("n", 65)}, "namespace"},
		{Options{URL: "redis://host:6379/0", OpTimeout: -time.Second}, "OpTimeout"},
	} {
		s, err := Open(tc.o)
		if err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", tc.o)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%+v) = %q, want it to mention %q and no password", tc.o, err, tc.want)
		}
	}
}

// An unreachable server is no error: the store starts down and works
// from local memory, and Status names the server with no password.
func TestOpenUnreachable(t *testing.T) {
	ln := freeAddr(t)
	var logs logBuffer
	var changes []bool
	var mu sync.Mutex
	s := open(t, "", Options{URL: "redis://:s3cret@" + ln + "/2", Password: "other", Logger: logs.logger(),
		OnChange: func(up bool) { mu.Lock(); changes = append(changes, up); mu.Unlock() }}, false)
	eventually(t, "a warning", func() bool { return strings.Contains(logs.String(), "unreachable") })
	st := s.Status()
	if st.Up || st.Kind != "redis" || st.Where != ln+"/2" || st.Detail == "" {
		t.Errorf("Status() = %+v", st)
	}
	if strings.Contains(logs.String()+st.Detail, "s3cret") || strings.Contains(logs.String(), "other") {
		t.Errorf("a password leaked: %s %s", logs.String(), st.Detail)
	}
	start := time.Now()
	if err := s.Update("k", func(e *health.Entry) bool { e.Failures = 7; return true }); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Millisecond {
		t.Errorf("Update while down took %s", d)
	}
	if e, ok := s.Peek("k"); !ok || e.Failures != 7 {
		t.Errorf("Peek = %+v, %v", e, ok)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 1 || changes[0] {
		t.Errorf("OnChange calls: %v, want [false]", changes)
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Writes that bypass pub/sub (another tool, an expiry) reach the local
// cache with the next full reload; a value that is not an entry, or not a
// string, reads as no entry and is overwritten.
func TestResyncAndForeignValues(t *testing.T) {
	addr, _, _ := startRedis(t)
	s := open(t, addr, Options{ResyncEvery: 20 * time.Millisecond}, true)
	c := rawClient(t, addr)
	ctx := context.Background()
	raw, _ := encode(health.Entry{Key: "x", State: health.Open, Until: t0, Generation: 4, Touched: t0})
	if err := c.Set(ctx, s.c.prefix+"x", raw, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reload to bring x", func() bool { e, ok := s.Peek("x"); return ok && e.Generation == 4 })
	c.Del(ctx, s.c.prefix+"x")
	eventually(t, "the reload to drop x", func() bool { _, ok := s.Peek("x"); return !ok })

	c.Set(ctx, s.c.prefix+"garbage", "not json", time.Minute)
	c.HSet(ctx, s.c.prefix+"hash", "f", "v")
	for _, k := range []string{"garbage", "hash"} {
		var seen health.Entry
		err := s.Update(k, func(e *health.Entry) bool { seen = *e; e.Failures = 1; return true })
		if err != nil || seen != (health.Entry{}) {
			t.Fatalf("Update(%s) saw %+v, %v; want no entry", k, seen, err)
		}
		if e, ok := rawEntry(t, c, s, k); !ok || e.Failures != 1 {
			t.Errorf("Redis holds %+v, %v under %s", e, ok, k)
		}
	}
}
