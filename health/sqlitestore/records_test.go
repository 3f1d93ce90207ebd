package sqlitestore_test

import (
	"database/sql"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
)

var _ health.Records = (*sqlitestore.Store)(nil)

// Records in the file: one claim wins across two stores on it (two
// processes, as two ask runs), a value and a counter are seen by the other.
func TestRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "health.db")
	a := sqlitestore.Open(path, sqlitestore.Options{})
	b := sqlitestore.Open(path, sqlitestore.Options{})
	t.Cleanup(func() { a.Close(); b.Close() })
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			if _, ok, err := s.Claim("op", []byte("first"), time.Minute); err == nil && ok {
				wins.Add(1)
			}
			if _, err := s.Add("spend", 0.5, time.Hour); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d claims won, want 1", wins.Load())
	}
	if sum, err := b.Add("spend", 0, time.Hour); err != nil || sum != 10 {
		t.Fatalf("20 adds of 0.5 read %v (%v), want 10", sum, err)
	}
	if err := a.Put("op", []byte("done"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := b.Get("op"); err != nil || !ok || string(v) != "done" {
		t.Fatalf("the other store reads %q %v %v", v, ok, err)
	}
	if err := b.Delete("op"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := a.Get("op"); ok {
		t.Fatal("a deleted record is still there")
	}
	if err := a.Put("brief", []byte("x"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, ok, _ := b.Get("brief"); ok {
		t.Fatal("an expired record is still read")
	}
	if !a.Status().Up || !b.Status().Up {
		t.Fatalf("a store went down: %+v %+v", a.Status(), b.Status())
	}
}

// A file of version 1 (before records) is migrated on open.
func TestMigratesVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "health.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE health (key TEXT PRIMARY KEY, entry BLOB NOT NULL, expires INTEGER NOT NULL);
		PRAGMA user_version = 1;`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := sqlitestore.Open(path, sqlitestore.Options{})
	defer s.Close()
	if err := s.Put("k", []byte("v"), time.Minute); err != nil || !s.Status().Up {
		t.Fatalf("Put on a migrated file: %v, %+v", err, s.Status())
	}
	db, _ = sql.Open("sqlite", path)
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 3 {
		t.Fatalf("user_version %d (%v), want 3", v, err)
	}
}
