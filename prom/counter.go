package prom

import (
	"math"
	"strconv"
	"sync/atomic"
)

// Counter is one series of a counter: a value that only goes up, from 0;
// CounterVec.With gives it. Safe for concurrent use; updates are lock-free.
type Counter struct {
	n    atomic.Uint64 // the sum of the integral increments
	frac atomic.Uint64 // float64 bits: the sum of the other increments
}

// Inc adds 1.
func (c *Counter) Inc() { c.n.Add(1) }

// Add adds v. It panics if v is negative: a counter never goes down.
func (c *Counter) Add(v float64) {
	if v < 0 {
		panic("prom: counter cannot decrease: Add(" + strconv.FormatFloat(v, 'g', -1, 64) + ")")
	}
	if u := uint64(v); float64(u) == v {
		c.n.Add(u)
		return
	}
	addFloat(&c.frac, v)
}

// Value returns the counter's value.
func (c *Counter) Value() float64 {
	return float64(c.n.Load()) + math.Float64frombits(c.frac.Load())
}

// addFloat adds v to the float64 whose bits are in bits.
func addFloat(bits *atomic.Uint64, v float64) {
	for {
		old := bits.Load()
		if bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// CounterFunc registers a counter family whose series collect reports at
// each scrape, for counts kept elsewhere (the CPU time the kernel counts,
// say): each value it reports must never be less than the one it reported
// for that series before. A scrape where it reports none leaves the family
// out. Scrapes may call collect concurrently. It panics on an invalid or
// taken name, an invalid label name or a label given twice.
func (r *Registry) CounterFunc(name, help string, labels []string, collect CollectFunc) {
	r.register(&funcFamily{d: newDesc(name, help, "counter", labels, ""), collect: collect}, name)
}

// CounterVec is a counter family: one Counter per combination of label
// values. Safe for concurrent use.
type CounterVec struct {
	v *vec
}

// Counter registers a counter family and returns it; its series appear in
// the output once With first asks for them (a family without labels has
// its one series, at 0, from the start). It panics on an invalid or taken
// name, an invalid label name or a label given twice.
func (r *Registry) Counter(name, help string, labels ...string) *CounterVec {
	c := &CounterVec{v: newVec(newDesc(name, help, "counter", labels, ""), func() any { return new(Counter) })}
	r.register(c, name)
	return c
}

// With returns the series of these label values, one per label in the
// order Counter declared them, creating it at 0 the first time. For up to
// three labels it does not allocate once the series exists. It panics
// unless the number of values is that of the labels and each is valid
// UTF-8.
func (c *CounterVec) With(values ...string) *Counter { return c.v.with(values).(*Counter) }

// appendTo appends the family in the text format, or nothing if it has no
// series.
func (c *CounterVec) appendTo(b []byte) []byte {
	list := c.v.sorted()
	if len(list) == 0 {
		return b
	}
	d := c.v.d
	b = d.appendHeader(b)
	for _, s := range list {
		b = d.appendName(b, "", s.values, "")
		b = appendFloat(b, s.m.(*Counter).Value())
		b = append(b, '\n')
	}
	return b
}
