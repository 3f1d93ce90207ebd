package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOutput_CutsATornLastLine(t *testing.T) {
	ok := `{"id":"a","status":"ok","answer":"x","attempts":1,"cost_usd":0}` + "\n"
	path := writeFile(t, ok+`{"id":"b","status":"ok","ans`)
	o, err := OpenOutput(path, Native)
	if err != nil {
		t.Fatal(err)
	}
	if o.Torn != 1 || !o.Has(doneKey("a", 0)) || o.Has(doneKey("b", 0)) {
		t.Fatalf("torn %d, has a %v, has b %v; want the torn line cut and b to run again", o.Torn, o.Has(doneKey("a", 0)), o.Has(doneKey("b", 0)))
	}
	if err := o.Write([]byte(`{"id":"b","status":"ok","attempts":1,"cost_usd":0}` + "\n")); err != nil {
		t.Fatal(err)
	}
	o.Close()
	got, _ := os.ReadFile(path)
	if want := ok + `{"id":"b","status":"ok","attempts":1,"cost_usd":0}` + "\n"; string(got) != want {
		t.Fatalf("file =\n%s\nwant\n%s", got, want)
	}
}

func TestOutput_CutsZerosAfterALastGoodLine(t *testing.T) {
	ok := `{"id":"a","status":"error","error":{"kind":"wall","message":"m"},"attempts":1,"cost_usd":0}` + "\n"
	path := writeFile(t, ok+"\x00\x00\x00\x00\n\x00\x00")
	o, err := OpenOutput(path, Native)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	got, _ := os.ReadFile(path)
	if o.Torn != 1 || string(got) != ok {
		t.Fatalf("torn %d, file %q; want what a power loss left cut", o.Torn, got)
	}
}

func TestOutput_DropsPendingLinesSoTheyRunAgain(t *testing.T) {
	lines := []string{
		`{"id":"a","status":"ok","attempts":1,"cost_usd":0}`,
		`{"id":"b","status":"pending","retry_at":"2026-01-01T00:00:00Z","error":{"kind":"wall","message":"m"},"attempts":1,"cost_usd":0}`,
		`not a results line`,
		`{"id":"","status":"error","line":9,"error":{"kind":"invalid_input","message":"line 9: x"},"attempts":0,"cost_usd":0}`,
	}
	path := writeFile(t, strings.Join(lines, "\n")+"\n")
	o, err := OpenOutput(path, Native)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.Dropped != 1 || o.Unreadable != 1 || o.Torn != 0 {
		t.Fatalf("dropped %d, unreadable %d, torn %d; want 1, 1, 0", o.Dropped, o.Unreadable, o.Torn)
	}
	if !o.Has(doneKey("a", 0)) || o.Has(doneKey("b", 0)) || !o.Has(doneKey("", 9)) {
		t.Fatalf("done = %v", o.done)
	}
	got, _ := os.ReadFile(path)
	if want := lines[0] + "\n" + lines[2] + "\n" + lines[3] + "\n"; string(got) != want {
		t.Fatalf("file =\n%s\nwant the pending line gone, the rest kept:\n%s", got, want)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the rewrite left %s.tmp behind", path)
	}
}

func TestOutput_ReadsOpenAILines(t *testing.T) {
	lines := []string{
		`{"id":"batch_req_1","custom_id":"a","response":{"status_code":200,"request_id":"r","body":{}},"error":null,"detour":{"status":"ok","attempts":1,"cost_usd":0}}`,
		`{"id":"batch_req_2","custom_id":"b","response":null,"error":{"code":"pending","message":"m"},"detour":{"status":"pending","attempts":1,"cost_usd":0}}`,
		`{"id":"batch_req_3","custom_id":null,"response":null,"error":{"code":"invalid_input","message":"m","line":4},"detour":{"status":"error","attempts":0,"cost_usd":0}}`,
		`{"id":"batch_req_4","custom_id":"d","response":{"status_code":503,"request_id":"r","body":{}},"error":null}`,
	}
	path := writeFile(t, strings.Join(lines, "\n")+"\n")
	if _, err := OpenOutput(path, Native); err == nil || !strings.Contains(err.Error(), "holds openai results lines") {
		t.Fatalf("a native run over OpenAI results: err = %v, want a refusal", err)
	}
	o, err := OpenOutput(path, OpenAI)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if !o.Has(doneKey("a", 0)) || o.Has(doneKey("b", 0)) || !o.Has(doneKey("", 4)) || !o.Has(doneKey("d", 0)) || o.Dropped != 1 {
		t.Fatalf("done = %v, dropped %d", o.done, o.Dropped)
	}
}

func TestOutput_OneRunAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	o, err := OpenOutput(path, Native)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenOutput(path, Native); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: err = %v, want ErrLocked", err)
	}
	o.Close()
	o2, err := OpenOutput(path, Native)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	o2.Close()
}

func TestOutput_ConcurrentWritesStayWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	o, err := OpenOutput(path, Native)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%d-%d", w, i), "status": "ok", "answer": strings.Repeat("x", 5000)})
				if err := o.Write(append(line, '\n')); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	o.Close()
	got, _ := os.ReadFile(path)
	lines := bytes.Split(bytes.TrimSuffix(got, []byte("\n")), []byte("\n"))
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, l := range lines {
		if !json.Valid(l) {
			t.Fatalf("a torn line: %.80s", l)
		}
	}
}

// BenchmarkOutput_Write measures a results line written and synced to
// disk: alone (each line its own fsync) and from 8 writers at once (the
// writers share fsyncs).
func BenchmarkOutput_Write(b *testing.B) {
	line := append(bytes.Repeat([]byte("x"), 400), '\n')
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			o, err := OpenOutput(filepath.Join(b.TempDir(), "out.jsonl"), Native)
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			b.SetParallelism(max(1, writers/runtime.GOMAXPROCS(0))) // goroutines: this times GOMAXPROCS
			b.ResetTimer()
			if writers == 1 {
				for range b.N {
					if err := o.Write(line); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := o.Write(line); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
