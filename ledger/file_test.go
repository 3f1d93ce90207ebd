package ledger

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment of TestHelperProcess, set by TestFile_ProcessesNeverTearLines.
const (
	helperEnv      = "DETOUR_LEDGER_HELPER" // "1" in a helper process
	helperPathEnv  = "DETOUR_LEDGER_PATH"
	helperNameEnv  = "DETOUR_LEDGER_WRITER"
	helperCountEnv = "DETOUR_LEDGER_COUNT"
)

// reasonFor is a long reason (about 3 KiB, above PIPE_BUF) that tells from
// its content which writer and which record it belongs to, so a spliced line
// cannot pass.
func reasonFor(writer string, seq int) string {
	tag := fmt.Sprintf("%s#%d;", writer, seq)
	return strings.Repeat(tag, 3072/len(tag)+1)
}

func recordFor(writer string, seq int) Record {
	return Record{
		Time: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), RequestID: writer, Route: "default",
		Provider: "groq", Model: "llama-3.3-70b-versatile", Attempt: seq, Status: "http_429",
		Kind: "transient", Action: "retry", Reason: reasonFor(writer, seq),
	}
}

// appendRecords writes records 1..n for writer to l.
func appendRecords(l *File, writer string, n int) error {
	for seq := 1; seq <= n; seq++ {
		if err := l.Write(recordFor(writer, seq)); err != nil {
			return fmt.Errorf("%s record %d: %w", writer, seq, err)
		}
	}
	return nil
}

// TestHelperProcess is not a test: it is the child process of
// TestFile_ProcessesNeverTearLines, appending records to a shared file.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for TestFile_ProcessesNeverTearLines")
	}
	n, err := strconv.Atoi(os.Getenv(helperCountEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	l, err := OpenFile(os.Getenv(helperPathEnv))
	if err == nil {
		err = errors.Join(appendRecords(l, os.Getenv(helperNameEnv), n), l.Close())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func TestFile_ProcessesNeverTearLines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	const (
		children     = 3
		perChild     = 2000
		perGoroutine = 1000
	)
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	want := map[string]int{} // records per writer

	var cmds []*exec.Cmd
	for i := range children {
		name := fmt.Sprintf("child-%d", i)
		want[name] = perChild
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), helperEnv+"=1", helperPathEnv+"="+path,
			helperNameEnv+"="+name, helperCountEnv+"="+strconv.Itoa(perChild))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() && stderr.Len() > 0 {
				t.Logf("%s stderr: %s", name, stderr.String())
			}
		})
		cmds = append(cmds, cmd)
	}

	// In this process: two goroutines share one File, a third has its own
	// (a separate open file description, so flock excludes it too).
	shared, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	own, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for name, l := range map[string]*File{"shared-0": shared, "shared-1": shared, "own": own} {
		want[name] = perGoroutine
		wg.Go(func() {
			if err := appendRecords(l, name, perGoroutine); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, l := range []*File{shared, own} {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child-%d: %v", i, err)
		}
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatal("file does not end with a newline")
	}
	got := map[string]int{}
	err = Scan(strings.NewReader(string(data)), func(r Record) error {
		w := r.RequestID
		if _, ok := want[w]; !ok {
			return fmt.Errorf("record from unknown writer %q", w)
		}
		got[w]++
		// Each writer writes in order, and each Write returns only once its
		// line is in the file: a writer's records appear in order.
		if r.Attempt != got[w] {
			return fmt.Errorf("%s: record %d where %d was due", w, r.Attempt, got[w])
		}
		if r.Reason != reasonFor(w, r.Attempt) {
			return fmt.Errorf("%s record %d: reason spliced", w, r.Attempt)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("%s: %d records, want %d", w, got[w], n)
		}
	}
	if lines := strings.Count(string(data), "\n"); lines != children*perChild+3*perGoroutine {
		t.Errorf("%d lines, want %d", lines, children*perChild+3*perGoroutine)
	}
}

func TestOpenFile_CreatesPrivateFileAndAppends(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.jsonl")
	for i := range 2 { // the second open appends to the first's lines
		l, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if l.Path() != path {
			t.Errorf("Path() = %q", l.Path())
		}
		if err := l.Write(Record{RequestID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		// Write returns once the line is in the file.
		recs, err := ReadFile(path)
		if err != nil || len(recs) != i+1 || recs[i].RequestID != fmt.Sprint(i) {
			t.Fatalf("after write %d: %+v, %v", i, recs, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("mode %v, want no access for group and others", perm)
	}

	if _, err := OpenFile(filepath.Join(dir, "missing", "ledger.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenFile in a missing directory: %v", err)
	}
}

func TestFile_WriteAfterClose(t *testing.T) {
	l, err := OpenFile(filepath.Join(t.TempDir(), "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := l.Write(Record{}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close = %v, want os.ErrClosed", err)
	}
}

// benchRecord is a typical failed attempt's line.
func benchRecord() Record {
	return Record{
		Time: time.Now(), RequestID: "01JXAMPLE0000000000000000", Route: "default",
		Provider: "openrouter", Model: "meta-llama/llama-3.3-70b-instruct", Hop: 1, Attempt: 1,
		Failover: true, Status: "http_429", Kind: "transient", Action: "retry",
		TokensIn: 1200, Seconds: 0.131, WaitSeconds: 2, RetryAfterS: 2,
		Reason: "HTTP 429 rate_limit_exceeded: Rate limit reached for model in organization on tokens per minute",
	}
}

func BenchmarkFileWrite(b *testing.B) {
	l, err := OpenFile(filepath.Join(b.TempDir(), "ledger.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Write(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileBeginWrite is one journaled attempt: Begin before the
// send, Write at its end.
func BenchmarkFileBeginWrite(b *testing.B) {
	l, err := OpenFile(filepath.Join(b.TempDir(), "ledger.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Begin(r); err != nil {
			b.Fatal(err)
		}
		if err := l.Write(r); err != nil {
			b.Fatal(err)
		}
	}
}
