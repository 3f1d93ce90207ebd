package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/detourhq/detour/health"
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
	sum, _, err = s.add(key, delta, math.Inf(1), ttl)
	return sum, err
}

// Reserve implements health.Records in one BEGIN IMMEDIATE transaction:
// the write lock is taken before the sum is read, so no other process on
// the file reads it between the check and the add. Once the store runs on
// memory it reserves nothing (health.ErrUnreachable).
func (s *Store) Reserve(key string, amount, limit float64, ttl time.Duration) (sum float64, ok bool, err error) {
	return s.add(key, amount, limit, ttl)
}

// add adds delta to key's number when the sum stays within limit (see
// health.Records.Reserve), in one transaction; on memory, s.local does.
func (s *Store) add(key string, delta, limit float64, ttl time.Duration) (sum float64, ok bool, err error) {
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
			sum = 0
			switch {
			case err == nil:
				if f, perr := strconv.ParseFloat(string(b), 64); perr == nil {
					sum = f
				}
				until = time.Unix(0, expires) // a counter keeps its first expiry
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
			if ok = sum+delta <= limit+health.ReserveSlack; !ok {
				return nil // nothing written: the transaction ends as it began
			}
			sum += delta
			return putRecord(c, s, key, strconv.AppendFloat(nil, sum, 'g', -1, 64), until)
		})
	}); mem != nil {
		if !math.IsInf(limit, 1) {
			return 0, false, health.ErrUnreachable
		}
		sum, err = s.local.Add(key, delta, ttl)
		return sum, err == nil, err
	}
	return sum, ok, nil
}

// putRecord writes key's value until expires (Sweep drops expired ones),
// as a record no ceiling evicts (size NULL).
func putRecord(c *sql.Conn, s *Store, key string, value []byte, expires time.Time) error {
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := c.ExecContext(ctx, `INSERT INTO records (key, value, expires, size) VALUES (?, ?, ?, NULL)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires = excluded.expires, size = NULL`, key, value, expires.UnixNano())
	return err
}

// Keep implements health.Records in one BEGIN IMMEDIATE transaction, so
// a ceiling holds across every process on the file: the class's expired
// kept records are dropped, then, while the class with value would pass
// c, the kept record that expires soonest is evicted. Claims, Puts and
// counters (size NULL) are never candidates.
func (s *Store) Keep(key string, value []byte, ttl time.Duration, c health.Ceiling) (evicted int, err error) {
	size := int64(len(key) + len(value))
	if c.Bytes > 0 && size > c.Bytes {
		return s.local.Keep(key, value, ttl, c) // refused there, with the same error, without a write
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if mem := s.use(func(db *sql.DB) error {
		ctx, cancel := s.ctx()
		defer cancel()
		return inTx(ctx, db, func(conn *sql.Conn) error {
			now := time.Now().UnixNano()
			in, args := classRange(health.RecordClass(key))
			if _, err := conn.ExecContext(ctx, `DELETE FROM records WHERE size IS NOT NULL AND `+in+` AND expires <= ?`,
				append(args, now)...); err != nil {
				return err
			}
			var n int
			var total int64
			if err := conn.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(size), 0) FROM records
				WHERE size IS NOT NULL AND `+in+` AND key <> ?`, append(args, key)...).Scan(&n, &total); err != nil {
				return err
			}
			if n, err = evictKept(ctx, conn, in, append(args, key), n, total, size, c); err != nil {
				return err
			}
			evicted = n
			_, err := conn.ExecContext(ctx, `INSERT INTO records (key, value, expires, size) VALUES (?, ?, ?, ?)
				ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires = excluded.expires, size = excluded.size`,
				key, value, time.Now().Add(ttl).UnixNano(), size)
			return err
		})
	}); mem != nil {
		return s.local.Keep(key, value, ttl, c)
	}
	return evicted, nil
}

// evictKept deletes the kept records of the class in (args: its bounds,
// then the key being kept, which is never a candidate), soonest to expire
// first, while n records of total bytes plus one of size pass c; it
// returns how many it deleted.
func evictKept(ctx context.Context, conn *sql.Conn, in string, args []any, n int, total, size int64, c health.Ceiling) (int, error) {
	over := func() bool { return (c.Count > 0 && n+1 > c.Count) || (c.Bytes > 0 && total+size > c.Bytes) }
	evicted := 0
	for n > 0 && over() {
		rows, err := conn.QueryContext(ctx, `SELECT key, size FROM records WHERE size IS NOT NULL AND `+in+
			` AND key <> ? ORDER BY expires LIMIT 64`, args...)
		if err != nil {
			return evicted, err
		}
		var keys []string
		for rows.Next() && over() {
			var k string
			var sz int64
			if err := rows.Scan(&k, &sz); err != nil {
				rows.Close()
				return evicted, err
			}
			keys = append(keys, k)
			n, total = n-1, total-sz
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return evicted, err
		}
		for _, k := range keys {
			if _, err := conn.ExecContext(ctx, `DELETE FROM records WHERE key = ?`, k); err != nil {
				return evicted, err
			}
			evicted++
		}
		if len(keys) == 0 {
			break
		}
	}
	return evicted, nil
}

// classRange is the SQL condition (and its arguments) of the keys of
// class: a range of the primary key when the class ends in ':', else the
// keys without one.
func classRange(class string) (string, []any) {
	if class == "" {
		return `instr(key, ':') = 0`, nil
	}
	n := len(class)
	return `key >= ? AND key < ?`, []any{class, class[:n-1] + string(class[n-1]+1)}
}
