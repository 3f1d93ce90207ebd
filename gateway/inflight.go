package gateway

import "sync"

// inFlight counts the chat handlers in flight and says when none is left.
// Not a sync.WaitGroup: its Add from zero must happen before a Wait, which
// a request arriving while a drain waits cannot promise (the race detector
// caught one such request during a real SIGTERM's drain_delay). The zero
// value is ready; safe for concurrent use.
type inFlight struct {
	mu   sync.Mutex // guards n and idle
	n    int64
	idle chan struct{} // closed when n falls to 0; nil while nobody waits
}

// add counts one more handler.
func (f *inFlight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

// done counts one handler less, and wakes those waiting when it was the
// last.
func (f *inFlight) done() {
	f.mu.Lock()
	f.n--
	if f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
}

// count is how many handlers are in flight.
func (f *inFlight) count() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// none returns a channel closed once no handler is in flight: at once when
// none is now.
func (f *inFlight) none() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	return f.idle
}
