package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func at(hms string) time.Time {
	t, err := time.Parse(time.RFC3339, "2025-06-01T"+hms+"Z")
	if err != nil {
		panic(err)
	}
	return t
}

func summarize(t *testing.T, path string, f Filter) Report {
	t.Helper()
	s := NewSummary()
	if err := SummarizeFile(path, f, s); err != nil {
		t.Fatal(err)
	}
	return s.Report()
}

func target(t *testing.T, r Report, name string) Target {
	t.Helper()
	for _, x := range r.Targets {
		if x.Target == name {
			return x
		}
	}
	t.Fatalf("no target %s in %+v", name, r.Targets)
	return Target{}
}

func approx(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: nil, want %v", what, want)
	}
	if math.Abs(*got-want) > 0.02*want+1e-9 {
		t.Errorf("%s = %v, want %v ±2%%", what, *got, want)
	}
}

func TestSummarizeTestdata(t *testing.T) {
	r := summarize(t, "testdata/ledger.jsonl", Filter{})
	if r.Lines != 30 || r.Matched != 29 || r.UnreadableLines != 1 {
		t.Errorf("lines %d matched %d unreadable %d, want 30 29 1", r.Lines, r.Matched, r.UnreadableLines)
	}
	if want := []string{"testdata/ledger.jsonl:30"}; !reflect.DeepEqual(r.UnreadableAt, want) {
		t.Errorf("unreadable at %v, want %v", r.UnreadableAt, want)
	}
	if len(r.Targets) != 3 || r.Targets[0].Target != "groq/llama" || r.Targets[1].Target != "cerebras/qwen" || r.Targets[2].Target != "gemini/flash" {
		t.Fatalf("targets order: %+v", r.Targets)
	}

	g := target(t, r, "groq/llama")
	if g.Calls != 13 || g.Answers != 10 || g.Failures != 3 || g.Skips != 0 {
		t.Errorf("groq counts: %+v", g)
	}
	if want := []Count{{"http_429", 2}, {"http_503", 1}}; !reflect.DeepEqual(g.FailuresByStatus, want) {
		t.Errorf("groq failures %v, want %v", g.FailuresByStatus, want)
	}
	if *g.ReachabilityPct != 76.9 {
		t.Errorf("groq reach %v, want 76.9", *g.ReachabilityPct)
	}
	approx(t, "groq p50", g.P50Seconds, 0.8)
	approx(t, "groq p95", g.P95Seconds, 1.3)
	if g.TokensIn != 1000 || g.TokensOut != 200 || g.CostUSD != 0.01 {
		t.Errorf("groq tokens/cost %d %d %v", g.TokensIn, g.TokensOut, g.CostUSD)
	}

	c := target(t, r, "cerebras/qwen")
	if c.Calls != 7 || c.Answers != 4 || c.Failures != 3 || c.Skips != 2 || *c.ReachabilityPct != 57.1 {
		t.Errorf("cerebras counts: %+v reach %v", c, *c.ReachabilityPct)
	}
	if want := []Count{{"http_402", 2}, {"net_timeout", 1}}; !reflect.DeepEqual(c.FailuresByStatus, want) {
		t.Errorf("cerebras failures %v", c.FailuresByStatus)
	}
	approx(t, "cerebras p50", c.P50Seconds, 1.2)
	approx(t, "cerebras p95", c.P95Seconds, 1.6)
	if c.TokensIn != 800 || c.TokensOut != 160 || c.CostUSD != 0.008 {
		t.Errorf("cerebras tokens/cost %d %d %v", c.TokensIn, c.TokensOut, c.CostUSD)
	}

	m := target(t, r, "gemini/flash")
	if m.Calls != 3 || m.Answers != 2 || m.Failures != 1 || m.Skips != 4 || *m.ReachabilityPct != 66.7 {
		t.Errorf("gemini counts: %+v", m)
	}
	if want := []Count{{"skipped_no_key", 2}, {"skipped_parked", 2}}; !reflect.DeepEqual(m.SkipsByStatus, want) {
		t.Errorf("gemini skips %v", m.SkipsByStatus)
	}
	approx(t, "gemini p50", m.P50Seconds, 2.0)
	approx(t, "gemini p95", m.P95Seconds, 3.0)
	if m.TokensIn != 600 || m.TokensOut != 100 || m.CostUSD != 0 {
		t.Errorf("gemini tokens/cost %d %d %v", m.TokensIn, m.TokensOut, m.CostUSD)
	}
}

func TestWalls(t *testing.T) {
	r := summarize(t, "testdata/ledger.jsonl", Filter{})
	if len(r.Walls) != 2 {
		t.Fatalf("walls: %+v", r.Walls)
	}
	w := r.Walls[0]
	if w.Target != "cerebras/qwen" || !w.Start.Equal(at("10:03:00")) || w.Open || w.End == nil ||
		!w.End.Equal(at("10:20:00")) || w.Seconds != 1020 || w.Reason != "no credit" || w.Status != "http_402" {
		t.Errorf("first wall: %+v", w)
	}
	w = r.Walls[1]
	if w.Target != "gemini/flash" || !w.Start.Equal(at("10:23:00")) || !w.Open || w.End != nil || w.Reason != "daily quota" {
		t.Errorf("second wall: %+v", w)
	}
}

// A skipped_quota line opens a wall seen coming (no failure, no failed
// call), closed by the target's next answer; other skips open none.
func TestWalls_SeenComing(t *testing.T) {
	s := NewSummary()
	lines := []string{
		`{"time":"2025-06-01T10:00:00Z","provider":"groq","model":"llama","status":"skipped_parked","reason":"parked"}`,
		`{"time":"2025-06-01T10:01:00Z","provider":"groq","model":"llama","status":"skipped_quota","reason":"targets.groq/llama.limits rpd 1000 spent"}`,
		`{"time":"2025-06-01T10:02:00Z","provider":"groq","model":"llama","status":"skipped_quota","reason":"again"}`,
		`{"time":"2025-06-02T00:00:05Z","provider":"groq","model":"llama","status":"ok","seconds":0.5}`,
	}
	for _, l := range lines {
		if err := s.AddLine([]byte(l), Filter{}, "t"); err != nil {
			t.Fatal(err)
		}
	}
	r := s.Report()
	if len(r.Walls) != 1 {
		t.Fatalf("walls %+v, want one, seen coming", r.Walls)
	}
	w := r.Walls[0]
	if !w.SeenComing || w.Status != "skipped_quota" || !w.Start.Equal(at("10:01:00")) || w.Open || w.End == nil ||
		w.Reason != "targets.groq/llama.limits rpd 1000 spent" {
		t.Errorf("wall %+v, want seen coming from the first quota skip to the answer", w)
	}
}

func TestGzipSameSummary(t *testing.T) {
	plain := summarize(t, "testdata/ledger.jsonl", Filter{})
	gz := summarize(t, "testdata/ledger.jsonl.gz", Filter{})
	gz.UnreadableAt = plain.UnreadableAt // named after their files
	if !reflect.DeepEqual(plain, gz) {
		t.Errorf("gzip summary differs:\n%+v\n%+v", plain, gz)
	}
}

func TestManyFilesOneSummary(t *testing.T) {
	s := NewSummary()
	for _, p := range []string{"testdata/ledger.jsonl", "testdata/ledger.jsonl.gz"} {
		if err := SummarizeFile(p, Filter{}, s); err != nil {
			t.Fatal(err)
		}
	}
	r := s.Report()
	if g := target(t, r, "groq/llama"); g.Calls != 26 || g.Answers != 20 || r.UnreadableLines != 2 || len(r.UnreadableAt) != 2 {
		t.Errorf("two files: groq %+v, unreadable %d %v", g, r.UnreadableLines, r.UnreadableAt)
	}
}

func TestFilters(t *testing.T) {
	r := summarize(t, "testdata/ledger.jsonl", Filter{Provider: "groq"})
	if r.Matched != 13 || len(r.Targets) != 1 || r.Targets[0].Target != "groq/llama" {
		t.Errorf("provider filter: %+v", r)
	}
	r = summarize(t, "testdata/ledger.jsonl", Filter{Route: "batch"})
	if r.Matched != 5 || len(r.Targets) != 1 || r.Targets[0].Calls != 3 || r.Targets[0].Skips != 2 {
		t.Errorf("route filter: %+v", r)
	}
	r = summarize(t, "testdata/ledger.jsonl", Filter{Since: at("10:20:00"), Until: at("10:30:00")})
	if r.Matched != 10 {
		t.Errorf("time filter matched %d, want 10", r.Matched)
	}
	// Within the window the cerebras wall is never seen; gemini's opens.
	if len(r.Walls) != 1 || r.Walls[0].Target != "gemini/flash" || !r.Walls[0].Open {
		t.Errorf("time filter walls: %+v", r.Walls)
	}
}

func TestParseTime(t *testing.T) {
	now := at("12:00:00")
	for in, want := range map[string]time.Time{
		"24h": now.Add(-24 * time.Hour), "90m": now.Add(-90 * time.Minute), "7d": now.Add(-7 * 24 * time.Hour),
		"2025-06-01T10:00:00Z": at("10:00:00"),
	} {
		got, err := ParseTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "-5h", "d"} {
		if _, err := ParseTime(in, now); err == nil {
			t.Errorf("ParseTime(%q): no error", in)
		}
	}
}

func TestLongAndOddLines(t *testing.T) {
	long := `{"provider":"p","model":"m","status":"ok","reason":"` + strings.Repeat("x", 2<<20) + `"}`
	in := "\n\n{}\nnot json\n" + long + "\n" + `{"provider":"p","model":"m","status":"ok","seconds":1}` + "\n"
	s := NewSummary()
	if err := Summarize(strings.NewReader(in), Filter{}, s); err != nil {
		t.Fatal(err)
	}
	r := s.Report()
	if r.Lines != 4 || r.UnreadableLines != 3 || r.Matched != 1 {
		t.Errorf("lines %d unreadable %d matched %d (%v)", r.Lines, r.UnreadableLines, r.Matched, r.UnreadableAt)
	}
	if want := []string{"line:3", "line:4", "line:5"}; !reflect.DeepEqual(r.UnreadableAt, want) {
		t.Errorf("unreadable at %v, want %v", r.UnreadableAt, want)
	}
}

func TestHistogramError(t *testing.T) {
	var h Histogram
	for i := 1; i <= 10000; i++ {
		h.Add(float64(i) / 1000) // 1ms .. 10s
	}
	for _, q := range []float64{0.5, 0.95, 0.99} {
		got, _ := h.Quantile(q)
		want := q * 10
		if math.Abs(got-want)/want > 0.021 {
			t.Errorf("q%v = %v, want %v ±2%%", q, got, want)
		}
	}
}

func FuzzSummarizeLine(f *testing.F) {
	data, err := os.ReadFile("testdata/ledger.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		f.Add(l)
	}
	f.Add([]byte(`{"provider":"p","status":"http_1","kind":"wall","seconds":-1e308,"tokens_in":-5}`))
	f.Add([]byte(`{"provider":"p","status":"ok","seconds":NaN}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		s := NewSummary()
		_ = s.AddLine(line, Filter{}, "fuzz:1")
		_ = Summarize(bytes.NewReader(line), Filter{Route: "x"}, s)
		r := s.Report()
		if max := 2 + bytes.Count(line, []byte("\n")); r.Lines < r.UnreadableLines || r.Lines > max || r.Matched > r.Lines {
			t.Fatalf("lines %d unreadable %d", r.Lines, r.UnreadableLines)
		}
	})
}

// benchReader serves n ledger lines cycling over a prebuilt block, so a
// million lines need no more memory than the block.
type benchReader struct {
	block []byte
	left  int // blocks left
	pos   int
}

func (b *benchReader) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.block[b.pos:])
	b.pos += n
	if b.pos == len(b.block) {
		b.pos = 0
		b.left--
	}
	return n, nil
}

func BenchmarkSummarize1M(b *testing.B) {
	const perBlock, blocks = 1000, 1000
	var buf bytes.Buffer
	statuses := []string{"ok", "ok", "ok", "ok", "ok", "ok", "http_429", "skipped_parked", "net_timeout", "ok"}
	for i := 0; i < perBlock; i++ {
		st := statuses[i%len(statuses)]
		kind := ""
		if st == "http_429" {
			kind = "wall"
		}
		fmt.Fprintf(&buf, `{"time":"2025-06-01T10:%02d:%02d.%03dZ","request_id":"req-%06d","route":"default","provider":"prov%d","model":"model-%d","hop":0,"attempt":1,"failover":false,"status":%q,"kind":%q,"action":"return","phase":"committed","tokens_in":%d,"tokens_out":%d,"seconds":%.3f,"wait_seconds":0,"cost":0.00012,"reason":"a reason"}`+"\n",
			i/60%60, i%60, i%1000, i, i%5, i%3, st, kind, 100+i%50, 20+i%7, 0.2+float64(i%97)/20)
	}
	block := buf.Bytes()
	b.SetBytes(int64(len(block) * blocks))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := NewSummary()
		if err := Summarize(&benchReader{block: block, left: blocks}, Filter{}, s); err != nil {
			b.Fatal(err)
		}
		if r := s.Report(); r.Lines != perBlock*blocks {
			b.Fatalf("lines %d", r.Lines)
		}
	}
}
