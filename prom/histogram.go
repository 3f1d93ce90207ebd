package prom

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
)

// Histogram is one series of a histogram: counts of observations in
// buckets, their sum and their count; HistogramVec.With gives it. Safe for
// concurrent use; Observe is lock-free, so a scrape during an Observe may
// see its count before its sum.
type Histogram struct {
	upper  []float64       // the buckets' upper bounds, ascending, without +Inf
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf's
	sum    atomic.Uint64   // float64 bits
}

// Observe records v: it counts in the first bucket whose upper bound is at
// least v (NaN counts only in +Inf) and adds to the sum.
func (h *Histogram) Observe(v float64) {
	var i int
	if len(h.upper) <= 32 {
		for i < len(h.upper) && !(v <= h.upper[i]) {
			i++
		}
	} else {
		i = sort.SearchFloat64s(h.upper, v)
	}
	h.counts[i].Add(1)
	addFloat(&h.sum, v)
}

// HistogramVec is a histogram family: one Histogram per combination of
// label values, all with the same buckets. Safe for concurrent use.
type HistogramVec struct {
	v   *vec
	les []string // the buckets' le label values, "+Inf" last
}

// Histogram registers a histogram family with these bucket upper bounds
// and returns it; "+Inf" is implied (and dropped if given). Empty buckets
// leave only "+Inf". Its series appear in the output once With first asks
// for them (a family without labels has its one series from the start).
// It panics unless the buckets are strictly ascending, on an invalid or
// taken name (name_bucket, name_sum and name_count included), an invalid
// label name, a label given twice, or a label named le.
func (r *Registry) Histogram(name, help string, buckets []float64, labels ...string) *HistogramVec {
	upper := slices.Clone(buckets)
	if n := len(upper); n > 0 && math.IsInf(upper[n-1], 1) {
		upper = upper[:n-1]
	}
	for i, u := range upper {
		if math.IsNaN(u) || i > 0 && !(upper[i-1] < u) {
			panic(fmt.Sprintf("prom: %s: buckets must be strictly ascending and not NaN: %v", name, buckets))
		}
	}
	les := make([]string, 0, len(upper)+1)
	for _, u := range upper {
		les = append(les, formatFloat(u))
	}
	les = append(les, "+Inf")
	d := newDesc(name, help, "histogram", labels, "le")
	h := &HistogramVec{les: les, v: newVec(d, func() any {
		return &Histogram{upper: upper, counts: make([]atomic.Uint64, len(upper)+1)}
	})}
	r.register(h, name, "_bucket", "_sum", "_count")
	return h
}

// With returns the series of these label values, one per label in the
// order Histogram declared them, creating it empty the first time. For up
// to three labels it does not allocate once the series exists. It panics
// unless the number of values is that of the labels and each is valid
// UTF-8.
func (h *HistogramVec) With(values ...string) *Histogram { return h.v.with(values).(*Histogram) }

// appendTo appends the family in the text format, or nothing if it has no
// series: per series the cumulative buckets, then the sum and the count.
func (h *HistogramVec) appendTo(b []byte) []byte {
	list := h.v.sorted()
	if len(list) == 0 {
		return b
	}
	d := h.v.d
	b = d.appendHeader(b)
	for _, s := range list {
		m := s.m.(*Histogram)
		var n uint64
		for i := range m.counts {
			n += m.counts[i].Load()
			b = d.appendName(b, "_bucket", s.values, h.les[i])
			b = strconv.AppendUint(b, n, 10)
			b = append(b, '\n')
		}
		b = d.appendName(b, "_sum", s.values, "")
		b = appendFloat(b, math.Float64frombits(m.sum.Load()))
		b = append(b, '\n')
		b = d.appendName(b, "_count", s.values, "")
		b = strconv.AppendUint(b, n, 10)
		b = append(b, '\n')
	}
	return b
}
