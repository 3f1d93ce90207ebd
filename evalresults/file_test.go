package evalresults

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func rec(target, task string, rep int, o Outcome) Record {
	return Record{Suite: "s", Digest: "d", Target: target, Task: task, Rep: rep, Outcome: o, Time: time.Unix(1, 0).UTC()}
}

// A results file keeps what was appended across opens; a torn last line
// (a crash mid-write) is cut on opening and its call counts as missing;
// a line that is no record is kept and counted, never dropped.
func TestFile_ResumesCutsTornTailKeepsStrangers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "eval.jsonl")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range []Outcome{Correct, Wrong, Error} {
		if err := f.Append(rec("p/m", "t", i+1, o)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	torn, _ := json.Marshal(rec("p/m", "t", 4, Correct))
	appendRaw(t, path, "not a record\n"+string(torn[:len(torn)/2]))

	f, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Torn != 1 || f.Unreadable != 1 || len(f.Records) != 3 {
		t.Fatalf("torn %d, unreadable %d, %d records; want 1, 1, 3", f.Torn, f.Unreadable, len(f.Records))
	}
	if !f.Has("d", "p/m", "t", 3) || f.Has("d", "p/m", "t", 4) || f.Has("other", "p/m", "t", 1) {
		t.Fatal("Has: want reps 1-3 of digest d held, rep 4 and other digests not")
	}
	if err := f.Append(rec("p/m", "t", 4, Truncated)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(b), "\n") || strings.Count(string(b), "\n") != 5 || !strings.Contains(string(b), "not a record\n") {
		t.Fatalf("file after the rerun:\n%s", b)
	}
	recs, err := Read(path)
	if err != nil || len(recs) != 4 || recs[3].Outcome != Truncated {
		t.Fatalf("Read: %v, %+v", err, recs)
	}
}

// Two runs cannot write one results file at once.
func TestFile_SecondOpenIsLockedOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "eval.jsonl")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Open(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
}

// The gate counts only the latest version of the suite, answered calls
// only, and needs MinAnswers of them.
func TestGate(t *testing.T) {
	var recs []Record
	add := func(target, digest string, at int64, outs ...Outcome) {
		for i, o := range outs {
			r := rec(target, "t", i+1, o)
			r.Digest, r.Time = digest, time.Unix(at, 0)
			recs = append(recs, r)
		}
	}
	add("a/m", "v1", 1, Correct, Correct, Correct, Correct, Correct)
	add("a/m", "v2", 2, Wrong, Wrong, Correct, Correct, Correct)
	add("b/m", "v2", 2, Correct, Correct, Correct, Correct, Correct, Error, Error)
	add("c/m", "v2", 2, Correct, Correct, Error, Error, Error)
	g := Gate(recs, GateSettings{Suite: "s", MinAccuracy: 0.8}, "eval.jsonl")
	for id, want := range map[string]string{"a/m": "accuracy 60% (3/5)", "b/m": "", "c/m": "only 2 answered", "d/m": "no eval result"} {
		ok, why := g(id)
		if ok != (want == "") || !strings.Contains(why, want) {
			t.Errorf("%s: %v %q, want %q", id, ok, why, want)
		}
	}
	if ok, why := Gate(recs, GateSettings{Suite: "other", MinAccuracy: 0.1}, "e")("b/m"); ok || !strings.Contains(why, "suite other") {
		t.Errorf("another suite's gate approved b/m: %q", why)
	}
}

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// Whatever a results file holds, Read returns without panic, only whole
// records, and Open then cuts no whole line.
func FuzzRead(f *testing.F) {
	good, _ := json.Marshal(rec("p/m", "t", 1, Correct))
	f.Add(string(good) + "\n")
	f.Add(string(good) + "\n" + string(good[:10]))
	f.Add("{}\n\n{\"target\":\"x\"}\n")
	f.Add("\x00\x00\x00")
	f.Fuzz(func(t *testing.T, content string) {
		path := filepath.Join(t.TempDir(), "r.jsonl")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		recs, err := Read(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Target == "" || r.Task == "" || r.Outcome == "" {
				t.Fatalf("a record without its identity: %+v", r)
			}
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := os.Stat(path)
		whole := strings.LastIndexByte(content, '\n') + 1
		if st.Size() != int64(whole) {
			t.Fatalf("size %d after open, want %d (only the torn tail cut)", st.Size(), whole)
		}
	})
}
