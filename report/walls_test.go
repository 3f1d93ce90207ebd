package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/ledger"
)

// writeLedgers writes recs into n files as n gateways sharing the
// requests would: each record to a file picked at random, each file in
// the order its attempts ended (a line is written when its attempt ends).
func writeLedgers(t *testing.T, recs []ledger.Record, n int, seed uint64) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 33))
	files := make([][]ledger.Record, n)
	for _, r := range recs {
		i := rng.IntN(n)
		files[i] = append(files[i], r)
	}
	dir := t.TempDir()
	paths := make([]string, n)
	for i, f := range files {
		sort.SliceStable(f, func(a, b int) bool { return recordEnd(&f[a]).Before(recordEnd(&f[b])) })
		var buf bytes.Buffer
		for _, r := range f {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(append(b, '\n'))
		}
		paths[i] = filepath.Join(dir, fmt.Sprintf("ledger-%d.jsonl", i))
		if err := os.WriteFile(paths[i], buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

func readWalls(t *testing.T, paths []string) []Wall {
	t.Helper()
	srcs := make([]Source, len(paths))
	for i, p := range paths {
		srcs[i] = Source{Name: p, Path: p}
	}
	s, err := Read(srcs, Options{Top: DefaultTop})
	if err != nil {
		t.Fatal(err)
	}
	return s.Report().Walls
}

func rec(tm time.Time, target, status, kind string, secs float64) ledger.Record {
	p, m, _ := cutTarget(target)
	return ledger.Record{Time: tm, Route: "default", Provider: p, Model: m, Status: status, Kind: kind, Seconds: secs}
}

func cutTarget(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// The issue: walls were closed in file order. The demo's Groq wall showed
// "(0s)": an answer to a request sent just before the wall, written just
// after it, closed it, though Groq stayed parked; and two ledgers given
// together gave negative durations. Here concurrent requests go to two
// ledgers at random, and whichever order the files come in, each wall
// ends at the first answer to a request sent after the wall came back.
func TestWalls_InTimeOrderAcrossConcurrentLedgers(t *testing.T) {
	base := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }
	groq, orr, quota := "groq-free/llama-3.3-70b-versatile", "openrouter/anthropic/claude-sonnet-4", "mistral-payg/mistral-small-latest"
	wall := rec(sec(0), groq, "http_429", "wall", 0.07)
	wall.ProviderRequestID, wall.Reason = "req_groq_tpd", "429 tokens per day (TPD) exhausted"
	credit := rec(sec(1800), groq, "http_402", "wall", 0.05)
	credit.ProviderRequestID, credit.Reason = "req_groq_402", "402 no credits"
	recs := []ledger.Record{
		rec(sec(0), groq, "ok", "", 0.11),   // sent with the wall's request, written after it
		wall,                                // 10:00:00, known at .070
		rec(sec(0.05), groq, "ok", "", 0.2), // sent before the wall came back: ends nothing
		rec(sec(60), orr, "http_402", "wall", 0.06),
		rec(sec(119), quota, "ok", "", 40), // in flight across the quota skip: ends nothing
		rec(sec(120), quota, "skipped_quota", "", 0),
		rec(sec(125), quota, "skipped_quota", "", 0),
		rec(sec(150), quota, "ok", "", 0.2),                     // after the skip, written first...
		rec(sec(130), quota, "ok", "", 200),                     // ...but this one was sent earlier: the wall ends at 10:02:10
		rec(sec(440), groq, "ok", "", 0.1),                      // the park over: 7m20s
		credit,                                                  // 10:30:00, open to the end
		rec(sec(2700), "deepseek/deepseek-chat", "ok", "", 0.3), // the report's end, 10:45:00
	}
	for i := 0; i < 40; i++ { // skips while parked keep the walls open
		recs = append(recs, rec(sec(float64(1+10*i)), groq, "skipped_parked", "", 0),
			rec(sec(float64(61+60*i)), orr, "skipped_parked", "", 0), rec(sec(float64(1801+20*i)), groq, "skipped_parked", "", 0))
	}
	end := func(s float64) *time.Time { e := sec(s); return &e }
	want := []Wall{
		{Target: groq, Start: sec(0), End: end(440), Seconds: 440, Status: "http_429", Reason: "429 tokens per day (TPD) exhausted",
			UpstreamRequestID: "req_groq_tpd"},
		{Target: orr, Start: sec(60), Open: true, Seconds: 2640, Status: "http_402"},
		{Target: quota, Start: sec(120), End: end(130), Seconds: 10, Status: "skipped_quota", SeenComing: true},
		{Target: groq, Start: sec(1800), Open: true, Seconds: 900, Status: "http_402", Reason: "402 no credits",
			UpstreamRequestID: "req_groq_402"},
	}
	for seed := uint64(1); seed <= 8; seed++ {
		paths := writeLedgers(t, recs, 2, seed)
		for _, order := range [][]string{paths, {paths[1], paths[0]}} {
			if d := cmp.Diff(want, readWalls(t, order)); d != "" {
				t.Errorf("seed %d, files %v (-want +got):\n%s", seed, order, d)
			}
		}
	}
}

// oracleWalls is the definition, computed the slow way: every line of a
// target in the order of its key (a wall mark when it was known, an
// answer when its attempt began; an answer first on a tie); a wall opens
// at a mark when none is open and closes at the next answer.
func oracleWalls(recs []ledger.Record) []Wall {
	type ev struct {
		key  time.Time
		rec  ledger.Record
		mark bool
	}
	by := map[string][]ev{}
	var latest time.Time
	for _, r := range recs {
		if r.Time.After(latest) {
			latest = r.Time
		}
		name := r.Provider + "/" + r.Model
		switch {
		case r.Status == "ok":
			by[name] = append(by[name], ev{r.Time, r, false})
		case r.Kind == "wall" || r.Status == "skipped_quota":
			by[name] = append(by[name], ev{r.Time.Add(time.Duration(r.Seconds * float64(time.Second))), r, true})
		}
	}
	var out []Wall
	for name, evs := range by {
		sort.SliceStable(evs, func(i, j int) bool {
			if !evs[i].key.Equal(evs[j].key) {
				return evs[i].key.Before(evs[j].key)
			}
			return !evs[i].mark && evs[j].mark
		})
		var open *Wall
		for _, e := range evs {
			switch {
			case e.mark && open == nil:
				open = &Wall{Target: name, Start: e.rec.Time, Open: true, Status: e.rec.Status, Reason: e.rec.Reason,
					SeenComing: e.rec.Status == "skipped_quota", UpstreamRequestID: e.rec.ProviderRequestID}
			case !e.mark && open != nil:
				end := e.rec.Time
				open.End, open.Open, open.Seconds = &end, false, end.Sub(open.Start).Seconds()
				out = append(out, *open)
				open = nil
			}
		}
		if open != nil {
			open.Seconds = latest.Sub(open.Start).Seconds()
			out = append(out, *open)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.Before(out[j].Start)
		}
		return out[i].Target < out[j].Target
	})
	return out
}

// Random traffic from concurrent requests over three targets (answers of
// up to 90 s, walls, quota skips), split at random over two or three
// ledgers: Read's walls are the definition's, whatever the split and the
// order of the files.
func TestWalls_MatchTheDefinitionOnRandomConcurrentTraffic(t *testing.T) {
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	targets := []string{"a/x", "a/y", "b/z"}
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		used := map[int64]bool{} // every key apart, so "first" is one line
		var recs []ledger.Record
		for len(recs) < 600 {
			startMS := rng.Int64N(3 * 3600 * 1000)
			r := rec(base.Add(time.Duration(startMS)*time.Millisecond), targets[rng.IntN(len(targets))], "ok", "", 0)
			switch x := rng.IntN(10); {
			case x < 6:
				r.Seconds = float64(rng.IntN(90_000)) / 1000
			case x < 8:
				r.Status, r.Kind, r.Seconds = "http_429", "wall", float64(rng.IntN(500))/1000
				r.ProviderRequestID = fmt.Sprintf("req_%d", len(recs))
			case x < 9:
				r.Status = "skipped_quota"
			default:
				r.Status, r.Kind, r.Seconds = "http_503", "transient", float64(rng.IntN(2000))/1000
			}
			key := startMS
			if r.Status != "ok" {
				key += int64(r.Seconds * 1000)
			}
			if used[key] {
				continue
			}
			used[key] = true
			r.Reason = fmt.Sprintf("line %d", len(recs))
			recs = append(recs, r)
		}
		want := oracleWalls(recs)
		paths := writeLedgers(t, recs, 2+int(seed%2), seed)
		got := readWalls(t, paths)
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("seed %d: %d walls, want %d (-want +got):\n%s", seed, len(got), len(want), d)
		}
		for i, j := 0, len(paths)-1; i < j; i, j = i+1, j-1 {
			paths[i], paths[j] = paths[j], paths[i]
		}
		if d := cmp.Diff(want, readWalls(t, paths)); d != "" {
			t.Fatalf("seed %d, files reversed (-want +got):\n%s", seed, d)
		}
		for _, w := range got {
			if w.Seconds < 0 {
				t.Fatalf("seed %d: negative wall %+v", seed, w)
			}
		}
	}
}

// Lines given out of the order they were written (one file's after the
// other's, through one Summary) still give walls with no negative
// duration, each ending after it began.
func TestWalls_NeverNegative(t *testing.T) {
	s := NewSummary()
	for _, l := range []string{
		`{"time":"2025-06-01T10:05:00Z","provider":"g","model":"m","status":"ok","seconds":0.2}`,
		`{"time":"2025-06-01T10:06:00Z","provider":"g","model":"m","status":"http_429","kind":"wall","seconds":0.1}`,
		`{"time":"2025-06-01T10:00:00Z","provider":"g","model":"m","status":"http_402","kind":"wall","seconds":0.1}`,
		`{"time":"2025-06-01T10:01:00Z","provider":"g","model":"m","status":"ok","seconds":-5}`,
		`{"time":"2025-06-01T10:02:00Z","provider":"g","model":"m","status":"http_402","kind":"wall","seconds":-3}`,
	} {
		if err := s.AddLine([]byte(l), Filter{}, "t"); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range s.Report().Walls {
		if w.Seconds < 0 || w.End != nil && w.End.Before(w.Start) {
			t.Errorf("wall %+v runs backwards", w)
		}
	}
}
