// Package clock is the injected source of time: Now and a Sleep that wakes on
// cancel. Real is the default; Fake advances only when told (or when something
// sleeps on it), so waits of minutes cost tests nothing.
//
//	c := clock.NewFake(time.Unix(0, 0))
//	c.Sleep(ctx, 30*time.Second) // returns at once; c.Now() moved 30 s
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock tells the time and sleeps. Implementations are safe for concurrent use.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx is done. It reports whether the full wait
	// elapsed (false when ctx ended it).
	Sleep(ctx context.Context, d time.Duration) bool
}

// Or returns c, or Real when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Sleep waits d on a timer, or until ctx is done.
func (Real) Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Fake is a clock that moves only when advanced. Sleep advances it by the
// requested duration at once and records the wait, so tests can assert which
// waits happened. Safe for concurrent use.
type Fake struct {
	mu     sync.Mutex // guards now and sleeps
	now    time.Time
	sleeps []time.Duration
}

// NewFake returns a Fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the fake time forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// Sleep records d and advances the clock by it, unless ctx is already done.
func (f *Fake) Sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	f.mu.Lock()
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	f.mu.Unlock()
	return true
}

// Sleeps returns every wait asked of the clock so far, in order.
func (f *Fake) Sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}
