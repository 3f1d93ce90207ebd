package report

import (
	"cmp"
	"slices"
)

// A Summary keeps three kinds of keys apart: targets, providers and routes.
// Each kind is numbered by a keyTable; a record whose key the table refuses
// (past its limit, or not among the keys fixed for the last pass) is
// folded into that kind's "other" row, id -1.

// otherID is the id of a kind's "other" row: every key folded.
const otherID = -1

// keyTable numbers the keys of one kind and counts each one's records.
// Its zero value numbers every key.
type keyTable[K comparable] struct {
	ids   map[K]int32
	keys  []K     // by id
	lines []int64 // records of each id
	// limit is the most keys numbered; 0 numbers every key.
	limit int
	// fixed: number no key beyond those given to fix.
	fixed bool
	// refused is set once a key was refused.
	refused bool
	// countFolded: estimate in folded how many distinct keys were
	// refused (the last pass, which names the "other" rows).
	countFolded bool
	folded      distinct
	hash        func(K) uint64
}

// id returns k's id, numbering k when there is room, and counts a record
// of k; otherID when k is refused.
func (t *keyTable[K]) id(k K) int32 {
	if id, ok := t.ids[k]; ok {
		t.lines[id]++
		return id
	}
	if t.fixed || t.limit > 0 && len(t.keys) >= t.limit {
		t.refused = true
		if t.countFolded {
			t.folded.add(t.hash(k))
		}
		return otherID
	}
	if t.ids == nil {
		t.ids = make(map[K]int32)
	}
	id := int32(len(t.keys))
	t.ids[k] = id
	t.keys = append(t.keys, k)
	t.lines = append(t.lines, 1)
	return id
}

// fix makes t number exactly keys, in their order, and refuse every other.
func (t *keyTable[K]) fix(keys []K) {
	t.ids = make(map[K]int32, len(keys))
	t.keys = append([]K(nil), keys...)
	t.lines = make([]int64, len(keys))
	for i, k := range keys {
		t.ids[k] = int32(i)
	}
	t.fixed = true
}

// ranked returns t's keys with their records, most first, then by less.
func (t *keyTable[K]) ranked(less func(a, b K) int) []keyCount[K] {
	out := make([]keyCount[K], len(t.keys))
	for i, k := range t.keys {
		out[i] = keyCount[K]{k, t.lines[i]}
	}
	slices.SortFunc(out, func(a, b keyCount[K]) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		return less(a.key, b.key)
	})
	return out
}

// keyCount is a key and its records.
type keyCount[K comparable] struct {
	key K
	n   int64
}

// spaceSaving finds the keys with the most records in a stream, in memory
// bounded by its size (Metwally, Agrawal and El Abbadi, "Efficient
// computation of frequent and top-k elements in data streams", 2005): it
// holds at most size keys with a count each; a key it does not hold takes
// the place, and the count plus one, of the key with the least. Its
// guarantee: a key it does not hold has had at most floor() records, so
// every key with more is held. With L records and size keys, floor() is at
// most L/size.
type spaceSaving[K comparable] struct {
	size    int
	pos     map[K]int // index of each key in heap
	heap    []keyCount[K]
	evicted bool
}

// newSpaceSaving returns an empty spaceSaving of size keys, its memory
// taken at once.
func newSpaceSaving[K comparable](size int) *spaceSaving[K] {
	return &spaceSaving[K]{size: size, pos: make(map[K]int, size), heap: make([]keyCount[K], 0, size)}
}

// addN counts n records of k.
func (s *spaceSaving[K]) addN(k K, n int64) {
	if i, ok := s.pos[k]; ok {
		s.heap[i].n += n
		s.down(i)
		return
	}
	if len(s.heap) < s.size {
		s.heap = append(s.heap, keyCount[K]{k, n})
		s.pos[k] = len(s.heap) - 1
		s.up(len(s.heap) - 1)
		return
	}
	s.evicted = true
	delete(s.pos, s.heap[0].key)
	s.heap[0] = keyCount[K]{k, s.heap[0].n + n}
	s.pos[k] = 0
	s.down(0)
}

// floor bounds the records of every key s does not hold: none had more.
// 0 when s never had to let a key go: it holds every key seen.
func (s *spaceSaving[K]) floor() int64 {
	if !s.evicted {
		return 0
	}
	return s.heap[0].n
}

// keys returns the keys s holds.
func (s *spaceSaving[K]) keys() []K {
	out := make([]K, len(s.heap))
	for i, e := range s.heap {
		out[i] = e.key
	}
	return out
}

func (s *spaceSaving[K]) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.pos[s.heap[i].key] = i
	s.pos[s.heap[j].key] = j
}

func (s *spaceSaving[K]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if s.heap[p].n <= s.heap[i].n {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *spaceSaving[K]) down(i int) {
	for {
		l, small := 2*i+1, i
		if l < len(s.heap) && s.heap[l].n < s.heap[small].n {
			small = l
		}
		if r := l + 1; r < len(s.heap) && s.heap[r].n < s.heap[small].n {
			small = r
		}
		if small == i {
			return
		}
		s.swap(i, small)
		i = small
	}
}
