package durable

import (
	"errors"
	"io"
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

// WriteFile replaces the file whole, leaves it as it was when the write
// fails, and leaves no temporary file behind either way.
func TestWriteFile_WholeOrNothingAndNoLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "page.html")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFile(path, 0o644, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("a failed write = %v, want boom", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("after a failed write the file holds %q, want old", b)
	}
	if err := WriteFile(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(b) != "new" || (runtime.GOOS != "windows" && st.Mode().Perm() != 0o644) {
		t.Fatalf("file holds %q, mode %v; want new, 0644", b, st.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the directory holds %d entries, want the file alone: %v", len(ents), ents)
	}
}
