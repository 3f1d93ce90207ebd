package prom_test

import (
	"strconv"
	"sync"
	"testing"

	"github.com/detourhq/detour/prom"
)

func TestConcurrentUpdatesAndScrapesKeepExactTotals(t *testing.T) {
	const (
		workers = 16
		rounds  = 2000
	)
	reg := prom.NewRegistry()
	c := reg.Counter("c_total", "C.", "worker_mod", "kind")
	h := reg.Histogram("h_seconds", "H.", []float64{1, 2}, "kind")
	g := reg.Gauge("g", "G.")
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			mod := strconv.Itoa(w % 4)
			for i := range rounds {
				c.With(mod, "inc").Inc()
				c.With(mod, "add").Add(0.5)
				c.With(strconv.Itoa(w), strconv.Itoa(i%50)).Inc() // new series while others read
				h.With("all").Observe(float64(i % 3))
				g.Inc()
				g.Dec()
				g.Add(1)
			}
		})
	}
	wg.Go(func() { // scrapes while the workers write
		for range 20 {
			if _, err := tryParse(reg); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()

	mfs := parse(t, reg)
	for _, mod := range []string{"0", "1", "2", "3"} {
		per := float64(workers / 4 * rounds)
		if got := find(mfs["c_total"], map[string]string{"worker_mod": mod, "kind": "inc"}).GetCounter().GetValue(); got != per {
			t.Errorf("inc %s = %v, want %v", mod, got, per)
		}
		if got := find(mfs["c_total"], map[string]string{"worker_mod": mod, "kind": "add"}).GetCounter().GetValue(); got != per/2 {
			t.Errorf("add %s = %v, want %v", mod, got, per/2)
		}
	}
	if n := len(mfs["c_total"].GetMetric()); n != 4*2+workers*50 {
		t.Errorf("%d series, want %d", n, 4*2+workers*50)
	}
	for w := range workers {
		if got := find(mfs["c_total"], map[string]string{"worker_mod": strconv.Itoa(w), "kind": "7"}).GetCounter().GetValue(); got != rounds/50 {
			t.Errorf("worker %d's own series = %v, want %d", w, got, rounds/50)
		}
	}
	// Each worker observes 0, 1 and 2 in turn: 667 zeros, 667 ones, 666 twos.
	hist := mfs["h_seconds"].GetMetric()[0].GetHistogram()
	le1, sum := uint64(workers*(667+667)), float64(workers*(667+2*666))
	if hist.GetSampleCount() != workers*rounds || hist.GetBucket()[0].GetCumulativeCount() != le1 || hist.GetSampleSum() != sum {
		t.Errorf("histogram count %d, le=1 %d, sum %v; want %d, %d, %v",
			hist.GetSampleCount(), hist.GetBucket()[0].GetCumulativeCount(), hist.GetSampleSum(), workers*rounds, le1, sum)
	}
	if got := mfs["g"].GetMetric()[0].GetGauge().GetValue(); got != float64(workers*rounds) || g.Value() != got {
		t.Errorf("gauge %v, want %d", got, workers*rounds)
	}
}
