package redisstore

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// listen subscribes to the namespace's change channel and applies other
// replicas' writes to the local cache. Each (re)subscription asks for a
// full reload, since messages may have been missed while it was away.
// While the store is down it waits, and leaves reconnecting to run.
func (s *Store) listen() {
	defer s.wg.Done()
	subscribed := false
	for s.ctx.Err() == nil {
		if !s.up.Load() {
			s.waitUp() // the loop finds when Redis is back
			continue
		}
		if !subscribed {
			ctx, cancel := context.WithTimeout(s.ctx, s.c.bgTimeout)
			_ = s.ps.Subscribe(ctx, s.c.channel) // on failure, Receive reconnects
			cancel()
			subscribed = true
		}
		msg, err := s.ps.ReceiveTimeout(s.ctx, s.c.resyncEvery)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Quiet: check that the connection still answers.
				ctx, cancel := context.WithTimeout(s.ctx, s.c.bgTimeout)
				err = s.ps.Ping(ctx)
				cancel()
			}
			if err != nil && s.ctx.Err() == nil {
				s.nudge() // the loop checks Redis at once
				s.sleep(s.c.pingEvery)
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				s.resync.Store(true)
				s.nudge()
			}
		case *redis.Message:
			s.apply(m.Payload)
		}
	}
}

// waitUp waits until the store reports up (or PingEvery passes, or Close).
func (s *Store) waitUp() {
	t := time.NewTimer(s.c.pingEvery)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.upSignal:
	case <-s.ctx.Done():
	}
}

// sleep waits d, or until Close.
func (s *Store) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.ctx.Done():
	}
}

// apply takes a change message into the local cache, when it comes from
// another Store and is newer than the cached entry. A key with a local
// change not yet pushed keeps the merge of both. Malformed messages and
// entries are ignored.
func (s *Store) apply(msg string) {
	origin, key, raw, ok := parseMessage(msg)
	if !ok || origin == s.origin {
		return
	}
	e, ok := decode(raw)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, have := s.items[key]
	if _, d := s.dirty[key]; d && have {
		cur.e, _ = merge(e, cur.e)
		cur.raw, cur.inRedis = raw, true
		s.setLocked(key, cur)
		return
	}
	if have && !newer(e, cur.e, s.c.forget) {
		return
	}
	s.setLocked(key, item{e: e, raw: raw, inRedis: true})
}
