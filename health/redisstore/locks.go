package redisstore

import (
	"context"
	"sync"
)

// keyLocks are per-key locks that give up when a context ends. Writers of
// one key in this process take turns, so that only replicas contend in
// Redis, and a local change is never written over by a write in flight.
// The zero value is ready to use.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

// keyLock is one key's lock: a token in ch means held.
type keyLock struct {
	ch   chan struct{}
	refs int // holders and waiters; the lock is dropped at 0
}

// lock takes key's lock, or returns ctx's error when ctx ends first. The
// returned func releases it.
func (l *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[string]*keyLock)
	}
	kl := l.m[key]
	if kl == nil {
		kl = &keyLock{ch: make(chan struct{}, 1)}
		l.m[key] = kl
	}
	kl.refs++
	l.mu.Unlock()
	select {
	case kl.ch <- struct{}{}:
		return func() {
			<-kl.ch
			l.release(key, kl)
		}, nil
	case <-ctx.Done():
		l.release(key, kl)
		return nil, ctx.Err()
	}
}

// release drops one reference to kl.
func (l *keyLocks) release(key string, kl *keyLock) {
	l.mu.Lock()
	if kl.refs--; kl.refs == 0 {
		delete(l.m, key)
	}
	l.mu.Unlock()
}
