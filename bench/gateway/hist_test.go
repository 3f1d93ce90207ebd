package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// exactQuantile is the nearest-rank quantile of sorted values.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := int(float64(len(sorted))*q + 0.999999999)
	rank = max(rank, 1)
	return sorted[rank-1]
}

func TestHistogram_QuantilesWithinHalfAPercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		draw func() time.Duration
	}{
		{"uniform 50µs-5ms", func() time.Duration {
			return 50*time.Microsecond + time.Duration(rng.Int64N(int64(5*time.Millisecond)))
		}},
		{"exponential mean 200µs", func() time.Duration { return time.Duration(rng.ExpFloat64() * 200e3) }},
		{"bimodal 80µs and 130ms", func() time.Duration {
			if rng.IntN(10) == 0 {
				return 130*time.Millisecond + time.Duration(rng.Int64N(int64(time.Millisecond)))
			}
			return 80*time.Microsecond + time.Duration(rng.Int64N(int64(10*time.Microsecond)))
		}},
		{"tiny values exact", func() time.Duration { return time.Duration(rng.Int64N(int64(256))) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			vals := make([]time.Duration, 20000)
			for i := range vals {
				vals[i] = tc.draw()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			if h.Count() != uint64(len(vals)) {
				t.Fatalf("Count() = %d, want %d", h.Count(), len(vals))
			}
			for _, q := range []float64{0.001, 0.5, 0.9, 0.99, 0.999, 1} {
				got, want := h.Quantile(q), exactQuantile(vals, q)
				diff := got - want
				if diff < 0 {
					diff = -diff
				}
				if float64(diff) > float64(want)*0.005+1 {
					t.Errorf("Quantile(%v) = %v, want %v ±0.5%%", q, got, want)
				}
			}
			if got, want := h.Quantile(1), vals[len(vals)-1]; got != want {
				t.Errorf("Quantile(1) = %v, want the max %v", got, want)
			}
		})
	}
}

func TestHistogram_MergeEqualsRecordingEverything(t *testing.T) {
	var a, b, all Histogram
	for i := range 1000 {
		d := time.Duration(i*i) * time.Microsecond
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	if a != all {
		t.Fatalf("merged histogram differs: count %d/%d, mean %v/%v, p50 %v/%v, max %v/%v",
			a.Count(), all.Count(), a.Mean(), all.Mean(), a.Quantile(0.5), all.Quantile(0.5), a.Max(), all.Max())
	}
}

func TestHistogram_EmptyAndExtremes(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Fatalf("empty histogram: p50 %v, mean %v, count %d; want zeros", h.Quantile(0.5), h.Mean(), h.Count())
	}
	h.Record(-time.Second) // counts as 0
	h.Record(time.Hour)    // past the last bucket: still the max
	if got := h.Quantile(0.5); got != 0 {
		t.Errorf("p50 of {0, 1h} = %v, want 0", got)
	}
	if got := h.Quantile(1); got != time.Hour {
		t.Errorf("p100 of {0, 1h} = %v, want 1h", got)
	}
}

func TestBucketMid_InsideItsBucket(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 255, 256, 257, 1000, 123456, 1 << 30, 1<<40 - 1} {
		i := bucketOf(d)
		if i < 0 || i >= nBuckets {
			t.Fatalf("bucketOf(%d) = %d, outside [0,%d)", d, i, nBuckets)
		}
		if got := bucketOf(bucketMid(i)); got != i {
			t.Errorf("bucketOf(bucketMid(%d)) = %d: the middle of a bucket must fall in it (d=%d)", i, got, d)
		}
		if mid := bucketMid(i); float64(mid-d) > float64(d)/128+1 || float64(d-mid) > float64(d)/128+1 {
			t.Errorf("bucketMid(bucketOf(%d)) = %d, more than 1/128 away", d, mid)
		}
	}
}
