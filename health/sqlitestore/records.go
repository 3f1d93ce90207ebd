package sqlitestore

import (
	"database/sql"
	"errors"
	"strconv"
	"time"
)

// The Store implements health.Records in the file's records table, so a
// record (an idempotency key's answer, a day's spend, a kept answer)
// holds across every detour process on the machine. Once the store runs
// on memory, records do too (s.local), for this process only; the file's
// records are not copied over.

// Claim implements health.Records in one BEGIN IMMEDIATE transaction.
func (s *Store) Claim(key string, value []byte, ttl time.Duration) (held []byte, claimed bool, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if mem := s.use(func(db *sql.DB) error {
		ctx, cancel := s.ctx()
		defer cancel()
		return inTx(ctx, db, func(c *sql.Conn) error {
			now := time.Now()
			err := c.QueryRowContext(ctx, `SELECT value FROM records WHERE key = ? AND expires > ?`, key, now.UnixNano()).Scan(&held)
			switch {
			case err == nil:
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
			claimed = true
			return putRecord(c, s, key, value, now.Add(ttl))
		})
	}); mem != nil {
		return s.local.Claim(key, value, ttl)
	}
	return held, claimed, nil
}

// Put implements health.Records.
func (s *Store) Put(key string, value []byte, ttl time.Duration) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if mem := s.use(func(db *sql.DB) error {
		ctx, cancel := s.ctx()
		defer cancel()
		return inTx(ctx, db, func(c *sql.Conn) error { return putRecord(c, s, key, value, time.Now().Add(ttl)) })
	}); mem != nil {
		return s.local.Put(key, value, ttl)
	}
	return nil
}

// Get implements health.Records with one read.
func (s *Store) Get(key string) (val []byte, found bool, err error) {
	if mem := s.use(func(db *sql.DB) error {
		ctx, cancel := s.ctx()
		defer cancel()
		err := db.QueryRowContext(ctx, `SELECT value FROM records WHERE key = ? AND expires > ?`, key, time.Now().UnixNano()).Scan(&val)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	}); mem != nil {
		return s.local.Get(key)
	}
	return val, found, nil
}

// Delete implements health.Records.
func (s *Store) Delete(key string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if mem := s.use(func(db *sql.DB) error {
		ctx, cancel := s.ctx()
		defer cancel()
		_, err := db.ExecContext(ctx, `DELETE FROM records WHERE key = ?`, key)
		return err
	}); mem != nil {
		return s.local.Delete(key)
	}
	return nil
}

// Add implements health.Records in one BEGIN IMMEDIATE transaction.
func (s *Store) Add(key string, delta float64, ttl time.Duration) (sum float64, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if mem := s.use(func(db *sql.DB) error {
		ctx, cancel := s.ctx()
		defer cancel()
		return inTx(ctx, db, func(c *sql.Conn) error {
			now := time.Now()
			var b []byte
			var expires int64
			err := c.QueryRowContext(ctx, `SELECT value, expires FROM records WHERE key = ? AND expires > ?`, key, now.UnixNano()).Scan(&b, &expires)
			until := now.Add(ttl)
			switch {
			case err == nil:
				if f, perr := strconv.ParseFloat(string(b), 64); perr == nil {
					sum = f
				}
				until = time.Unix(0, expires) // a counter keeps its first expiry
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
			sum += delta
			return putRecord(c, s, key, strconv.AppendFloat(nil, sum, 'g', -1, 64), until)
		})
	}); mem != nil {
		return s.local.Add(key, delta, ttl)
	}
	return sum, nil
}

// putRecord writes key's value until expires (Sweep drops expired ones).
func putRecord(c *sql.Conn, s *Store, key string, value []byte, expires time.Time) error {
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := c.ExecContext(ctx, `INSERT INTO records (key, value, expires) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires = excluded.expires`, key, value, expires.UnixNano())
	return err
}
