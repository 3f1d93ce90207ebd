package redisstore

import (
	"testing"
	"time"

	"github.com/detourhq/detour/internal/recordstest"
)

// A ceiling holds across two replicas on one Redis, and the class's
// index holds the kept records alone, with their bytes.
func TestKeepCeilingAcrossReplicas(t *testing.T) {
	addr, _, _ := startRedis(t)
	o := Options{Namespace: "kept", OpTimeout: 2 * time.Second}
	a := open(t, addr, o, true)
	b := open(t, addr, o, true)
	recordstest.Ceilings(t, a, b)
	idx := a.keptKeys("idem:x")
	if n, _ := a.client.ZCard(t.Context(), idx[1]).Result(); n != 5 {
		t.Fatalf("the index holds %d entries, want 5", n)
	}
	if total, _ := a.client.Get(t.Context(), idx[3]).Int64(); total != 5*int64(len("idem:00")+1000) {
		t.Fatalf("the index counts %d bytes, want %d", total, 5*(len("idem:00")+1000))
	}
	if !a.Status().Up || !b.Status().Up {
		t.Fatal("a replica went down")
	}
}
