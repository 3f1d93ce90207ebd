// Package recordstest checks that a health.Records store keeps its
// ceilings (Records.Keep) as every store must: the same test for memory,
// SQLite and Redis.
//
//	func TestKeep(t *testing.T) { recordstest.Ceilings(t, a, b) } // a, b: one store, two processes
package recordstest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
)

// Ceilings checks a and b, two handles on one store (two processes, two
// replicas; or one store twice): under a storm of Keeps from both, each
// class stays within its count and bytes, the soonest to expire goes
// first, a value over the ceiling is refused, and a claim in flight, a Put
// and a counter of the class are never evicted, even when a kept key was
// deleted or expired and then claimed again. It uses the class "idem:"
// and "answer:" keys and real time (a 5 ms expiry).
func Ceilings(t *testing.T, a, b health.Records) {
	t.Helper()
	if _, ok, err := a.Claim("idem:inflight", []byte("pending"), time.Hour); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	must(t, a.Put("idem:put", []byte("v"), time.Hour))
	_, err := a.Add("idem:spend", 1, time.Hour)
	must(t, err)
	// A kept key deleted and claimed again, and one expired and claimed
	// again: both are claims in flight now.
	_, err = a.Keep("idem:again", []byte("done"), time.Hour, health.Ceiling{})
	must(t, err)
	must(t, b.Delete("idem:again"))
	if _, ok, _ := a.Claim("idem:again", []byte("pending"), time.Hour); !ok {
		t.Fatal("a deleted kept key cannot be claimed")
	}
	_, err = a.Keep("idem:lapsed", []byte("done"), 5*time.Millisecond, health.Ceiling{})
	must(t, err)
	time.Sleep(20 * time.Millisecond)
	if _, ok, _ := b.Claim("idem:lapsed", []byte("pending"), time.Hour); !ok {
		t.Fatal("an expired kept key cannot be claimed")
	}
	c := health.Ceiling{Count: 5, Bytes: 5 * 1100}
	if n, err := a.Keep("idem:short", make([]byte, 1000), time.Minute, c); n != 0 || err != nil {
		t.Fatalf("the first kept record: %d %v", n, err)
	}
	var mu sync.Mutex
	evicted := 0
	var wg sync.WaitGroup
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			n, err := s.Keep(fmt.Sprintf("idem:%02d", i), make([]byte, 1000), time.Hour+time.Duration(i)*time.Second, c)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			evicted += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if evicted != 36 {
		t.Fatalf("%d evicted, want 36 (41 kept under a count of 5)", evicted)
	}
	if _, ok, _ := b.Get("idem:short"); ok {
		t.Fatal("the record that expires soonest was not evicted")
	}
	for _, k := range []string{"idem:inflight", "idem:put", "idem:spend", "idem:again", "idem:lapsed", "idem:39"} {
		if _, ok, _ := b.Get(k); !ok {
			t.Errorf("%s was evicted", k)
		}
	}
	if held, ok, _ := b.Claim("idem:inflight", []byte("second"), time.Hour); ok || string(held) != "pending" {
		t.Fatalf("a second claim of the key in flight: %q %v", held, ok)
	}
	// Bytes: two records of 2,000 bytes leave room for one more only.
	c = health.Ceiling{Bytes: 4200}
	for _, k := range []string{"answer:a", "answer:b"} {
		if n, err := a.Keep(k, make([]byte, 2000), time.Hour, c); n != 0 || err != nil {
			t.Fatalf("%s: evicted %d, %v", k, n, err)
		}
	}
	if n, _ := b.Keep("answer:c", make([]byte, 2000), time.Hour, c); n != 1 {
		t.Fatalf("answer:c evicted %d, want 1", n)
	}
	if _, err := a.Keep("answer:huge", make([]byte, 5000), time.Hour, c); !errors.Is(err, health.ErrOverCeiling) {
		t.Fatalf("a value over the ceiling: %v, want health.ErrOverCeiling", err)
	}
	if v, ok, _ := a.Get("idem:39"); !ok || len(v) != 1000 {
		t.Fatal("the answer: class evicted an idem: record")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
