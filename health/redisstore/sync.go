package redisstore

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// run is the background loop: every PingEvery (or when nudged) it checks
// Redis; when Redis answers after an outage it pushes the local changes,
// reloads the cache and marks the store up; while up it pushes stray
// local changes and reloads the cache every ResyncEvery.
func (s *Store) run() {
	defer s.wg.Done()
	t := time.NewTicker(s.c.pingEvery)
	defer t.Stop()
	for {
		s.tick()
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// tick is one turn of run.
func (s *Store) tick() {
	if err := s.probe(); err != nil {
		s.markDown(err)
		return
	}
	if !s.up.Load() {
		if err := s.recover(); err != nil {
			s.markDown(err)
		}
		return
	}
	if err := s.pushDirty(); err != nil {
		s.markDown(err)
		return
	}
	if s.resync.Load() || !s.c.now().Before(s.lastResync.Add(s.c.resyncEvery)) {
		if err := s.reload(); err != nil {
			s.markDown(err)
		}
	}
}

// probe runs the compare-and-set script on a key no entry uses, writing
// nothing: it checks the connection, the password and the right to run
// scripts, and loads the script after a restart.
func (s *Store) probe() error {
	ctx, cancel := context.WithTimeout(s.ctx, s.c.bgTimeout)
	defer cancel()
	if !s.up.Load() {
		// Down: dial first on our own, so that go-redis (which logs each
		// failed dial) only tries once something listens.
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.c.redis.Addr)
		if err != nil {
			return err
		}
		c.Close()
	}
	keys := []string{s.c.probeKey, s.c.probeKey}
	return s.cas.Run(ctx, s.client, keys, "0", "", "", 0, s.c.channel, "", "", 0).Err()
}

// recover brings the store back up: local changes pushed, the cache
// reloaded, and no local change left (one made meanwhile is pushed too).
func (s *Store) recover() error {
	if err := s.pushDirty(); err != nil {
		return err
	}
	if err := s.reload(); err != nil {
		return err
	}
	for range maxAttempts {
		s.reportMu.Lock()
		s.mu.Lock()
		n := len(s.dirty)
		if n == 0 {
			s.up.Store(true)
			s.detail = ""
		}
		s.mu.Unlock()
		if n == 0 {
			s.reportLocked(true, nil)
			s.reportMu.Unlock()
			return nil
		}
		s.reportMu.Unlock()
		if err := s.pushDirty(); err != nil {
			return err
		}
	}
	return nil // still busy: next tick
}

// pushDirty pushes every local change into Redis (push).
func (s *Store) pushDirty() error {
	s.mu.RLock()
	keys := make([]string, 0, len(s.dirty))
	for k := range s.dirty {
		keys = append(keys, k)
	}
	s.mu.RUnlock()
	for _, k := range keys {
		if err := s.pushKey(k); err != nil {
			return fmt.Errorf("pushing %q: %w", k, err)
		}
	}
	return nil
}

// pushKey pushes key's local change under the key's lock.
func (s *Store) pushKey(key string) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.c.opTimeout)
	defer cancel()
	unlock, err := s.locks.lock(ctx, key)
	if err != nil {
		return nil // an Update holds it, and pushes it itself
	}
	defer unlock()
	if err := s.push(ctx, key); err != nil && s.outage(err) {
		return err
	}
	return nil // done, or left for the next turn (a conflict)
}

// reload reads every entry of the namespace (SCAN, MGET) into the local
// cache. An item changed locally while it read is kept, and so is one
// not yet pushed; an item Redis no longer holds is dropped.
func (s *Store) reload() error {
	s.resync.Store(false)
	s.mu.RLock()
	seq0 := s.seq
	s.mu.RUnlock()
	found := make(map[string]string)
	var cursor uint64
	for {
		ctx, cancel := context.WithTimeout(s.ctx, s.c.bgTimeout)
		keys, next, err := s.client.Scan(ctx, cursor, s.c.prefix+"*", 512).Result()
		var vals []any
		if err == nil && len(keys) > 0 {
			vals, err = s.client.MGet(ctx, keys...).Result()
		}
		cancel()
		if err != nil {
			s.resync.Store(true)
			return err
		}
		for i, k := range keys {
			if v, ok := vals[i].(string); ok && strings.HasPrefix(k, s.c.prefix) {
				found[k[len(s.c.prefix):]] = v
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, it := range s.items {
		raw, ok := found[k]
		if it.seq > seq0 || (it.inRedis && ok && it.raw == raw) {
			continue
		}
		if _, d := s.dirty[k]; !d && !ok {
			delete(s.items, k)
			s.seq++
		}
	}
	for k, raw := range found {
		it, have := s.items[k]
		if _, d := s.dirty[k]; d || have && (it.seq > seq0 || it.inRedis && it.raw == raw) {
			continue
		}
		if e, ok := decode(raw); ok {
			s.setLocked(k, item{e: e, raw: raw, inRedis: true})
		} else if have {
			delete(s.items, k)
			s.seq++
		}
	}
	s.lastResync = s.c.now()
	return nil
}

// markDown marks the store down for err: Status says so, and the first
// time, one warning is logged and OnChange told.
func (s *Store) markDown(err error) {
	if s.closed.Load() {
		return
	}
	s.reportMu.Lock()
	defer s.reportMu.Unlock()
	if s.closed.Load() {
		return
	}
	s.mu.Lock()
	s.up.Store(false)
	s.detail = err.Error()
	s.mu.Unlock()
	s.reportLocked(false, err)
}

// reportLocked logs and reports a change of up; reportMu must be held.
func (s *Store) reportLocked(up bool, err error) {
	now := -1
	if up {
		now = 1
	}
	was := s.reported
	if was == now {
		return
	}
	s.reported = now
	switch {
	case !up:
		s.c.log.Warn(fmt.Sprintf("health store %s unreachable: %v; serving with local memory", s.c.display, err))
	case was == -1:
		s.c.log.Info(fmt.Sprintf("health store %s is back: local changes pushed, shared state in use", s.c.display))
	default:
		s.c.log.Info(fmt.Sprintf("health store %s connected", s.c.display))
	}
	if up {
		select {
		case s.upSignal <- struct{}{}:
		default:
		}
	}
	if s.c.onChange != nil {
		s.c.onChange(up)
	}
}
