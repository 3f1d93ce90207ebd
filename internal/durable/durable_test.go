package durable

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestTryLock_SecondOpenIsRefusedUntilTheFirstCloses(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no flock here")
	}
	path := filepath.Join(t.TempDir(), "f")
	a, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := TryLock(a); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	b, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := TryLock(b); !errors.Is(err, ErrHeld) {
		t.Fatalf("second lock = %v, want ErrHeld", err)
	}
	a.Close()
	if err := TryLock(b); err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
}
