package sqlitestore_test

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
)

var (
	_ health.Store    = (*sqlitestore.Store)(nil)
	_ health.Sweeper  = (*sqlitestore.Store)(nil)
	_ health.Peeker   = (*sqlitestore.Store)(nil)
	_ health.Reporter = (*sqlitestore.Store)(nil)
)

// Eight goroutines add 200 each through two stores opened on one file.
func TestUpdateAtomicAcrossStores(t *testing.T) {
	t.Parallel()
	path := dbPath(t)
	stores := []*sqlitestore.Store{open(t, path, sqlitestore.Options{}), open(t, path, sqlitestore.Options{})}
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for range each {
				if err := incr(stores[i%2], "k"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, s := range stores {
		if st := s.Status(); !st.Up {
			t.Fatalf("store %d went down: %s", i, st.Detail)
		}
	}
	fresh := open(t, path, sqlitestore.Options{})
	if got := failures(t, fresh, "k"); got != workers*each {
		t.Errorf("failures = %d, want %d", got, workers*each)
	}
}

func TestPeekEntriesSweep(t *testing.T) {
	path := dbPath(t)
	s := open(t, path, sqlitestore.Options{})
	if _, ok := s.Peek("a"); ok {
		t.Fatal("Peek of an empty store found an entry")
	}
	// fn returning false stores nothing.
	if err := s.Update("a", func(e *health.Entry) bool { e.Failures = 9; return false }); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Peek("a"); ok {
		t.Fatal("an Update returning false stored an entry")
	}
	now := time.Now().Round(0)
	want := health.Entry{Key: "a", State: health.Open, Until: now.Add(time.Hour), Reason: "wall",
		Kind: "wall", Status: "http_429", Failures: 2, Generation: 3, Touched: now}
	for _, key := range []string{"a", "b", "c"} {
		if err := s.Update(key, func(e *health.Entry) bool {
			if e.Key != "" {
				t.Errorf("Update(%q) saw %+v, want a zero entry", key, *e)
			}
			*e = want
			e.Key = key
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	got, ok := s.Peek("a")
	if !ok || got.Key != "a" || got.State != want.State || !got.Until.Equal(want.Until) ||
		!got.Touched.Equal(want.Touched) || got.Reason != want.Reason || got.Kind != want.Kind ||
		got.Status != want.Status || got.Failures != want.Failures || got.Generation != want.Generation {
		t.Fatalf("Peek(a) = %+v, %v; want %+v", got, ok, want)
	}
	if keys := entryKeys(t, s); !slices.Equal(keys, []string{"a", "b", "c"}) {
		t.Fatalf("Entries keys = %v", keys)
	}
	if n := s.Sweep(func(e health.Entry) bool { return e.Key == "b" }); n != 1 {
		t.Fatalf("Sweep removed %d, want 1", n)
	}
	if keys := entryKeys(t, s); !slices.Equal(keys, []string{"a", "c"}) {
		t.Fatalf("Entries keys after Sweep = %v", keys)
	}

	// The file and its WAL are the user's alone.
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
	if fi, err := os.Stat(path + "/.."); err == nil && fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", fi.Mode().Perm())
	}
}

// A path with characters special in a file: URI.
func TestOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a b?c#d%20e")
	path := filepath.Join(dir, "health.db")
	s := open(t, path, sqlitestore.Options{})
	if err := incr(s, "k"); err != nil {
		t.Fatal(err)
	}
	if got := failures(t, open(t, path, sqlitestore.Options{}), "k"); got != 1 {
		t.Errorf("failures = %d", got)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the file is not where asked: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(dir)); len(ents) != 1 {
		t.Errorf("files made beside the directory: %v", ents)
	}
}

// A row expires Forget after its last write, park end or probe end.
func TestExpiry(t *testing.T) {
	s := open(t, dbPath(t), sqlitestore.Options{Forget: 50 * time.Millisecond})
	now := time.Now()
	if err := incr(s, "idle"); err != nil {
		t.Fatal(err)
	}
	if err := s.Update("parked", func(e *health.Entry) bool {
		*e = health.Entry{Key: "parked", State: health.Open, Until: now.Add(time.Hour), Touched: now}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if keys := entryKeys(t, s); !slices.Equal(keys, []string{"idle", "parked"}) {
		t.Fatalf("Entries keys = %v", keys)
	}
	time.Sleep(100 * time.Millisecond)
	if _, ok := s.Peek("idle"); ok {
		t.Error("Peek found an expired row")
	}
	if keys := entryKeys(t, s); !slices.Equal(keys, []string{"parked"}) {
		t.Fatalf("Entries keys after expiry = %v", keys)
	}
	// Update reads an expired row as absent.
	if err := s.Update("idle", func(e *health.Entry) bool {
		if e.Failures != 0 {
			t.Errorf("Update saw expired entry %+v", *e)
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if n := s.Sweep(func(health.Entry) bool { return false }); n != 1 {
		t.Errorf("Sweep removed %d, want the 1 expired row", n)
	}
}

// A Store used after Close runs on memory, without a warning.
func TestClose(t *testing.T) {
	var log logBuf
	s := sqlitestore.Open(dbPath(t), sqlitestore.Options{Logger: log.logger()})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := incr(s, "k"); err != nil {
		t.Fatal(err)
	}
	if got := failures(t, s, "k"); got != 1 {
		t.Errorf("failures = %d", got)
	}
	if st := s.Status(); st.Up || st.Detail != "closed" {
		t.Errorf("Status after Close = %+v", st)
	}
	if w := log.warnings(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
}

func entryKeys(t *testing.T, s *sqlitestore.Store) []string {
	t.Helper()
	all, err := s.Entries()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range all {
		keys = append(keys, e.Key)
	}
	slices.Sort(keys)
	return keys
}
