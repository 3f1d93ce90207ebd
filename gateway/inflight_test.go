package gateway

import (
	"sync"
	"testing"
)

// A handler that enters while a drain waits is waited for too, and the
// race detector sees every enter ordered before the drain's wait (a
// sync.WaitGroup's Add from zero racing its Wait failed a real SIGTERM's
// drain under -race).
func TestInFlight_WaitsForLateComers(t *testing.T) {
	var f inFlight
	select {
	case <-f.none():
	default:
		t.Fatal("none is not closed with nothing in flight")
	}
	f.add()
	idle := f.none()
	var wg sync.WaitGroup
	for range 8 { // late comers, while the drain waits
		f.add()
		wg.Add(1)
		go func() { defer wg.Done(); defer f.done() }()
	}
	wg.Wait()
	select {
	case <-idle:
		t.Fatal("none closed while one handler is still in flight")
	default:
	}
	if n := f.count(); n != 1 {
		t.Fatalf("count %d, want 1", n)
	}
	f.done()
	<-idle
	if n := f.count(); n != 0 {
		t.Fatalf("count %d after the last, want 0", n)
	}
}
