package sqlitestore_test

import (
	"bytes"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
)

// logBuf is a slog destination safe for concurrent use.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// warnings returns the WARN lines logged.
func (l *logBuf) warnings() []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, "level=WARN") {
			out = append(out, line)
		}
	}
	return out
}

func (l *logBuf) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// dbPath returns a fresh file path in a test directory.
func dbPath(t testing.TB) string { return filepath.Join(t.TempDir(), "state", "health.db") }

// open opens a store on path, closed at the end of the test, and fails the
// test unless it is up.
func open(t testing.TB, path string, opts sqlitestore.Options) *sqlitestore.Store {
	t.Helper()
	s := sqlitestore.Open(path, opts)
	t.Cleanup(func() { s.Close() })
	if st := s.Status(); !st.Up {
		t.Fatalf("Open(%s): down: %s", path, st.Detail)
	}
	return s
}

// incr adds one to key's failure count.
func incr(s health.Store, key string) error {
	return s.Update(key, func(e *health.Entry) bool {
		e.Key = key
		e.Failures++
		return true
	})
}

func failures(t testing.TB, s *sqlitestore.Store, key string) int {
	t.Helper()
	e, ok := s.Peek(key)
	if !ok {
		t.Fatalf("Peek(%q): no entry", key)
	}
	return e.Failures
}

// sqlOpen opens path with no store around it.
func sqlOpen(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(2000)")
}
