package report

import (
	"bytes"
	"math"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzRead_FoldingKeepsEveryNumber holds Read with a small Top to Read
// with none, on any input: the same lines read, the same totals, every row
// kept the same as without a limit, the "other" row counting exactly the
// targets folded, and the same series totals.
func FuzzRead_FoldingKeepsEveryNumber(f *testing.F) {
	data, err := os.ReadFile("testdata/ledger.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, uint8(1))
	f.Add(data, uint8(2))
	f.Add(ledgerBytes(f, 300, 40), uint8(3))
	f.Add(ledgerBytes(f, 100, 100), uint8(0))
	f.Add([]byte(`{"provider":"a","status":"ok"}`+"\n"+`{"provider":"b","status":"ok","route":"x"}`+"\n"), uint8(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in []byte, top uint8) {
		n := int(top%4) + 1
		all, err := Read([]Source{{Name: "in", R: bytes.NewReader(in)}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// A sketch of 8 keys: the first pass lets keys go past 8.
		folded, err := Read([]Source{{Name: "in", R: bytes.NewReader(in)}}, Options{Top: n, TempDir: dir, sketchKeys: 8})
		if err != nil {
			t.Fatal(err)
		}
		ra, rf := all.ReportBy(0), folded.ReportBy(0)
		if ra.Lines != rf.Lines || ra.Matched != rf.Matched || ra.UnreadableLines != rf.UnreadableLines {
			t.Fatalf("lines %d/%d/%d, want %d/%d/%d", rf.Lines, rf.Matched, rf.UnreadableLines, ra.Lines, ra.Matched, ra.UnreadableLines)
		}
		if d := cmp.Diff(totals(ra.Targets), totals(rf.Targets)); d != "" {
			t.Fatalf("totals (-unlimited +top %d):\n%s", n, d)
		}
		byName := map[string]Target{}
		for _, x := range ra.Targets {
			byName[x.Target] = x
		}
		for _, x := range rf.Targets {
			if x.Other {
				continue
			}
			if d := cmp.Diff(byName[x.Target], x); d != "" {
				t.Fatalf("row %s (-unlimited +top %d):\n%s", x.Target, n, d)
			}
		}
		if folds := len(ra.Targets) - n; folds > 0 {
			ft := rf.Folded
			if ft == nil || ft.Targets == nil || len(rf.Targets) != n+1 {
				t.Fatalf("%d targets, top %d: folded %+v, %d rows", len(ra.Targets), n, rf.Folded, len(rf.Targets))
			}
			if f := ft.Targets; !f.Approx && f.N != folds || math.Abs(float64(f.N-folds)) > max(1, float64(folds)*DistinctErrorPct/100) {
				t.Fatalf("%d targets, top %d: folded %+v", len(ra.Targets), n, *f)
			}
		} else if d := cmp.Diff(ra.Targets, rf.Targets); d != "" {
			t.Fatalf("no more targets than the top: the rows differ (-unlimited +top %d):\n%s", n, d)
		}
		if rf.Top = 0; rf.Folded == nil {
			if d := cmp.Diff(ra, rf); d != "" {
				t.Fatalf("nothing folded: the reports differ (-unlimited +top %d):\n%s", n, d)
			}
		}
		for i := range ra.Series {
			if d := cmp.Diff(ra.Series[i].Tally, rf.Series[i].Tally); d != "" {
				t.Fatalf("bucket %d totals (-unlimited +top):\n%s", i, d)
			}
		}
	})
}

// totals sums what every row counts.
func totals(ts []Target) Target {
	var s Target
	for _, x := range ts {
		s.Calls += x.Calls
		s.Answers += x.Answers
		s.Failures += x.Failures
		s.Skips += x.Skips
		s.LastResort += x.LastResort
		s.Probes += x.Probes
		s.ProbesFailed += x.ProbesFailed
		s.TokensIn += x.TokensIn
		s.TokensOut += x.TokensOut
		s.FailoversIn += x.FailoversIn
		s.FailoversOut += x.FailoversOut
		s.Degraded += x.Degraded
	}
	return s
}
