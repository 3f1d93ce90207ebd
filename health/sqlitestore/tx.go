package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"
)

// inTx runs fn in one write transaction on a connection of its own,
// started with BEGIN IMMEDIATE so that the write lock is taken (or waited
// for, up to the busy timeout) before anything is read. It commits when fn
// returns nil and rolls back otherwise, a panic included.
func inTx(ctx context.Context, db *sql.DB, fn func(c *sql.Conn) error) (err error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			rollback(c)
		}
	}()
	if err := fn(c); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	done = true
	return nil
}

// rollback ends c's transaction, on a fresh bound since the operation's
// may be what ran out. A connection that cannot roll back may still be in
// its transaction: it is discarded rather than pooled.
func rollback(c *sql.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := c.ExecContext(ctx, "ROLLBACK"); err != nil {
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
	}
}
