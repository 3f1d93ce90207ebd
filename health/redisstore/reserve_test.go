package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/recordstest"
)

// Reservations hold across two replicas on one Redis: of reservers racing
// on both, only as many as fit get room.
func TestReserveAcrossReplicas(t *testing.T) {
	addr, _, _ := startRedis(t)
	o := Options{Namespace: "reserve", OpTimeout: 2 * time.Second}
	a := open(t, addr, o, true)
	b := open(t, addr, o, true)
	recordstest.Reserve(t, a, b)
	if !a.Status().Up || !b.Status().Up {
		t.Fatal("a replica went down (its reservations were then its own alone)")
	}
}

// While Redis is down a replica reserves nothing: a reservation held in
// its memory would be settled in Redis once it is back, taking from the
// shared count what was never added to it.
func TestReserveWhileDownHoldsNothing(t *testing.T) {
	addr, stop, restart := startRedis(t)
	s := open(t, addr, Options{Namespace: "reserve-down", OpTimeout: time.Second}, true)
	if _, ok, err := s.Reserve("spend:k", 0.3, 1, time.Hour); !ok || err != nil {
		t.Fatalf("Reserve while up: %v %v", ok, err)
	}
	stop()
	eventually(t, "the store to see the outage", func() bool {
		_, _, err := s.Reserve("spend:k", 0.3, 1, time.Hour)
		return !s.Status().Up && errors.Is(err, health.ErrUnreachable)
	})
	restart()
	eventually(t, "the store to be up again", func() bool { return s.Status().Up })
	// The restarted Redis (no persistence) holds this reservation alone:
	// none made while it was down reached it.
	if sum, ok, err := s.Reserve("spend:k", 0.3, 1, time.Hour); !ok || err != nil || sum != 0.3 {
		t.Fatalf("Reserve once back: %g %v %v, want 0.3", sum, ok, err)
	}
}
