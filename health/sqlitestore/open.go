package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// schemaVersion is the file's PRAGMA user_version once set up; a later
// change of the schema bumps it and migrates in setup.
const schemaVersion = 3

// schema creates version 1; migrations[v] takes a file from version v to
// v+1.
const schema = `
CREATE TABLE IF NOT EXISTS health (
	key     TEXT PRIMARY KEY,
	entry   BLOB NOT NULL,
	expires INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS health_expires ON health(expires);
PRAGMA user_version = 1;`

// migrations: version 2 adds the records (health.Records: idempotency
// records, kept answers, daily spend); version 3 their size, set on kept
// records only (health.Records.Keep), with an index of them by key, so a
// class's count and bytes are read from the index alone.
var migrations = map[int]string{1: `
CREATE TABLE IF NOT EXISTS records (
	key     TEXT PRIMARY KEY,
	value   BLOB NOT NULL,
	expires INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS records_expires ON records(expires);
PRAGMA user_version = 2;`, 2: `
ALTER TABLE records ADD COLUMN size INTEGER;
CREATE INDEX IF NOT EXISTS records_kept ON records(key, expires, size) WHERE size IS NOT NULL;
PRAGMA user_version = 3;`}

// errNewer is setup's error for a file set up by a later detour.
var errNewer = errors.New("schema is newer than this detour knows")

// open makes the directory and the file, opens the database and sets up
// its schema. On error s.db is left set when the file was opened, so that
// fail can still copy what it holds.
func (s *Store) open() error {
	if s.path == "" {
		return errors.New("no path")
	}
	abs, err := filepath.Abs(s.path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return &dirError{err}
	}
	// SQLite would create the file 0644; create it 0600 first. Its -wal
	// and -shm files take the file's mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	s.db, err = sql.Open("sqlite", dsn(abs, s.opts.Timeout.Milliseconds()))
	if err != nil {
		return err
	}
	s.db.SetMaxOpenConns(4)
	s.db.SetMaxIdleConns(4)
	ctx, cancel := s.ctx()
	defer cancel()
	return setup(ctx, s.db)
}

// dsn returns the modernc.org/sqlite name of the file at abs: a file: URI
// (so that a '?', '#' or '%' in the path is escaped) whose _pragma values
// every new connection runs, busy_timeout first.
func dsn(abs string, busyMillis int64) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/...
	}
	return "file://" + (&url.URL{Path: p}).EscapedPath() +
		fmt.Sprintf("?_pragma=busy_timeout(%d)", busyMillis) +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
}

// setup brings the schema to schemaVersion. A file already there costs one
// read; only a new file takes the write lock.
func setup(ctx context.Context, db *sql.DB) error {
	v, err := userVersion(ctx, db)
	if err != nil || v == schemaVersion {
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("%w (version %d, known %d)", errNewer, v, schemaVersion)
	}
	return inTx(ctx, db, func(c *sql.Conn) error {
		v, err := userVersion(ctx, c) // another process may have set it up meanwhile
		if err != nil {
			return err
		}
		if v == 0 {
			if _, err := c.ExecContext(ctx, schema); err != nil {
				return err
			}
			v = 1
		}
		for ; v < schemaVersion; v++ {
			if _, err := c.ExecContext(ctx, migrations[v]); err != nil {
				return err
			}
		}
		return nil
	})
}

// querier is a *sql.DB or a *sql.Conn.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func userVersion(ctx context.Context, q querier) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// dirError is a failure to make the file's directory.
type dirError struct{ err error }

func (e *dirError) Error() string { return "make directory: " + e.err.Error() }
func (e *dirError) Unwrap() error { return e.err }
