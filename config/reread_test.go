package config

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// blockingFile is a file whose Read waits until release is closed: a hung
// mount.
type blockingFile struct{ release chan struct{} }

func (b blockingFile) Read([]byte) (int, error) { <-b.release; return 0, io.EOF }
func (b blockingFile) Close() error             { return nil }

// A read that does not end within the timeout is given up with
// ErrReadTimeout; the next read, of a file that answers, works.
func TestReadWithin_GivesUpAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hung := blockingFile{release: make(chan struct{})}
		start := time.Now()
		_, err := readWithin("detour.yaml", 5*time.Second, func(string) (io.ReadCloser, error) { return hung, nil })
		if !errors.Is(err, ErrReadTimeout) || !strings.Contains(err.Error(), "detour.yaml: nothing read within 5s") {
			t.Fatalf("a hung read: %v, want ErrReadTimeout", err)
		}
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("gave up after %s, want 5s", waited)
		}
		close(hung.release)
		data, err := readWithin("detour.yaml", 5*time.Second, func(string) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader("routes: {}\n")), nil
		})
		if err != nil || string(data) != "routes: {}\n" {
			t.Fatalf("a file that answers: %q %v", data, err)
		}
	})
}
