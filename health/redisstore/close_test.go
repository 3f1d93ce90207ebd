package redisstore

import (
	"runtime"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
)

// Close stops every goroutine the stores started: the loop, the
// subscriber and go-redis's own.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	addr, _, _ := startRedis(t)
	before := runtime.NumGoroutine()
	var stores []*Store
	for range 2 {
		s, err := Open(Options{URL: "redis://" + addr + "/0", Namespace: "close", PingEvery: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	for _, s := range stores {
		eventually(t, "the store to be up", func() bool { return s.Status().Up })
		b := health.NewWithStore(health.Settings{}, s)
		b.Park("k", t0.Add(time.Minute), "wall", t0)
	}
	eventually(t, "the park to travel", func() bool { _, ok := stores[1].Peek("k"); return ok })
	if n := runtime.NumGoroutine(); n <= before {
		t.Fatalf("%d goroutines with two stores open, %d before: the test measures nothing", n, before)
	}
	for _, s := range stores {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("a second Close: %v", err)
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A closed store still answers from local memory.
	if e, ok := stores[0].Peek("k"); !ok || e.State != health.Open {
		t.Errorf("Peek after Close = %+v, %v", e, ok)
	}
	if err := stores[0].Update("k", func(e *health.Entry) bool { e.Failures++; return true }); err != nil {
		t.Errorf("Update after Close: %v", err)
	}
	if st := stores[0].Status(); st.Up {
		t.Errorf("Status after Close = %+v", st)
	}
}
