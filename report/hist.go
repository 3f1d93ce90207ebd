package report

import "math"

// Histogram bounds: bucket 0 holds values up to histMin seconds; bucket i
// (i >= 1) holds (histMin*g^(i-1), histMin*g^i]. Reporting a bucket's
// geometric middle errs by at most sqrt(g)-1, about 2%.
const (
	histMin     = 0.001
	histGrowth  = 1.04
	histBuckets = 440 // up to 1ms * 1.04^439 ≈ 30,000 s; more lands in the last
)

var logGrowth = math.Log(histGrowth)

// Histogram is a fixed-size log-bucket histogram of durations in seconds.
// Its quantiles are within about 2% of the exact ones (and never outside the
// observed minimum and maximum). The zero value is ready to use.
type Histogram struct {
	counts   [histBuckets]uint32
	n        uint64
	min, max float64
}

// Add records one value in seconds; negative and NaN values count as 0.
func (h *Histogram) Add(v float64) {
	if !(v > 0) {
		v = 0
	}
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if h.n == 0 || v > h.max {
		h.max = v
	}
	h.n++
	h.counts[bucketOf(v)]++
}

// Count returns the number of values added.
func (h *Histogram) Count() uint64 { return h.n }

func bucketOf(v float64) int {
	if v <= histMin {
		return 0
	}
	i := 1 + int(math.Log(v/histMin)/logGrowth)
	if i >= histBuckets || i < 1 {
		return histBuckets - 1
	}
	return i
}

// Quantile returns the q-quantile (0 <= q <= 1) of the values added, by
// nearest rank, and false when none were.
func (h *Histogram) Quantile(q float64) (float64, bool) {
	if h.n == 0 {
		return 0, false
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += uint64(c)
		if seen < rank {
			continue
		}
		v := histMin
		if i > 0 {
			v = histMin * math.Pow(histGrowth, float64(i)-0.5)
		}
		return math.Min(math.Max(v, h.min), h.max), true
	}
	return h.max, true
}
