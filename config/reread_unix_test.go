//go:build unix

package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Reopen reads a regular file, through a link too, and refuses a FIFO, a
// link to one and a directory at once, unread: none of them can hold a
// reload (and every reload after it) for good.
func TestReopen_RefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("routes:\n  r: {chain: [groq/m]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(string) string { return "" }
	if c, err := Reopen(link("good-link.yaml", good), env, 0); err != nil || c.Routes["r"].Name != "r" {
		t.Fatalf("a link to a regular file: %v", err)
	}
	for _, tt := range []struct{ name, path, want string }{
		{"a FIFO", fifo, "is a named pipe (FIFO), not a regular file"},
		{"a link to a FIFO", link("fifo-link.yaml", fifo), "is a named pipe (FIFO), not a regular file"},
		{"a directory", dir, "is a directory, not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := Reopen(tt.path, env, time.Minute); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tt.want) ||
					!strings.Contains(err.Error(), "rename it over") {
					t.Fatalf("Reopen: %v, want ErrNotRegular saying %q and what to do", err, tt.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Reopen blocked on it")
			}
		})
	}
}
