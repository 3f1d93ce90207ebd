package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/detourhq/detour/health/sqlitestore"
	"github.com/detourhq/detour/internal/recordstest"
)

// Reservations hold across two stores on one file (two processes): of
// reservers racing on both, only as many as fit get room.
func TestReserveAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "health.db")
	a := sqlitestore.Open(path, sqlitestore.Options{})
	b := sqlitestore.Open(path, sqlitestore.Options{})
	t.Cleanup(func() { a.Close(); b.Close() })
	recordstest.Reserve(t, a, b)
	if !a.Status().Up || !b.Status().Up {
		t.Fatalf("a store went down (its reservations were then this process's alone): %+v %+v", a.Status(), b.Status())
	}
}
