package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/detourhq/detour/ledger"
)

// Space-Saving's guarantee, on a skewed stream: every key with more than
// floor() records is held, and no key let go had more than floor().
func TestSpaceSaving_HoldsEveryKeyAboveItsFloor(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, 1<<20)
	s := newSpaceSaving[string](500)
	truth := map[string]int64{}
	for range 200_000 {
		k := fmt.Sprint(zipf.Uint64())
		truth[k]++
		s.addN(k, 1)
	}
	if !s.evicted || s.floor() == 0 || s.floor() > 200_000/500 {
		t.Fatalf("floor %d, evicted %v: want 0 < floor <= records/size", s.floor(), s.evicted)
	}
	held := map[string]bool{}
	for _, k := range s.keys() {
		held[k] = true
	}
	for k, n := range truth {
		if !held[k] && n > s.floor() {
			t.Errorf("%s: %d records, more than the floor %d, but not held", k, n, s.floor())
		}
	}
}

func TestSpaceSaving_ExactWhileItHoldsEveryKey(t *testing.T) {
	s := newSpaceSaving[string](3)
	for _, k := range []string{"a", "b", "a", "c", "a", "b"} {
		s.addN(k, 1)
	}
	if s.evicted || s.floor() != 0 || len(s.keys()) != 3 {
		t.Errorf("evicted %v floor %d keys %v: want every key held, floor 0", s.evicted, s.floor(), s.keys())
	}
}

// The distinct counter's estimate stays within DistinctErrorPct, from one
// key to hundreds of thousands, on keys much alike (as model names are).
func TestDistinct_EstimateWithinItsError(t *testing.T) {
	var d distinct
	if d.estimate() != 0 {
		t.Fatal("empty: not 0")
	}
	n := 0
	for _, want := range []int{1, 2, 10, 1000, 30_000, 100_000, 300_000} {
		for ; n < want; n++ {
			d.add(hashTarget(targetKey{"groq", fmt.Sprintf("ghost-%07d", n)}))
			d.add(hashTarget(targetKey{"groq", fmt.Sprintf("ghost-%07d", n)})) // twice: counted once
		}
		got := d.estimate()
		if math.Abs(float64(got-want)) > float64(want)*DistinctErrorPct/100 {
			t.Errorf("%d keys: estimated %d, more than %d%% off", want, got, DistinctErrorPct)
		}
	}
	if hashTarget(targetKey{"a/", "b"}) == hashTarget(targetKey{"a", "/b"}) {
		t.Error(`("a/", "b") and ("a", "/b") hash alike`)
	}
}

// A ledger written by something else, with a status of its own on every
// line, keeps a bounded count of statuses: past 64, the rest are counted
// as "(other)", and no line is lost.
func TestSummary_StatusesPerTargetAreBounded(t *testing.T) {
	s := NewSummary()
	for i := range 1000 {
		s.Add(&ledger.Record{Provider: "p", Model: "m", Status: fmt.Sprintf("weird_%d", i), Kind: fmt.Sprintf("kind_%d", i),
			Scope: fmt.Sprintf("scope_%d", i)})
		s.Add(&ledger.Record{Provider: "p", Model: "m", Status: fmt.Sprintf("skipped_%d", i)})
	}
	x := s.Report().Targets[0]
	sum := func(cs []Count) (n int) {
		for _, c := range cs {
			n += c.N
		}
		return n
	}
	if len(x.FailuresByStatus) > maxStatuses+1 || len(x.SkipsByStatus) > maxStatuses+1 || len(x.FailuresByScope) > maxStatuses+1 {
		t.Errorf("%d statuses, %d skips, %d scopes kept: want at most %d each",
			len(x.FailuresByStatus), len(x.SkipsByStatus), len(x.FailuresByScope), maxStatuses+1)
	}
	if sum(x.FailuresByStatus) != 1000 || sum(x.SkipsByStatus) != 1000 || x.FailuresByStatus[0] != (Count{OtherName, 1000 - maxStatuses}) {
		t.Errorf("failures %v...: want 1000 in all, %d of them as %s", x.FailuresByStatus[:2], 1000-maxStatuses, OtherName)
	}
}
