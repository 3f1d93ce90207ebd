//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package ledger

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFile_WriteWaitsForTheLock holds the file's flock as another process
// would and checks that Write waits for it.
func TestFile_WriteWaitsForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	other, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() { done <- l.Write(Record{RequestID: "waited"}) }()
	select {
	case err := <-done:
		t.Fatalf("Write returned (%v) while another description held the lock", err)
	case <-time.After(50 * time.Millisecond):
		// Still waiting, as it should. (A slow machine can only make this
		// pass more easily, never fail.)
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Fatalf("line written while the lock was held elsewhere")
	}
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if recs, err := ReadFile(path); err != nil || len(recs) != 1 || recs[0].RequestID != "waited" {
		t.Fatalf("after unlock: %+v, %v", recs, err)
	}
}
