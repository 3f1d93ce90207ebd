package health

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// One Claim of a key wins, under concurrency; values expire at their ttl
// and are dropped in a sweep; Put replaces; Delete frees the key.
func TestMemoryRecords(t *testing.T) {
	now := t0
	m := &MemoryRecords{Now: func() time.Time { return now }}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, ok, _ := m.Claim("k", []byte("mine"), time.Minute); ok {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d claims won, want 1", wins.Load())
	}
	if held, ok, _ := m.Claim("k", []byte("other"), time.Minute); ok || string(held) != "mine" {
		t.Fatalf("a later claim: %q %v", held, ok)
	}
	m.Put("k", []byte("done"), time.Hour) //nolint:errcheck // memory
	if v, ok, _ := m.Get("k"); !ok || string(v) != "done" {
		t.Fatalf("after Put: %q %v", v, ok)
	}
	now = now.Add(time.Hour)
	if _, ok, _ := m.Get("k"); ok {
		t.Fatal("a value outlived its ttl")
	}
	for i := range 100 {
		m.Put(string(rune('a'+i%26))+string(rune(i)), nil, time.Second) //nolint:errcheck // memory
	}
	now = now.Add(2 * recordSweepEvery)
	m.Put("fresh", nil, time.Hour) //nolint:errcheck // memory
	if n := m.Len(); n != 1 {
		t.Fatalf("%d values after a sweep, want only the fresh one", n)
	}
	m.Delete("fresh") //nolint:errcheck // memory
	if _, ok, _ := m.Claim("fresh", []byte("x"), time.Minute); !ok {
		t.Fatal("a deleted key cannot be claimed")
	}
}

func TestMemoryRecordsAdd(t *testing.T) {
	now := t0
	m := &MemoryRecords{Now: func() time.Time { return now }}
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() { m.Add("c", 0.5, time.Hour) }) //nolint:errcheck // memory
	}
	wg.Wait()
	if sum, _ := m.Add("c", 0, time.Hour); sum != 20 {
		t.Fatalf("sum %v, want 20", sum)
	}
	now = now.Add(2 * time.Hour)
	if sum, _ := m.Add("c", 1, time.Hour); sum != 1 {
		t.Fatalf("after expiry the counter reads %v, want a fresh 1", sum)
	}
}
