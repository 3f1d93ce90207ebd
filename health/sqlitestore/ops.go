package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/detourhq/detour/health"
)

// Update implements health.Store: one BEGIN IMMEDIATE transaction reads
// key's row, calls fn once and writes what fn left when it returns true, so
// the step is atomic against every process using the file. When the file
// fails, fn is applied to the memory store instead (a second call).
func (s *Store) Update(key string, fn func(e *health.Entry) bool) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	mem := s.use(func(db *sql.DB) error { return s.update(db, key, fn) })
	if mem != nil {
		return mem.Update(key, fn)
	}
	return nil
}

func (s *Store) update(db *sql.DB, key string, fn func(e *health.Entry) bool) error {
	ctx, cancel := s.ctx()
	defer cancel()
	return inTx(ctx, db, func(c *sql.Conn) error {
		now := time.Now()
		var e health.Entry
		var b []byte
		err := c.QueryRowContext(ctx, `SELECT entry FROM health WHERE key = ? AND expires > ?`,
			key, now.UnixNano()).Scan(&b)
		switch {
		case err == nil:
			e, _ = s.decode(key, b)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if !fn(&e) {
			return nil
		}
		if b, err = json.Marshal(e); err != nil {
			return err
		}
		_, err = c.ExecContext(ctx, `INSERT INTO health (key, entry, expires) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET entry = excluded.entry, expires = excluded.expires`,
			key, b, s.expires(e, now))
		return err
	})
}

// Peek implements health.Peeker with one read. A row past its expiry, or
// one that does not decode, reads as absent.
func (s *Store) Peek(key string) (health.Entry, bool) {
	var (
		e     health.Entry
		found bool
	)
	mem := s.use(func(db *sql.DB) error {
		ctx, cancel := s.ctx()
		defer cancel()
		var b []byte
		err := db.QueryRowContext(ctx, `SELECT entry FROM health WHERE key = ? AND expires > ?`,
			key, time.Now().UnixNano()).Scan(&b)
		if err == nil {
			e, found = s.decode(key, b)
		} else if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		return err
	})
	if mem != nil {
		return mem.Peek(key)
	}
	return e, found
}

// Entries implements health.Store: every row not past its expiry. Rows
// that do not decode are left out.
func (s *Store) Entries() ([]health.Entry, error) {
	var all map[string]health.Entry
	mem := s.use(func(db *sql.DB) (err error) {
		ctx, cancel := s.ctx()
		defer cancel()
		all, err = s.live(ctx, db)
		return err
	})
	if mem != nil {
		return mem.Entries()
	}
	out := make([]health.Entry, 0, len(all))
	for _, e := range all {
		out = append(out, e)
	}
	return out, nil
}

// live returns the rows not past their expiry that decode, by key.
func (s *Store) live(ctx context.Context, db *sql.DB) (map[string]health.Entry, error) {
	rows, err := db.QueryContext(ctx, `SELECT key, entry FROM health WHERE expires > ?`, time.Now().UnixNano())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]health.Entry)
	for rows.Next() {
		var (
			key string
			b   []byte
		)
		if err := rows.Scan(&key, &b); err != nil {
			return nil, err
		}
		if e, ok := s.decode(key, b); ok {
			out[key] = e
		}
	}
	return out, rows.Err()
}

// Sweep implements health.Sweeper: in one write transaction it deletes the
// rows past their expiry, those that do not decode and those drop selects.
// It returns how many rows it deleted.
func (s *Store) Sweep(drop func(e health.Entry) bool) int {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var n int
	mem := s.use(func(db *sql.DB) (err error) {
		n, err = s.sweep(db, drop)
		return err
	})
	if mem != nil {
		return mem.Sweep(drop)
	}
	return n
}

func (s *Store) sweep(db *sql.DB, drop func(e health.Entry) bool) (n int, err error) {
	ctx, cancel := s.ctx()
	defer cancel()
	err = inTx(ctx, db, func(c *sql.Conn) error {
		n = 0
		res, err := c.ExecContext(ctx, `DELETE FROM health WHERE expires <= ?`, time.Now().UnixNano())
		if err != nil {
			return err
		}
		gone, _ := res.RowsAffected()
		// Expired records go too (not counted: they are no entries).
		if _, err := c.ExecContext(ctx, `DELETE FROM records WHERE expires <= ?`, time.Now().UnixNano()); err != nil {
			return err
		}
		var doomed []string
		rows, err := c.QueryContext(ctx, `SELECT key, entry FROM health`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				key string
				b   []byte
			)
			if err := rows.Scan(&key, &b); err != nil {
				return err
			}
			if e, ok := s.decode(key, b); !ok || drop(e) {
				doomed = append(doomed, key)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		for _, key := range doomed {
			if _, err := c.ExecContext(ctx, `DELETE FROM health WHERE key = ?`, key); err != nil {
				return err
			}
		}
		n = int(gone) + len(doomed)
		return nil
	})
	return n, err
}
