//go:build unix

package cli

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// A FIFO at the config path is refused at once, not waited on: the SIGHUP
// after it, with a good file back in place, reloads.
func TestServe_SIGHUPAfterAFIFOReloads(t *testing.T) {
	s := serveReloadable(t, nil)
	path, good, base, stderr, proc := s.path, s.good, s.base, s.stderr, s.proc
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	hangUp(t, proc, stderr, "is a named pipe (FIFO), not a regular file")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(good), "  default:\n", "  renamed:\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	hangUp(t, proc, stderr, "SIGHUP: config reloaded")
	if code := chat(base); code != 404 {
		t.Fatalf("the route the reload renamed answered %d, want 404", code)
	}
}
