package redisstore

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/health"
)

// Redis dies mid-run: Updates go on locally within OpTimeout, one warning
// is logged, and a park learned meanwhile reaches Redis, and a replica
// started afterwards, when Redis is back.
func TestOutage(t *testing.T) {
	addr, stop, restart := startRedis(t)
	var logs logBuffer
	var mu sync.Mutex
	var changes []bool
	s := open(t, addr, Options{Namespace: "outage", Logger: logs.logger(),
		OnChange: func(up bool) { mu.Lock(); changes = append(changes, up); mu.Unlock() }}, true)
	b := health.NewWithStore(health.Settings{}, s)
	const parked, counted = "p1/m", "p2/m"
	now := time.Now()
	b.Done(counted, mustAllow(t, b, counted, now), health.Outcome{Kind: classify.Transient}, now)

	stop()
	slack := 20 * time.Millisecond
	for i := range 20 {
		start := time.Now()
		err := s.Update(counted, func(e *health.Entry) bool { e.Failures++; return true })
		if d := time.Since(start); err != nil || d > s.c.opTimeout+slack {
			t.Fatalf("Update %d in the outage: %v after %s, want nil within %s", i, err, d, s.c.opTimeout+slack)
		}
	}
	if st := s.Status(); st.Up || st.Detail == "" {
		t.Fatalf("Status in the outage = %+v, want down with a reason", st)
	}
	if e, _ := s.Peek(counted); e.Failures != 21 {
		t.Errorf("local entry has %d failures, want 21", e.Failures)
	}
	until := now.Add(time.Hour)
	b.Park(parked, until, "wall", now)
	if st, u := b.State(parked, now); st != health.Open || !u.Equal(until) {
		t.Fatalf("State in the outage = %s until %s, want open until %s", st, u, until)
	}
	time.Sleep(3 * s.c.pingEvery) // pings fail meanwhile: no more warnings
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(),
		"health store redis://"+addr+" unreachable: ") || !strings.Contains(logs.String(), "; serving with local memory") {
		t.Fatalf("%d warnings, want 1 saying the store is unreachable:\n%s", n, logs.String())
	}

	restart()
	eventually(t, "the store to be up again", func() bool { return s.Status().Up })
	if !strings.Contains(logs.String(), "is back") {
		t.Errorf("no line says the store is back:\n%s", logs.String())
	}
	e, ok := rawEntry(t, rawClient(t, addr), s, parked)
	if !ok || e.State != health.Open || !e.Until.Equal(until) {
		t.Fatalf("Redis holds %+v, %v for the park learned in the outage", e, ok)
	}
	if e, _ := rawEntry(t, rawClient(t, addr), s, counted); e.Failures != 21 {
		t.Errorf("Redis holds %d failures for %s, want 21", e.Failures, counted)
	}
	other := health.NewWithStore(health.Settings{}, open(t, addr, Options{Namespace: "outage"}, true))
	eventually(t, "a new replica to see the park", func() bool {
		st, u := other.State(parked, now)
		return st == health.Open && u.Equal(until)
	})
	if _, err := other.Allow(parked, now); !errors.Is(err, health.ErrParked) {
		t.Errorf("the new replica allowed the parked key: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 3 || !changes[0] || changes[1] || !changes[2] {
		t.Errorf("OnChange calls %v, want [true false true]", changes)
	}
}

// The hot path (Peek, and Allow and a success's Done on a closed or
// unseen key) never reaches Redis: no command, no dial, with Redis up or
// gone, and each call returns within 1ms.
func TestHotPathMakesNoRedisCall(t *testing.T) {
	addr, stop, _ := startRedis(t)
	s := open(t, addr, Options{}, true)
	const closed, unseen = "closed/m", "unseen/m"
	calls := &counter{keys: []string{s.c.prefix + closed, s.c.prefix + unseen}}
	s.client.AddHook(calls)
	b := health.NewWithStore(health.Settings{}, s)
	now := time.Now()
	b.Done(closed, mustAllow(t, b, closed, now), health.Outcome{Kind: classify.Transient}, now)
	b.Done(closed, mustAllow(t, b, closed, now), health.Outcome{}, now) // closed and clean
	if err := s.Update(closed, func(*health.Entry) bool { return false }); err != nil || calls.n.Load() == 0 {
		t.Fatalf("the counter saw no call for an Update (%v): it would prove nothing", err)
	}
	hot := func() (worst time.Duration) {
		for range 200 {
			for _, key := range []string{closed, unseen} {
				start := time.Now()
				s.Peek(key)
				p, err := b.Allow(key, now)
				b.Done(key, p, health.Outcome{}, now)
				worst = max(worst, time.Since(start))
				if err != nil || p.Probe {
					t.Fatalf("Allow(%s) = %+v, %v", key, p, err)
				}
			}
		}
		return worst
	}
	for _, phase := range []string{"up", "down"} {
		if phase == "down" {
			stop()
			eventually(t, "the store to see the outage", func() bool { return !s.Status().Up })
			calls.dials.Store(true)
		}
		before := calls.n.Load()
		worst := hot()
		// One retry absorbs a scheduler or GC hiccup (this runs under -race
		// on shared machines); a call that waits on the network would be
		// slow every time.
		for try := 0; worst > time.Millisecond && try < 2; try++ {
			worst = hot()
		}
		if n := calls.n.Load() - before; n != 0 {
			t.Errorf("Redis %s: the hot path made %d Redis calls, want 0", phase, n)
		}
		if worst > time.Millisecond {
			t.Errorf("Redis %s: the slowest Peek+Allow+Done took %s, want under 1ms", phase, worst)
		}
		t.Logf("Redis %s: slowest Peek+Allow+Done %s", phase, worst)
	}
}

// counter is a go-redis hook that counts the scripts Update runs on keys
// and, once dials is set, every dial. The background loop's probe runs on
// another key, and its reloads run no script; with Redis down it dials with
// net.Dial first and the subscriber waits, so go-redis dials nothing.
type counter struct {
	keys  []string
	dials atomic.Bool
	n     atomic.Int64
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if c.dials.Load() {
			c.n.Add(1)
		}
		return next(ctx, network, addr)
	}
}

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *counter) count(cmd redis.Cmder) {
	if n := cmd.Name(); n != "evalsha" && n != "eval" { // a reload's SCAN and MGET name every key
		return
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && slices.Contains(c.keys, s) {
			c.n.Add(1)
			return
		}
	}
}

func mustAllow(t *testing.T, b *health.Breaker, key string, now time.Time) health.Permit {
	t.Helper()
	p, err := b.Allow(key, now)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
