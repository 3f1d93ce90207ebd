package sqlitestore_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
)

// stillWorks checks that s, down, still counts and parks (on memory), that
// it says so, and that it logged exactly one warning naming the file.
func stillWorks(t *testing.T, s *sqlitestore.Store, path string, log *logBuf, detail string) {
	t.Helper()
	before := 0
	if e, ok := s.Peek("k"); ok {
		before = e.Failures
	}
	for range 3 {
		if err := incr(s, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if got := failures(t, s, "k"); got != before+3 {
		t.Errorf("failures = %d, want %d", got, before+3)
	}
	b := health.NewWithStore(health.Settings{}, s)
	now := time.Now()
	b.Park("x/y", now.Add(time.Hour), "wall", now)
	if _, err := b.Allow("x/y", now); !errors.Is(err, health.ErrParked) {
		t.Errorf("Allow after Park = %v, want parked", err)
	}
	st := s.Status()
	if st.Up || st.Kind != "sqlite" || st.Where != path || !strings.Contains(st.Detail, detail) {
		t.Errorf("Status = %+v, want down with %q", st, detail)
	}
	w := log.warnings()
	if len(w) != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", len(w), log.String())
	}
	t.Log(w[0])
	if !strings.Contains(w[0], path) || !strings.Contains(w[0], "fix=") {
		t.Errorf("warning %q does not name the file and the fix", w[0])
	}
}

func TestDegradeNoDirectory(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(blocker, "health.db")
	var log logBuf
	s := sqlitestore.Open(path, sqlitestore.Options{Logger: log.logger()})
	defer s.Close()
	stillWorks(t, s, path, &log, "make directory")
}

func TestDegradeCorrupt(t *testing.T) {
	path := dbPath(t)
	os.MkdirAll(filepath.Dir(path), 0o700)
	garbage := bytes.Repeat([]byte("this is not a database\x00\xff"), 200)
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	var log logBuf
	s := sqlitestore.Open(path, sqlitestore.Options{Logger: log.logger()})
	defer s.Close()
	stillWorks(t, s, path, &log, "not a database")
	if !strings.Contains(log.String(), "delete it; detour recreates it") {
		t.Errorf("the warning gives no fix: %s", log.String())
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, garbage) {
		t.Error("the corrupt file was changed")
	}
}

func TestDegradeNewerSchema(t *testing.T) {
	path := dbPath(t)
	open(t, path, sqlitestore.Options{}).Close()
	raw := rawDB(t, path, "")
	if _, err := raw.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	var log logBuf
	s := sqlitestore.Open(path, sqlitestore.Options{Logger: log.logger()})
	defer s.Close()
	stillWorks(t, s, path, &log, "newer")
}

// Another connection holds the write lock of a WAL file past the timeout:
// Open succeeds, the first write fails and goes to memory, with what the
// file held copied first.
func TestDegradeLockedWrite(t *testing.T) {
	path := dbPath(t)
	s0 := open(t, path, sqlitestore.Options{})
	for range 5 {
		incr(s0, "k")
	}
	s0.Close()
	unlock := lock(t, path, "&_pragma=journal_mode(WAL)")
	defer unlock()
	var log logBuf
	s := sqlitestore.Open(path, sqlitestore.Options{Logger: log.logger(), Timeout: 100 * time.Millisecond})
	defer s.Close()
	start := time.Now()
	if err := incr(s, "k"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the failed write took %v", d)
	}
	if got := failures(t, s, "k"); got != 6 {
		t.Errorf("failures = %d, want the file's 5 plus this update", got)
	}
	stillWorks(t, s, path, &log, "locked")
}

// A rollback-journal file locked exclusively cannot even be read: Open
// goes to memory at once.
func TestDegradeLockedOpen(t *testing.T) {
	path := dbPath(t)
	os.MkdirAll(filepath.Dir(path), 0o700)
	unlock := lock(t, path, "")
	defer unlock()
	var log logBuf
	s := sqlitestore.Open(path, sqlitestore.Options{Logger: log.logger(), Timeout: 100 * time.Millisecond})
	defer s.Close()
	stillWorks(t, s, path, &log, "locked")
}

// rawDB opens path with no store around it; query is appended to the DSN.
func rawDB(t *testing.T, path, query string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(2000)"+query)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// lock holds path locked by BEGIN EXCLUSIVE on another connection until
// the returned func is called.
func lock(t *testing.T, path, query string) (unlock func()) {
	t.Helper()
	ctx := context.Background()
	c, err := rawDB(t, path, query).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE IF NOT EXISTS other (x)", "BEGIN EXCLUSIVE", "INSERT INTO other VALUES (1)"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return func() {
		c.ExecContext(ctx, "ROLLBACK")
		c.Close()
	}
}

// A corrupt row reads as absent, is logged once, and a sweep removes it;
// the store stays up.
func TestCorruptRow(t *testing.T) {
	path := dbPath(t)
	var log logBuf
	s := open(t, path, sqlitestore.Options{Logger: log.logger()})
	if _, err := rawDB(t, path, "").Exec(`INSERT INTO health VALUES ('bad', x'00ff', 9223372036854775807)`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, ok := s.Peek("bad"); ok {
			t.Fatal("Peek found a corrupt row")
		}
	}
	if all, err := s.Entries(); err != nil || len(all) != 0 {
		t.Fatalf("Entries = %v, %v", all, err)
	}
	if n := s.Sweep(func(health.Entry) bool { return false }); n != 1 {
		t.Errorf("Sweep removed %d, want the corrupt row", n)
	}
	if w := log.warnings(); len(w) != 1 || !strings.Contains(w[0], "corrupt row") {
		t.Errorf("warnings = %q, want one about the corrupt row", w)
	}
	if !s.Status().Up {
		t.Errorf("a corrupt row took the store down: %s", s.Status().Detail)
	}
}
