package prom_test

import (
	"io"
	"testing"

	"github.com/detourhq/detour/prom"
)

var benchBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

func BenchmarkCounterVec_WithInc(b *testing.B) {
	c := prom.NewRegistry().Counter("b_total", "B.", "surface", "route", "outcome")
	c.With("openai", "default", "primary_success")
	b.ReportAllocs()
	for b.Loop() {
		c.With("openai", "default", "primary_success").Inc()
	}
}

func BenchmarkCounterVec_WithIncParallel(b *testing.B) {
	c := prom.NewRegistry().Counter("b_total", "B.", "surface", "route", "outcome")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.With("openai", "default", "primary_success").Inc()
		}
	})
}

func BenchmarkHistogramVec_WithObserve(b *testing.B) {
	h := prom.NewRegistry().Histogram("b_seconds", "B.", benchBuckets, "surface", "stream")
	b.ReportAllocs()
	for b.Loop() {
		h.With("openai", "true").Observe(0.3)
	}
}

func BenchmarkHistogram_Observe(b *testing.B) {
	h := prom.NewRegistry().Histogram("b_seconds", "B.", benchBuckets).With()
	b.ReportAllocs()
	for b.Loop() {
		h.Observe(0.3)
	}
}

func BenchmarkHistogram_ObserveParallel(b *testing.B) {
	h := prom.NewRegistry().Histogram("b_seconds", "B.", benchBuckets).With()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.Observe(0.3)
		}
	})
}

func BenchmarkRegistry_WriteTo(b *testing.B) {
	reg := prom.NewRegistry()
	c := reg.Counter("b_total", "B.", "surface", "route", "outcome")
	h := reg.Histogram("b_seconds", "B.", benchBuckets, "surface", "stream")
	for _, s := range []string{"openai", "anthropic"} {
		for _, r := range []string{"default", "fast", "cheap", "solo"} {
			for _, o := range []string{"primary_success", "retry_recovery", "failover_recovery", "all_failed"} {
				c.With(s, r, o).Inc()
			}
		}
		h.With(s, "true").Observe(1)
		h.With(s, "false").Observe(1)
	}
	b.ReportAllocs()
	for b.Loop() {
		reg.WriteTo(io.Discard)
	}
}

func TestWith_ExistingSeriesDoesNotAllocate(t *testing.T) {
	reg := prom.NewRegistry()
	c := reg.Counter("c_total", "C.", "a", "b", "c")
	h := reg.Histogram("h_seconds", "H.", benchBuckets, "a")
	route := "default" // not a constant, as in the gateway
	c.With("x", route, "z")
	h.With(route)
	if n := testing.AllocsPerRun(100, func() { c.With("x", route, "z").Inc() }); n != 0 {
		t.Errorf("CounterVec.With.Inc: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { h.With(route).Observe(0.1) }); n != 0 {
		t.Errorf("HistogramVec.With.Observe: %v allocs, want 0", n)
	}
}
