package health

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Past its count the class evicts the record that expires soonest, not
// the one written first; expired ones go first and are not counted.
func TestMemoryRecords_KeepEvictsSoonestToExpireByCount(t *testing.T) {
	now := t0
	m := &MemoryRecords{Now: func() time.Time { return now }}
	c := Ceiling{Count: 3}
	for _, k := range []struct {
		key string
		ttl time.Duration
	}{{"idem:a", time.Hour}, {"idem:b", time.Minute}, {"idem:c", 2 * time.Hour}} {
		if n, err := m.Keep(k.key, []byte("v"), k.ttl, c); n != 0 || err != nil {
			t.Fatalf("Keep(%s) under the ceiling = %d, %v", k.key, n, err)
		}
	}
	if n, _ := m.Keep("idem:d", []byte("v"), time.Hour, c); n != 1 {
		t.Fatalf("a fourth record evicted %d, want 1", n)
	}
	if _, ok, _ := m.Get("idem:b"); ok {
		t.Fatal("idem:b, the soonest to expire, was not the one evicted")
	}
	for _, k := range []string{"idem:a", "idem:c", "idem:d"} {
		if _, ok, _ := m.Get(k); !ok {
			t.Fatalf("%s was evicted", k)
		}
	}
	now = now.Add(90 * time.Minute) // idem:a and idem:d expire, not yet dropped
	if n, _ := m.Keep("idem:e", []byte("v"), time.Hour, c); n != 0 {
		t.Fatalf("dropping expired records counted %d evictions, want 0", n)
	}
	if n, _ := m.Kept("idem:"); n > 3 {
		t.Fatalf("the class holds %d records over a ceiling of 3", n)
	}
}

// The bytes of a class (keys and values) stay within its ceiling
// whatever a client sends: the 400 distinct keys of 512 KiB.
func TestMemoryRecords_KeepBoundsBytes(t *testing.T) {
	m := &MemoryRecords{}
	c := Ceiling{Bytes: 8 << 20}
	answer := make([]byte, 512<<10)
	evicted := 0
	for i := range 400 {
		n, err := m.Keep(fmt.Sprintf("idem:%04d", i), answer, 24*time.Hour, c)
		if err != nil {
			t.Fatal(err)
		}
		evicted += n
	}
	n, bytes := m.Kept("idem:")
	if bytes > c.Bytes {
		t.Fatalf("the class holds %d bytes over a ceiling of %d", bytes, c.Bytes)
	}
	if n != 15 || evicted != 385 {
		t.Fatalf("%d records kept, %d evicted; want 15 (8 MiB of 512 KiB and a key) and 385", n, evicted)
	}
	if _, ok, _ := m.Get("idem:0399"); !ok {
		t.Fatal("the latest record was evicted")
	}
	if _, err := m.Keep("idem:huge", make([]byte, 9<<20), time.Hour, c); !errors.Is(err, ErrOverCeiling) {
		t.Fatalf("a value larger than the ceiling: %v, want ErrOverCeiling", err)
	}
	if n2, _ := m.Kept("idem:"); n2 != n {
		t.Fatalf("a refused value evicted records: %d, then %d", n, n2)
	}
}

// A ceiling bounds its own class only, and never evicts a claim in
// flight, a Put or a counter, even of its class.
func TestMemoryRecords_KeepEvictsOnlyKeptRecordsOfItsClass(t *testing.T) {
	m := &MemoryRecords{}
	m.Claim("idem:inflight", []byte("pending"), time.Minute) //nolint:errcheck // memory
	m.Put("idem:put", []byte("v"), time.Minute)              //nolint:errcheck // memory
	m.Add("idem:spend", 1, time.Minute)                      //nolint:errcheck // memory
	m.Keep("answer:x", []byte("v"), time.Minute, Ceiling{})  //nolint:errcheck // memory
	// A kept record deleted, then claimed again: the claim is in flight.
	m.Keep("idem:again", []byte("done"), time.Second, Ceiling{}) //nolint:errcheck // memory
	m.Delete("idem:again")                                       //nolint:errcheck // memory
	m.Claim("idem:again", []byte("pending"), time.Minute)        //nolint:errcheck // memory
	for i := range 50 {
		m.Keep(fmt.Sprintf("idem:%d", i), []byte("v"), time.Second, Ceiling{Count: 1}) //nolint:errcheck // memory
	}
	for _, k := range []string{"idem:inflight", "idem:put", "idem:spend", "answer:x", "idem:again"} {
		if _, ok, _ := m.Get(k); !ok {
			t.Errorf("%s was evicted by another class's or kept records' ceiling", k)
		}
	}
	if held, ok, _ := m.Claim("idem:inflight", []byte("second"), time.Minute); ok || string(held) != "pending" {
		t.Fatalf("a second claim of a key in flight: %q %v", held, ok)
	}
}

// Under a storm of finished keys evicting each other, a key in flight is
// never claimed twice: a repeat that will not wait is told it is in
// flight, every time.
func TestOnce_EvictionNeverFreesAClaimInFlight(t *testing.T) {
	var evicted sync.Map
	o := Once{Records: &MemoryRecords{}, Ceiling: Ceiling{Count: 2, Bytes: 4 << 10},
		OnEvict: func(n int) { evicted.Store("any", true) }}
	ctx := context.Background()
	first, _, err := o.Begin(ctx, "idem:slow", "req", true)
	if err != nil || first == nil {
		t.Fatalf("the first claim: %v %v", first, err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				c, _, err := o.Begin(ctx, fmt.Sprintf("idem:%d-%d", g, i), "req", false)
				if err != nil || c == nil {
					t.Errorf("a fresh key: %v %v", c, err)
					return
				}
				c.Finish(strings.Repeat("x", 100), time.Hour) //nolint:errcheck // checked below
			}
		})
		wg.Go(func() {
			for range 200 {
				if c, _, err := o.Begin(ctx, "idem:slow", "req", false); !errors.Is(err, ErrOnceInFlight) {
					t.Errorf("a repeat of the key in flight got claim %v, err %v; want ErrOnceInFlight", c, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, ok := evicted.Load("any"); !ok {
		t.Fatal("OnEvict never ran: the storm evicted nothing")
	}
	if err := first.Finish("done", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, v, _ := o.Begin(ctx, "idem:slow", "req", false); string(v) != `"done"` {
		t.Fatalf("after its Finish the slow key replays %s", v)
	}
	// A value too large for the ceiling lets the key go: served afresh.
	c, _, _ := o.Begin(ctx, "idem:big", "req", false)
	if err := c.Finish(strings.Repeat("x", 8<<10), time.Hour); !errors.Is(err, ErrOverCeiling) {
		t.Fatalf("Finish of a value over the ceiling: %v", err)
	}
	if c2, _, err := o.Begin(ctx, "idem:big", "req", false); c2 == nil || err != nil {
		t.Fatalf("after a value over the ceiling, a repeat: %v %v; want a fresh claim", c2, err)
	}
}
