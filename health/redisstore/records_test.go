package redisstore

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Records through Redis: one claim wins across two replicas, a value is
// seen by the other, and while Redis is away records fall back to memory.
func TestRecordsAcrossReplicas(t *testing.T) {
	addr, stop, _ := startRedis(t)
	// The claims race through Redis: 40 at once, each replica's pool
	// dialing as they come. A generous op timeout keeps a machine loaded
	// by other tests (2 CPUs, the race detector) from turning a slow answer
	// into "Redis is away", where a claim falls back to memory and wins
	// on each replica (3 wins in one CI run with the default 50ms).
	o := Options{Namespace: "recs", OpTimeout: 2 * time.Second}
	a := open(t, addr, o, true)
	b := open(t, addr, o, true)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			if _, ok, err := s.Claim("op", []byte("first"), time.Minute); err == nil && ok {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d claims won across two replicas, want 1", wins.Load())
	}
	if err := a.Put("op", []byte("done"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := b.Get("op"); err != nil || !ok || string(v) != "done" {
		t.Fatalf("the other replica reads %q %v %v", v, ok, err)
	}
	if err := b.Delete("op"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := a.Get("op"); ok {
		t.Fatal("a deleted record is still there")
	}
	stop()
	if _, ok, err := a.Claim("down", []byte("x"), time.Minute); err != nil || !ok {
		t.Fatalf("a claim with Redis away: %v %v, want it kept in memory", ok, err)
	}
	if v, ok, _ := a.Get("down"); !ok || string(v) != "x" {
		t.Fatalf("the record kept in memory reads %q %v", v, ok)
	}
	if a.Status().Up {
		t.Fatal("the store says up with Redis away")
	}
}

// Add is one counter across replicas, with its expiry set once.
func TestRecordsAdd(t *testing.T) {
	addr, _, _ := startRedis(t)
	a := open(t, addr, Options{Namespace: "adds"}, true)
	b := open(t, addr, Options{Namespace: "adds"}, true)
	var wg sync.WaitGroup
	for i := range 20 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			if _, err := s.Add("spend", 0.25, time.Hour); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if sum, err := a.Add("spend", 0, time.Hour); err != nil || sum != 5 {
		t.Fatalf("20 adds of 0.25 sum to %v (%v), want 5", sum, err)
	}
	if ttl := a.client.PTTL(t.Context(), a.recKey("spend")).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("the counter's expiry is %s, want at most an hour", ttl)
	}
}
