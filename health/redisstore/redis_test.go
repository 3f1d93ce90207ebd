package redisstore

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/detourhq/detour/internal/redistest"
)

// startRedis starts redis-server on a free loopback port (see
// internal/redistest): stop kills it now (an outage); restart starts it
// again on the same port and waits for PING.
func startRedis(t testing.TB) (addr string, stop, restart func()) {
	t.Helper()
	srv := redistest.Start(t)
	return srv.Addr, srv.Stop, func() { srv.Restart(t) }
}

// open opens a Store on addr with fast background timing, closed when t
// ends, and waits until it is up (when wantUp).
func open(t testing.TB, addr string, o Options, wantUp bool) *Store {
	t.Helper()
	if o.URL == "" {
		o.URL = "redis://" + addr + "/0"
	}
	if o.Namespace == "" {
		o.Namespace = strings.NewReplacer("/", "-", "#", "-").Replace(t.Name())
	}
	if o.PingEvery == 0 {
		o.PingEvery = 50 * time.Millisecond
	}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if wantUp {
		eventually(t, "the store to be up", func() bool { return s.Status().Up })
	}
	return s
}

// eventually polls cond for up to 5 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logBuffer is a slog destination tests can read while the store writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }
