package redisstore

import (
	"testing"

	"github.com/detourhq/detour/health"
)

// BenchmarkPeek measures the breaker's fast path: a read of local memory,
// with Redis up and the subscriber running.
func BenchmarkPeek(b *testing.B) {
	addr, _, _ := startRedis(b)
	s := open(b, addr, Options{Namespace: "bench"}, true)
	const key = "openai/gpt-4o"
	if err := s.Update(key, func(e *health.Entry) bool {
		*e = health.Entry{Key: key, State: health.Closed, Generation: 1}
		return true
	}); err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if _, ok := s.Peek(key); !ok {
				b.Fatal("no entry")
			}
		}
	})
	b.Run("memorystore", func(b *testing.B) { // the in-process store, for scale
		var m health.MemoryStore
		_ = m.Update(key, func(e *health.Entry) bool {
			*e = health.Entry{Key: key, State: health.Closed, Generation: 1}
			return true
		})
		for b.Loop() {
			m.Peek(key)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s.Peek(key)
			}
		})
	})
}
