package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/bench/ledgergen"
	"github.com/detourhq/detour/ledger"
)

// writeLedger writes a ledgergen ledger of lines lines, oneOff of them
// naming a target of their own, to a file in t's temporary directory.
func writeLedger(t testing.TB, lines, oneOff int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledgergen.Write(f, ledgergen.Options{Lines: lines, OneOff: oneOff, Seed: uint64(oneOff)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// peakLiveHeap runs f and returns the most heap found live by a garbage
// collection meanwhile, with collections made frequent (GOGC 10) so that
// the peak is seen.
func peakLiveHeap(t testing.TB, f func()) uint64 {
	t.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	f()
	runtime.GC()
	close(stop)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

// The issue: a report's memory grew with the ledger's distinct targets
// (1.2 GB for 200,000). Read's peak heap must stay the same from 10,000
// targets to 100,000 (2,000 to 20,000 under the race detector): it holds
// the top targets, the sketch of the first pass (at most sketchKeys keys of
// each kind) and fixed buffers, never every target.
func TestRead_MemoryDoesNotGrowWithTargets(t *testing.T) {
	few, many := 10_000, 100_000
	if raceDetector {
		few, many = 2_000, 20_000
	}
	peak := func(targets int) uint64 {
		path := writeLedger(t, targets+5_000, targets)
		var r Report
		p := peakLiveHeap(t, func() {
			s, err := Read([]Source{{Name: path, Path: path}}, Options{Top: DefaultTop})
			if err != nil {
				t.Fatal(err)
			}
			r = s.ReportBy(0)
		})
		if len(r.Targets) != DefaultTop+1 || !r.Targets[DefaultTop].Other {
			t.Fatalf("%d targets: %d rows, want %d and the other row", targets, len(r.Targets), DefaultTop+1)
		}
		return p
	}
	small, large := peak(few), peak(many)
	t.Logf("peak live heap: %.1f MB at %d targets, %.1f MB at %d", float64(small)/1e6, few, float64(large)/1e6, many)
	// The sketch may grow to its 16,384 keys; nothing else grows.
	if large > small*3/2+2<<20 {
		t.Errorf("peak live heap grew from %d to %d bytes with 10 times the targets", small, large)
	}
}

// ledgerBytes returns a ledgergen ledger of lines lines, oneOff of them
// naming a target of their own.
func ledgerBytes(t testing.TB, lines, oneOff int) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := ledgergen.Write(&b, ledgergen.Options{Lines: lines, OneOff: oneOff, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readBoth reads path with no limit and with top, and returns both
// Summaries.
func readBoth(t *testing.T, path string, top int) (all, folded *Summary) {
	t.Helper()
	var err error
	if all, err = Read([]Source{{Name: path, Path: path}}, Options{}); err != nil {
		t.Fatal(err)
	}
	if folded, err = Read([]Source{{Name: path, Path: path}}, Options{Top: top}); err != nil {
		t.Fatal(err)
	}
	return all, folded
}

// The rows kept are the targets with the most lines, each exactly as
// without a limit; the "other" row is exactly the sum of the rest, its
// latency quantiles those of their merged histograms; the totals, the
// series, the routes, the walls and the flags say the same as without a
// limit.
func TestRead_OtherRowIsExactlyTheRest(t *testing.T) {
	const top = 2 // openrouter, with walls, is folded, and three providers
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	if err := os.WriteFile(path, ledgerBytes(t, 4000, 700), 0o644); err != nil {
		t.Fatal(err)
	}
	all, folded := readBoth(t, path, top)
	ra, rf := all.ReportBy(time.Hour), folded.ReportBy(time.Hour)
	if len(rf.Targets) != top+1 {
		t.Fatalf("%d rows, want %d and the other row", len(rf.Targets), top)
	}

	// The kept: the top by lines, each row as without a limit.
	lines := map[string]int{}
	for _, x := range ra.Targets {
		lines[x.Target] = x.Calls + x.Skips + x.LastResort + x.Probes
	}
	kept := map[string]bool{}
	least := math.MaxInt
	for _, x := range rf.Targets[:top] {
		kept[x.Target] = true
		least = min(least, lines[x.Target])
		if d := cmp.Diff(target(t, ra, x.Target), x); d != "" {
			t.Errorf("%s differs from the unlimited report (-want +got):\n%s", x.Target, d)
		}
	}
	var rest []Target
	var lat Histogram
	failures := map[string]int{}
	cost := 0.0
	for id, acc := range all.accs {
		k := all.targets.keys[id]
		if kept[k.name()] {
			continue
		}
		if lines[k.name()] > least {
			t.Errorf("%s has %d lines, more than a kept row's %d", k.name(), lines[k.name()], least)
		}
		x := target(t, ra, k.name())
		rest = append(rest, x)
		cost += x.CostUSD
		for _, c := range x.FailuresByStatus {
			failures[c.Status] += c.N
		}
		for i, c := range acc.latency.counts {
			lat.counts[i] += c
		}
		if acc.latency.n > 0 && (lat.n == 0 || acc.latency.min < lat.min) {
			lat.min = acc.latency.min
		}
		lat.max = max(lat.max, acc.latency.max)
		lat.n += acc.latency.n
	}
	folds := len(rest)
	o := rf.Targets[top]
	if d := cmp.Diff(totals(rest), totals([]Target{o})); d != "" {
		t.Errorf("the other row is not the sum of the %d folded (-want +got):\n%s", folds, d)
	}
	// Each row's cost is rounded to the micro-dollar.
	if math.Abs(o.CostUSD-cost) > 1e-6*float64(folds) {
		t.Errorf("the other row's cost %v, want %v", o.CostUSD, cost)
	}
	gotFailures := map[string]int{}
	for _, c := range o.FailuresByStatus {
		gotFailures[c.Status] = c.N
	}
	if d := cmp.Diff(failures, gotFailures); d != "" {
		t.Errorf("the other row's failures by status (-want +got):\n%s", d)
	}
	for q, got := range map[float64]*float64{0.5: o.P50Seconds, 0.95: o.P95Seconds} {
		v, _ := lat.Quantile(q)
		if got == nil || *got != math.Round(v*1000)/1000 {
			t.Errorf("the other row's p%v = %v, want %v", q*100, got, v)
		}
	}
	if f := rf.Folded; f == nil || f.Targets == nil || f.Targets.N != folds || f.Targets.Approx || !f.Targets.TopExact ||
		o.Target != f.Targets.Label("target") || !o.Other {
		t.Errorf("folded %+v, other row %q, want %d targets folded, counted exactly", rf.Folded, o.Target, folds)
	}

	if ra.Lines != rf.Lines || ra.Matched != rf.Matched || ra.UnreadableLines != rf.UnreadableLines {
		t.Errorf("lines %d/%d/%d, want %d/%d/%d", rf.Lines, rf.Matched, rf.UnreadableLines, ra.Lines, ra.Matched, ra.UnreadableLines)
	}
	var keptWalls []Wall
	for _, w := range ra.Walls {
		if kept[w.Target] {
			keptWalls = append(keptWalls, w)
		}
	}
	if d := cmp.Diff(keptWalls, rf.Walls); d != "" || len(keptWalls) == 0 || len(keptWalls) == len(ra.Walls) {
		t.Errorf("walls: want those of the kept targets, %d of %d (-want +got):\n%s", len(keptWalls), len(ra.Walls), d)
	}
	if d := cmp.Diff(ra.Flags, rf.Flags); d != "" {
		t.Errorf("flags (-want +got):\n%s", d)
	}
	checkSeriesFolded(t, ra, rf)
	checkRoutesFolded(t, ra, rf, kept)
}

// checkSeriesFolded: each bucket's totals as without a limit; its rows of
// the providers and targets kept too, and its other rows the sums of the
// rest.
func checkSeriesFolded(t *testing.T, ra, rf Report) {
	t.Helper()
	if len(ra.Series) != len(rf.Series) {
		t.Fatalf("%d buckets, want %d", len(rf.Series), len(ra.Series))
	}
	for i, b := range rf.Series {
		a := ra.Series[i]
		if d := cmp.Diff(a.Tally, b.Tally); d != "" {
			t.Errorf("bucket %v totals (-want +got):\n%s", a.Start, d)
		}
		checkRowsFolded(t, fmt.Sprint(a.Start, " providers"), a.Providers, b.Providers)
		checkRowsFolded(t, fmt.Sprint(a.Start, " targets"), a.Targets, b.Targets)
	}
}

// checkRowsFolded: the rows of got that are not "other" as in all, and
// got's other row the sum of the rest of all.
func checkRowsFolded(t *testing.T, what string, all, got []SeriesRow) {
	t.Helper()
	kept := map[string]bool{}
	var gotKept []SeriesRow
	var other cellSum
	for _, r := range got {
		if r.Other {
			other.add(r.Tally)
		} else {
			kept[r.Name] = true
			gotKept = append(gotKept, r)
		}
	}
	var want []SeriesRow
	var rest cellSum
	for _, r := range all {
		if kept[r.Name] {
			want = append(want, r)
		} else {
			rest.add(r.Tally)
		}
	}
	if d := cmp.Diff(want, gotKept); d != "" {
		t.Errorf("bucket %s kept (-want +got):\n%s", what, d)
	}
	if rest != other {
		t.Errorf("bucket %s other row %+v, want %+v", what, other, rest)
	}
}

// cellSum is what a test sums of Tallies.
type cellSum struct{ calls, answers, failures, skips, probes int }

func (c *cellSum) add(t Tally) {
	c.calls += t.Calls
	c.answers += t.Answers
	c.failures += t.Failures
	c.skips += t.Skips
	c.probes += t.Probes
}

// checkRoutesFolded: each route's answers as without a limit, by hop, the
// folded targets' answers at each hop in its other row; the routes folded
// in the other route.
func checkRoutesFolded(t *testing.T, ra, rf Report, kept map[string]bool) {
	t.Helper()
	keptRoutes := map[string]bool{}
	for _, u := range rf.Routes {
		keptRoutes[u.Route] = !u.Other
	}
	var otherAnswers, wantOther int
	for _, u := range ra.Routes {
		if !keptRoutes[u.Route] {
			wantOther += u.Answers
			continue
		}
		var g RouteUse
		for _, x := range rf.Routes {
			if x.Route == u.Route {
				g = x
			}
		}
		if g.Answers != u.Answers || g.LastResort != u.LastResort || len(g.Hops) != len(u.Hops) {
			t.Errorf("route %s: %+v, want %+v", u.Route, g, u)
			continue
		}
		for i, h := range u.Hops {
			want := map[string]int{}
			for _, x := range h.Targets {
				name := x.Target
				if !kept[name] {
					name = OtherName
				}
				want[name] += x.Answers
			}
			got := map[string]int{}
			for _, x := range g.Hops[i].Targets {
				name := x.Target
				if x.Other {
					name = OtherName
				}
				got[name] += x.Answers
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("route %s hop %d (-want +got):\n%s", u.Route, h.Hop, d)
			}
		}
	}
	for _, u := range rf.Routes {
		if u.Other {
			otherAnswers = u.Answers
		}
	}
	if otherAnswers != wantOther || wantOther == 0 {
		t.Errorf("the other route has %d answers, want %d", otherAnswers, wantOther)
	}
}

// Past the sketch's size in distinct targets the first pass must let keys go: the
// targets with many lines are kept all the same, wherever they come in the
// file, the count folded is an estimate within DistinctErrorPct, and
// reading through a pipe (kept in a temporary file for the later passes)
// gives the same report as reading the file.
func TestRead_ManyTargetsKeepsTheBusyOnes(t *testing.T) {
	const sketch = 1000 // sketchKeys, smaller
	oneOff := 3 * sketch
	// The one-offs first: the busy targets come after the sketch is full.
	var b bytes.Buffer
	if _, err := ledgergen.Write(&b, ledgergen.Options{Lines: oneOff, OneOff: oneOff}); err != nil {
		t.Fatal(err)
	}
	if _, err := ledgergen.Write(&b, ledgergen.Options{Lines: 3000, Seed: 1, Start: time.Date(2025, 6, 9, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Read([]Source{{Name: path, Path: path}}, Options{Top: 4, sketchKeys: sketch})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Report()
	var names []string
	calls := 0
	for _, x := range r.Targets[:4] {
		names = append(names, x.Target)
		calls += x.Calls
	}
	want := []string{"groq/llama-3.3-70b-versatile", "gemini/gemini-2.5-flash", "openrouter/meta-llama/llama-3.3-70b-instruct",
		"deepseek/deepseek-chat"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("rows kept (-want +got):\n%s", d)
	}
	f := r.Folded.Targets
	if !f.Approx || !f.TopExact {
		t.Errorf("folded %+v, want an estimate, the top certain", f)
	}
	all := NewSummary()
	if err := SummarizeFile(path, Filter{}, all); err != nil {
		t.Fatal(err)
	}
	ra := all.Report()
	for _, x := range ra.Targets {
		calls -= x.Calls
	}
	if o := r.Targets[4]; !o.Other || o.Calls != -calls {
		t.Errorf("other row %+v, want the %d calls of the rest", o, -calls)
	}
	if folds := len(ra.Targets) - 4; math.Abs(float64(f.N-folds)) > float64(folds)*DistinctErrorPct/100 {
		t.Errorf("folded %d, want about %d", f.N, folds)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(func() error { _, err := pw.Write(b.Bytes()); return err }()) }()
	sp, err := Read([]Source{{Name: path, R: pr}}, Options{Top: 4, TempDir: t.TempDir(), sketchKeys: sketch})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(r, sp.Report()); d != "" {
		t.Errorf("through a pipe (-file +pipe):\n%s", d)
	}
}

// A later pass reads the bytes the first read: a ledger appended to
// meanwhile (a live gateway's) is read up to where the first pass
// stopped; one cut short, or replaced by another file (rotated), is an
// error that says to run again.
func TestInput_AgainReadsWhatTheFirstPassRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.jsonl")
	data := ledgerBytes(t, 200, 50)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	first := NewSummary()
	in, err := firstPass(Source{Name: path, Path: path}, Options{}, first)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(ledgerBytes(t, 10, 0))
	f.Close()
	again := NewSummary()
	if err := in.again(Filter{}, again); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(first.Report(), again.Report()); d != "" {
		t.Errorf("appended to: the second read differs (-first +again):\n%s", d)
	}

	if err := os.Truncate(path, int64(len(data)/2)); err != nil {
		t.Fatal(err)
	}
	if err := in.again(Filter{}, NewSummary()); err == nil || !strings.Contains(err.Error(), "shorter than when report first read it") {
		t.Errorf("cut short: %v", err)
	}

	other := filepath.Join(dir, "new.jsonl")
	if err := os.WriteFile(other, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if err := in.again(Filter{}, NewSummary()); err == nil || !strings.Contains(err.Error(), "was replaced") {
		t.Errorf("replaced: %v", err)
	}
}

// Standard input that is a regular file (a redirect) is read again from
// where reading began, with no copy; a pipe is copied, and when no copy
// can be made a ledger that needs a second pass is an error that says
// what to do, while one that does not is read as ever.
func TestRead_StandardInput(t *testing.T) {
	data := ledgerBytes(t, 600, 300)
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	if err := os.WriteFile(path, append([]byte("not a line\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := Read([]Source{{Name: "stdin", Path: path}}, Options{Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	got, err := Read([]Source{{Name: "stdin", R: fh}}, Options{Top: 10, TempDir: "/nonexistent"})
	if err != nil {
		t.Fatalf("a regular file needs no copy: %v", err)
	}
	if d := cmp.Diff(want.Report(), got.Report()); d != "" {
		t.Errorf("standard input, a regular file (-by path +stdin):\n%s", d)
	}

	pipe := func() io.Reader {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(func() error { _, err := pw.Write(data); return err }()) }()
		return pr
	}
	_, err = Read([]Source{{Name: "stdin", R: pipe()}}, Options{Top: 10, TempDir: "/nonexistent"})
	if err == nil || !strings.Contains(err.Error(), "stdin has more than 10 targets") || !strings.Contains(err.Error(), "--top 0") {
		t.Errorf("a pipe with no room for its copy: %v", err)
	}
	if _, err := Read([]Source{{Name: "stdin", R: pipe()}}, Options{Top: 1000, TempDir: "/nonexistent"}); err != nil {
		t.Errorf("a pipe read once needs no copy: %v", err)
	}
}

// Providers past the top are folded too: each bucket's provider rows are
// those kept, then one "other" row, and together they make the bucket's
// total.
func TestRead_ProvidersFolded(t *testing.T) {
	var b bytes.Buffer
	start := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	for i := range 60 {
		p := fmt.Sprintf("p%02d", i%12)
		if i%2 == 0 {
			p = "busy"
		}
		rec := ledger.Record{Time: start.Add(time.Duration(i) * time.Minute), Route: "r", Provider: p, Model: "m",
			Status: ledger.StatusOK, Seconds: 0.5}
		line, _ := rec.MarshalJSON()
		b.Write(append(line, '\n'))
	}
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Read([]Source{{Name: path, Path: path}}, Options{Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := s.ReportBy(time.Hour)
	if f := r.Folded; f == nil || f.Providers == nil || f.Providers.N != 5 || f.Routes != nil {
		t.Fatalf("folded %+v, want 5 providers folded, no route", r.Folded)
	}
	calls := 0
	var names []string
	for _, p := range r.Series[0].Providers {
		calls += p.Calls
		names = append(names, p.Name)
	}
	if want := []string{"busy", "p01", "(other: 5 providers)"}; !slices.Equal(names, want) || calls != r.Series[0].Calls || calls != 60 {
		t.Errorf("provider rows %v with %d calls, want %v with 60", names, calls, want)
	}
}

// The HTML page of a folded report counts the folded targets in its totals,
// shows the "other" row in its table and says how many it folds.
func TestWriteHTML_FoldedReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	if err := os.WriteFile(path, ledgerBytes(t, 2000, 300), 0o644); err != nil {
		t.Fatal(err)
	}
	all, folded := readBoth(t, path, 4)
	var b bytes.Buffer
	if err := WriteHTML(&b, folded.ReportBy(0), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, x := range all.Report().Targets {
		calls += x.Calls
	}
	page := b.String()
	label := folded.Report().Folded.Targets.Label("target")
	for _, want := range []string{groupDigits(int64(calls)), "targets folded", label, "past the 4 with the most lines"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
