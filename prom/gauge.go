package prom

import (
	"math"
	"slices"
	"sync/atomic"
)

// Gauge is a gauge without labels: a value that goes up and down. Safe for
// concurrent use; updates are lock-free.
type Gauge struct {
	d    *desc
	bits atomic.Uint64 // float64 bits of the value
}

// Gauge registers a gauge without labels, at 0, and returns it. It panics
// on an invalid or taken name.
func (r *Registry) Gauge(name, help string) *Gauge {
	g := &Gauge{d: newDesc(name, help, "gauge", nil, "")}
	r.register(g, name)
	return g
}

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Add adds v, which may be negative.
func (g *Gauge) Add(v float64) { addFloat(&g.bits, v) }

// Inc adds 1.
func (g *Gauge) Inc() { g.Add(1) }

// Dec subtracts 1.
func (g *Gauge) Dec() { g.Add(-1) }

// Value returns the gauge's value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

// appendTo appends the gauge in the text format.
func (g *Gauge) appendTo(b []byte) []byte {
	b = g.d.appendHeader(b)
	b = g.d.appendName(b, "", nil, "")
	b = appendFloat(b, g.Value())
	return append(b, '\n')
}

// CollectFunc reports a gauge family's series at scrape time: it calls emit
// once per series with its value and its label values, one per label in
// the order GaugeFunc declared them. emit panics unless the number of
// values is that of the labels and each is valid UTF-8; it must not be
// called after CollectFunc returns.
type CollectFunc func(emit func(value float64, labelValues ...string))

// funcFamily is a gauge or counter family whose series a CollectFunc
// reports.
type funcFamily struct {
	d       *desc
	collect CollectFunc
}

// GaugeFunc registers a gauge family whose series collect reports at each
// scrape; a scrape where it reports none leaves the family out. Scrapes may
// call collect concurrently. It panics on an invalid or taken name, an
// invalid label name or a label given twice.
func (r *Registry) GaugeFunc(name, help string, labels []string, collect CollectFunc) {
	r.register(&funcFamily{d: newDesc(name, help, "gauge", labels, ""), collect: collect}, name)
}

// sample is one series reported by a CollectFunc.
type sample struct {
	values []string
	v      float64
}

// appendTo collects the series and appends them in the text format, sorted
// by label values, or nothing if there are none.
func (g *funcFamily) appendTo(b []byte) []byte {
	var list []sample
	g.collect(func(v float64, values ...string) {
		g.d.checkValues(values)
		list = append(list, sample{values: slices.Clone(values), v: v})
	})
	if len(list) == 0 {
		return b
	}
	slices.SortStableFunc(list, func(a, b sample) int { return g.d.compare(a.values, b.values) })
	b = g.d.appendHeader(b)
	for _, s := range list {
		b = g.d.appendName(b, "", s.values, "")
		b = appendFloat(b, s.v)
		b = append(b, '\n')
	}
	return b
}
