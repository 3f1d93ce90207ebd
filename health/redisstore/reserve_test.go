package redisstore

import (
	"testing"
	"time"

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
