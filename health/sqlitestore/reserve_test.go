package sqlitestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
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

// A store that runs on memory reserves nothing (its count would be this
// process's alone), and still adds.
func TestReserveOnMemoryHoldsNothing(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := sqlitestore.Open(filepath.Join(blocker, "health.db"), sqlitestore.Options{})
	defer s.Close()
	if _, ok, err := s.Reserve("spend:k", 0.1, 1, time.Hour); ok || !errors.Is(err, health.ErrUnreachable) {
		t.Fatalf("Reserve on memory: %v %v, want health.ErrUnreachable", ok, err)
	}
	if sum, err := s.Add("spend:k", 0.1, time.Hour); err != nil || sum != 0.1 {
		t.Fatalf("Add on memory: %g %v", sum, err)
	}
}
