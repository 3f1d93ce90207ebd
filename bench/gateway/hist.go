package main

import (
	"math"
	"math/bits"
	"time"
)

// The layout of a Histogram's buckets: exact below 256 ns, then 128
// buckets per power of two, so a bucket is at most 1/128 of its lower bound
// wide and a quantile read from its middle is within 0.4% of a recorded
// value. Durations from 2^40 ns (about 18 minutes) up share the last bucket.
const (
	subBits  = 7
	maxBits  = 40
	nBuckets = (maxBits-subBits-1)<<subBits + 2<<subBits
)

// Histogram records durations in log-linear buckets: constant memory and
// constant time per Record, whatever the number of samples. The zero value
// is empty and ready to use. A Histogram is not safe for concurrent use:
// give each goroutine its own and Merge them.
type Histogram struct {
	counts   [nBuckets]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

// bucketOf returns the bucket index of d (negative durations count as 0).
func bucketOf(d time.Duration) int {
	v := uint64(max(d, 0))
	if v >= 1<<maxBits {
		v = 1<<maxBits - 1
	}
	s := max(bits.Len64(v)-subBits-1, 0)
	return s<<subBits + int(v>>s)
}

// bucketMid returns the middle of bucket i: the value a quantile falling in
// it reads as.
func bucketMid(i int) time.Duration {
	if i < 2<<subBits {
		return time.Duration(i)
	}
	s := i>>subBits - 1
	low := uint64(i-s<<subBits) << s
	return time.Duration(low + (1<<s)/2)
}

// Record adds one duration.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucketOf(d)]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += d
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of durations recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Mean returns the mean duration, 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Max returns the largest duration recorded, 0 when empty.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the q-quantile (0 < q <= 1) by the nearest-rank rule:
// the smallest recorded value with at least q of the samples at or below
// it, read from the middle of its bucket and clamped to the recorded min
// and max (q = 1 is exactly the max). It returns 0 when the histogram is
// empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	if rank >= h.n {
		return h.max
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i == nBuckets-1 { // the overflow bucket has no middle
				return h.max
			}
			return min(max(bucketMid(i), h.min), h.max)
		}
	}
	return h.max
}
