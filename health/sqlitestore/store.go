package sqlitestore

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"

	"github.com/detourhq/detour/health"
)

// DefaultTimeout is Options.Timeout's default.
const DefaultTimeout = 2 * time.Second

// Options shape a Store. The zero value is ready to use.
type Options struct {
	// Logger receives the one warning logged when the file cannot be
	// used, and one per key whose row does not decode. Nil discards.
	Logger *slog.Logger
	// Forget is how long after its last write, park end or probe end a
	// row is kept: it should match the breaker's Settings.Forget. Zero
	// (or negative) means health.DefaultForget.
	Forget time.Duration
	// Timeout is how long an operation waits for another process's lock
	// on the file (SQLite's busy timeout); each operation as a whole is
	// bounded by twice it. Zero (or negative) means DefaultTimeout.
	Timeout time.Duration
}

// Store is a health.Store (and Sweeper, Peeker, Reporter) kept in one SQLite
// file, shared by the processes that open it. It is safe for concurrent use.
// Once the file fails it runs on a health.MemoryStore for good.
type Store struct {
	path string
	log  *slog.Logger
	opts Options // defaults applied

	// wmu serializes this Store's writes, so its goroutines queue here
	// rather than in SQLite's busy loop. Taken before mu.
	wmu sync.Mutex
	// mu is held shared by every use of db and exclusively to switch to
	// memory, so that the switch copies what every finished write left.
	mu     sync.RWMutex
	db     *sql.DB             // nil when the file was never opened
	mem    *health.MemoryStore // non-nil once down
	detail string              // why down

	corrupt sync.Map // keys whose corrupt row was logged

	local health.MemoryRecords // records while the store runs on memory
}

// Open returns a store kept in the SQLite file at path, creating the file
// (0600) and its directory (0700) as needed. It never fails: a path that
// cannot be used gives a store running on memory, which Status reports.
func Open(path string, opts Options) *Store {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Forget <= 0 {
		opts.Forget = health.DefaultForget
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	s := &Store{path: path, log: opts.Logger, opts: opts}
	if err := s.open(); err != nil {
		s.fail(err)
	}
	return s
}

// Status implements health.Reporter: Kind "sqlite", Where the file, Up
// false (with the reason in Detail) once the store runs on memory.
func (s *Store) Status() health.Status {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := health.Status{Kind: "sqlite", Where: s.path, Up: s.mem == nil}
	if s.mem != nil {
		st.Detail = s.detail
	}
	return st
}

// Close releases the file. A Store used after Close runs on memory.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem == nil {
		s.mem, s.detail = new(health.MemoryStore), "closed"
	}
	if s.db == nil {
		return nil
	}
	db := s.db
	s.db = nil
	return db.Close()
}

// ctx returns the bound of one operation.
func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*s.opts.Timeout)
}
