package sqlitestore_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
)

// A park made through one store is seen through another on the same file,
// and one opened after the first is closed.
func TestBreakerParkShared(t *testing.T) {
	path := dbPath(t)
	s1 := open(t, path, sqlitestore.Options{})
	s2 := open(t, path, sqlitestore.Options{})
	b1 := health.NewWithStore(health.Settings{}, s1)
	b2 := health.NewWithStore(health.Settings{}, s2)
	const key = "groq/llama-3.3-70b-versatile"
	now := time.Now()
	if _, err := b2.Allow(key, now); err != nil {
		t.Fatalf("Allow before the park: %v", err)
	}
	b1.Park(key, now.Add(time.Hour), "daily quota", now)
	_, err := b2.Allow(key, now.Add(time.Second))
	var pe *health.ParkedError
	if !errors.Is(err, health.ErrParked) || !errors.As(err, &pe) || pe.Reason != "daily quota" {
		t.Fatalf("Allow through the second store = %v, want parked for daily quota", err)
	}
	s1.Close()
	b3 := health.NewWithStore(health.Settings{}, open(t, path, sqlitestore.Options{}))
	if _, err := b3.Allow(key, now.Add(time.Minute)); !errors.Is(err, health.ErrParked) {
		t.Fatalf("Allow through a store opened later = %v, want parked", err)
	}
}

// When the park ends, exactly one caller, across two stores, gets the probe.
func TestBreakerOneProbe(t *testing.T) {
	path := dbPath(t)
	bs := []*health.Breaker{
		health.NewWithStore(health.Settings{}, open(t, path, sqlitestore.Options{})),
		health.NewWithStore(health.Settings{}, open(t, path, sqlitestore.Options{})),
	}
	const key = "openai/gpt-4o"
	now := time.Now()
	bs[0].Park(key, now.Add(time.Minute), "wall", now)
	later := now.Add(2 * time.Minute) // the park is over
	var probes, parked atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			p, err := bs[i%2].Allow(key, later)
			switch {
			case errors.Is(err, health.ErrParked):
				parked.Add(1)
			case err != nil:
				t.Error(err)
			case p.Probe:
				probes.Add(1)
			default:
				t.Errorf("a plain permit for a half-open key")
			}
		})
	}
	wg.Wait()
	if probes.Load() != 1 || parked.Load() != 15 {
		t.Fatalf("probes %d, parked %d; want 1 and 15", probes.Load(), parked.Load())
	}
}
