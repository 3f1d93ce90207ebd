package redisstore

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
)

// Three replicas share one key: a park one of them learns reaches the
// others, and when it is over exactly one caller in the fleet probes.
func TestBreakerAcrossReplicas(t *testing.T) {
	addr, _, _ := startRedis(t)
	const key = "groq/llama-3.3-70b-versatile"
	o := Options{Namespace: "replicas", OpTimeout: 5 * time.Second} // the single probe, not speed, under -race
	var bs []*health.Breaker
	for range 3 {
		bs = append(bs, health.NewWithStore(health.Settings{}, open(t, addr, o, true)))
	}
	now := t0
	bs[0].Park(key, now.Add(time.Second), "wall", now)
	for i, b := range bs {
		eventually(t, "the park to reach every replica", func() bool {
			st, until := b.State(key, now)
			return st == health.Open && until.Equal(now.Add(time.Second))
		})
		if _, err := b.Allow(key, now); !errors.Is(err, health.ErrParked) {
			t.Errorf("replica %d: Allow during the park = %v, want parked", i, err)
		}
	}

	later := now.Add(1500 * time.Millisecond)
	var probes, refused atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 3 * 50 {
		wg.Go(func() {
			<-start
			p, err := bs[i%3].Allow(key, later)
			switch {
			case err == nil && p.Probe:
				probes.Add(1)
			case errors.Is(err, health.ErrParked):
				refused.Add(1)
			default:
				t.Errorf("Allow after the park = %+v, %v; want one probe and refusals", p, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if probes.Load() != 1 || refused.Load() != 149 {
		t.Fatalf("%d probes and %d refusals, want 1 and 149", probes.Load(), refused.Load())
	}
	for _, b := range bs {
		eventually(t, "every replica to see the probe out", func() bool {
			st, _ := b.State(key, later)
			return st == health.HalfOpen && !b.Get(key, later).ProbeUntil.IsZero()
		})
	}
}
