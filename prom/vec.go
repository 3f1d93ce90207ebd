package prom

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// key identifies a series by its label values: the first three in place, so
// that finding a series of up to three labels does not allocate, the rest
// length-prefixed in tail.
type key struct {
	head [3]string
	tail string
}

// makeKey returns the key of the series with these label values.
func makeKey(values []string) key {
	var k key
	copy(k.head[:], values)
	if len(values) > len(k.head) {
		var b []byte
		for _, v := range values[len(k.head):] {
			b = strconv.AppendInt(b, int64(len(v)), 10)
			b = append(b, ':')
			b = append(b, v...)
		}
		k.tail = string(b)
	}
	return k
}

// series is one labelled series of a vec.
type series struct {
	values []string // label values, in the desc's declared order
	m      any      // *Counter or *Histogram
}

// vec is the set of series of one family, created on first use. Safe for
// concurrent use. Finding a series takes no lock: the index is never
// changed, and creating a series swaps in a copy. That costs a copy per new
// series, cheap for the bounded label sets metrics should have, and spares
// the hot path the shared cache line of a read lock.
type vec struct {
	d     *desc
	newM  func() any
	byKey atomic.Pointer[map[key]any] // never changed: add swaps in a copy
	mu    sync.Mutex                  // guards list and swapping byKey
	list  []series                    // in creation order; only ever appended to
}

// newVec returns the series set of d, each series made by newM. A family
// without labels gets its one series now, so it shows from the first scrape.
func newVec(d *desc, newM func() any) *vec {
	v := &vec{d: d, newM: newM}
	v.byKey.Store(&map[key]any{})
	if len(d.labels) == 0 {
		v.add(key{}, nil)
	}
	return v
}

// with returns the series of these label values, creating it the first
// time. It panics unless there is one valid UTF-8 value per label.
func (v *vec) with(values []string) any {
	if len(values) != len(v.d.labels) {
		v.d.checkValues(values) // panics
	}
	k := makeKey(values)
	m := (*v.byKey.Load())[k]
	if m == nil {
		m = v.add(k, values)
	}
	return m
}

// add creates the series of key k and values unless another goroutine did
// first, and returns it.
func (v *vec) add(k key, values []string) any {
	v.d.checkValues(values)
	own := slices.Clone(values) // a new variable: reusing values would make callers' escape
	v.mu.Lock()
	defer v.mu.Unlock()
	old := *v.byKey.Load()
	if m := old[k]; m != nil {
		return m
	}
	m := v.newM()
	byKey := maps.Clone(old)
	byKey[k] = m
	v.byKey.Store(&byKey)
	v.list = append(v.list, series{values: own, m: m})
	return m
}

// sorted returns the series sorted by their label values in output order.
func (v *vec) sorted() []series {
	v.mu.Lock()
	list := slices.Clone(v.list)
	v.mu.Unlock()
	slices.SortFunc(list, func(a, b series) int { return v.d.compare(a.values, b.values) })
	return list
}
