package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/detourhq/detour/health/sqlitestore"
	"github.com/detourhq/detour/internal/recordstest"
)

// A ceiling holds across two stores on one file (two processes).
func TestKeepCeilingAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "health.db")
	a := sqlitestore.Open(path, sqlitestore.Options{})
	b := sqlitestore.Open(path, sqlitestore.Options{})
	t.Cleanup(func() { a.Close(); b.Close() })
	recordstest.Ceilings(t, a, b)
	if !a.Status().Up || !b.Status().Up {
		t.Fatalf("a store went down: %+v %+v", a.Status(), b.Status())
	}
}
