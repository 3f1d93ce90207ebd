package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"github.com/detourhq/detour/health"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// use runs op on the file, or returns the memory store to use instead: the
// one in force when the store is down, or a new one when op fails (fail).
func (s *Store) use(op func(db *sql.DB) error) *health.MemoryStore {
	mem, err := s.try(op)
	if mem != nil || err == nil {
		return mem
	}
	return s.fail(err)
}

// try runs op on the file unless the store is down, holding mu shared
// (also should op panic: fn is the caller's).
func (s *Store) try(op func(db *sql.DB) error) (*health.MemoryStore, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mem != nil {
		return s.mem, nil
	}
	return nil, op(s.db)
}

// fail switches the store to memory for the rest of the process, once: it
// copies what the file holds when it still can, logs one warning naming
// the file, err and the fix, and closes the file. It returns the memory
// store.
func (s *Store) fail(err error) *health.MemoryStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil {
		return s.mem // another operation failed first
	}
	mem := new(health.MemoryStore)
	copied := 0
	if s.db != nil {
		// Copy on a short bound: a lock that failed a write may block
		// reads as well.
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout/2)
		all, cerr := s.live(ctx, s.db)
		cancel()
		if cerr == nil {
			for key, e := range all {
				_ = mem.Update(key, func(p *health.Entry) bool { *p = e; return true })
			}
			copied = len(all)
		}
		_ = s.db.Close()
		s.db = nil
	}
	fix := remedy(err)
	s.mem = mem
	s.detail = fmt.Sprintf("%v; running on memory for this process; fix: %s", err, fix)
	s.log.Warn("health store unusable; running on memory for this process",
		"file", s.path, "err", err, "fix", fix, "copied", copied)
	return mem
}

// remedy returns what the user can do about err, in a few words.
func remedy(err error) string {
	var se *sqlite.Error
	var de *dirError
	switch {
	case errors.As(err, &de):
		return "make its directory writable, or set another path"
	case errors.Is(err, os.ErrPermission):
		return "make the file writable by this user, or delete it; detour recreates it"
	case errors.Is(err, errNewer):
		return "upgrade detour, or delete it; detour recreates it"
	case errors.Is(err, context.DeadlineExceeded):
		return "another process holds it locked: let it finish, or delete the file; detour recreates it"
	case errors.As(err, &se):
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return "another process holds it locked: let it finish, or delete the file; detour recreates it"
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
			return "make the file and its directory writable by this user, or set another path"
		case sqlite3.SQLITE_FULL:
			return "free disk space"
		}
	}
	return "delete it; detour recreates it"
}
