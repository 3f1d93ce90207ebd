//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package ledger

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// started is the record of request id's attempt n on its first target, as
// the router hands it to Begin.
func started(id string, n int) Record {
	return Record{Time: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC), RequestID: id, Route: "default",
		Provider: "p1", Model: "m", Attempt: n}
}

// die drops l as a killed process does: its journal's lock goes with its
// descriptor, nothing is written or removed.
func die(t *testing.T, l *File) {
	t.Helper()
	if l.j != nil {
		l.j.f.Close()
		l.j = nil
	}
	l.f.Close()
	l.closed = true
}

func TestJournal_AttemptsInFlightAtDeathAreWrittenAsInterrupted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := l.Begin(started(id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	done := started("b", 1)
	done.Status, done.Action = StatusOK, "return"
	if err := l.Write(done); err != nil {
		t.Fatal(err)
	}
	die(t, l)

	next, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if n := next.Recovered(); n != 2 {
		t.Errorf("recovered %d attempts, want 2 (a and c)", n)
	}
	recs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.RequestID+":"+r.Status)
		if r.Status == StatusInterrupted && (r.Phase != "unknown" || r.Provider != "p1" || r.Route != "default" || r.Reason == "") {
			t.Errorf("interrupted line %+v lacks its target, route, phase or reason", r)
		}
	}
	if want := "b:ok a:interrupted c:interrupted"; join(got) != want {
		t.Errorf("ledger %q, want %q", join(got), want)
	}
	// Recovered once: a third open finds nothing more.
	again, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if n := again.Recovered(); n != 0 {
		t.Errorf("a second recovery wrote %d more", n)
	}
	if left, _ := filepath.Glob(journalGlob(path)); len(left) != 0 {
		t.Errorf("journals left after recovery: %v", left)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

func TestJournal_ALiveProcessIsLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	live, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Begin(started("a", 1)); err != nil {
		t.Fatal(err)
	}
	other, err := OpenFile(path) // another process opening the ledger now
	if err != nil {
		t.Fatal(err)
	}
	if n := other.Recovered(); n != 0 {
		t.Fatalf("recovered %d attempts of a live process", n)
	}
	other.Close()
	end := started("a", 1)
	end.Status = StatusOK
	if err := live.Write(end); err != nil {
		t.Fatal(err)
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(journalGlob(path)); len(left) != 0 {
		t.Errorf("a clean close left its journal: %v", left)
	}
}

// A process killed after an attempt's line reached the ledger but before
// its journal heard of it: the line is not written twice.
func TestJournal_ALineWrittenJustBeforeDeathIsNotDoubled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Begin(started("a", 2)); err != nil {
		t.Fatal(err)
	}
	j := l.j
	l.j = nil // the line goes out, the end does not
	done := started("a", 2)
	done.Status = "http_500"
	if err := l.Write(done); err != nil {
		t.Fatal(err)
	}
	l.j = j
	die(t, l)
	next, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if n := next.Recovered(); n != 0 {
		t.Errorf("recovered %d: the attempt's line was already in the ledger", n)
	}
}

// A journal stays small however long its process runs.
func TestJournal_StaysSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Begin(started("long", 1)); err != nil { // in flight all along
		t.Fatal(err)
	}
	for i := range 20000 {
		r := started("r"+time.Duration(i).String(), 1)
		if err := l.Begin(r); err != nil {
			t.Fatal(err)
		}
		r.Status = StatusOK
		if err := l.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if l.j.size > journalMax+4<<10 {
		t.Errorf("journal is %d bytes after 20,000 attempts, want at most about %d", l.j.size, journalMax)
	}
	recs, err := openAttempts(mustOpen(t, l.j.path))
	if err != nil || len(recs) != 1 || recs[0].RequestID != "long" {
		t.Errorf("after compaction the journal holds %+v (%v), want only the attempt in flight", recs, err)
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func FuzzJournalEnd(f *testing.F) {
	f.Add(`"abc" 0 1`)
	f.Add(`"a\"b" 3 12`)
	f.Add(`"x`)
	f.Fuzz(func(t *testing.T, s string) {
		k, ok := parseEnd(s)
		if !ok {
			return
		}
		// What parses is an id a journal could have written.
		line := appendEnd(nil, k)
		if back, ok := parseEnd(string(line[1 : len(line)-1])); !ok || back != k {
			t.Errorf("%q parsed to %+v, whose own line does not parse", s, k)
		}
	})
}
