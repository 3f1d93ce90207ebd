// Package redistest starts a real redis-server on a free loopback port for
// tests, and stops it by its PID.
//
//	srv := redistest.Start(t) // skips when redis-server cannot be had
//	url := srv.URL()          // redis://127.0.0.1:PORT/0
//	srv.Stop()                // an outage; srv.Restart(t) ends it
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireEnv, set to 1 (make test sets it), turns a missing redis-server
// into a test failure instead of a skip, so CI never passes without it.
const RequireEnv = "DETOUR_REQUIRE_REDIS"

// Server is one redis-server process.
type Server struct {
	// Addr is its host:port on loopback.
	Addr string
	bin  string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

// Start starts redis-server on a free loopback port, with no persistence,
// and stops it when t ends. It skips t when redis-server is not on PATH
// (fails it when RequireEnv is 1).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server not found on PATH: install it (apt-get install redis-server), or run make test, which does"
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), bin: bin}
	ln.Close()
	s.Restart(t)
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Restart starts the server again on its port (after Stop), and waits
// until it answers PING.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	_, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(s.bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(s.Addr); err == nil {
			return
		} else if time.Now().After(deadline) {
			s.Stop()
			t.Fatalf("redis-server on %s did not answer PING within 10s: %v", s.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server by its PID and waits for it to exit. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill() //nolint:errcheck // it may have exited
	cmd.Wait()         //nolint:errcheck // killed
}

// ping sends PING to addr in Redis's protocol and reads PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second)) //nolint:errcheck // bounded below
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}
