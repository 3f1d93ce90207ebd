package eval_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/eval"
	"github.com/detourhq/detour/evalresults"
	"github.com/detourhq/detour/grade"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// scripted is one simulated target of known figures.
type scripted struct {
	name, pool       string
	accuracy, cut    float64 // of the answers: right when not cut
	down             float64 // chance of a 503 per send
	priceIn, priceOu float64
}

// world is a simulator serving each scripted target as a provider of its
// own, and one single-target route per target.
type world struct {
	srv    *sim.Server
	routes []*router.Route
	ledger *ledger.Memory
	router *router.Router
}

func pairs(t *testing.T, s *grade.Suite) map[string]sim.Pair {
	t.Helper()
	m := map[string]sim.Pair{}
	for _, task := range s.Tasks {
		m[task.Prompt] = sim.Pair{Right: task.Good[0], Wrong: task.Bad[0]}
	}
	return m
}

func newWorld(t *testing.T, suite *grade.Suite, targets []scripted, skillOf func(scripted) *sim.Skill) *world {
	t.Helper()
	var provs []sim.Provider
	for i, s := range targets {
		sk := skillOf(s)
		sk.Seed = uint64(i + 1)
		p := sim.Provider{Name: s.name, Answer: sk.Answer}
		if s.down > 0 {
			p.Profile = &sim.Profile{Seed: uint64(100 + i), Rules: []sim.Rule{{Chances: sim.Chances(map[sim.Kind]float64{sim.Unavailable: s.down})}}}
		}
		provs = append(provs, p)
	}
	srv, err := sim.Start(provs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	w := &world{srv: srv, ledger: &ledger.Memory{}}
	// A breaker that never parks: reachability is then each send's own
	// chance, which the test knows.
	w.router = &router.Router{Ledger: w.ledger, Health: health.New(health.Settings{FailureThreshold: 1 << 20})}
	budget := policy.Interactive()
	budget.MaxPerTarget = 1
	for _, s := range targets {
		tg := router.Target{Provider: s.name, Model: "m", Pool: s.pool, Dialect: "openai", PriceIn: s.priceIn, PriceOut: s.priceOu,
			Client: config.NewClient(config.OpenAI, srv.BaseURL(s.name), "k", &http.Client{}, nil)}
		w.routes = append(w.routes, &router.Route{Name: tg.ID(), Chain: []router.Target{tg}, Budget: budget})
	}
	return w
}

func loadSuite(t *testing.T, path string) *grade.Suite {
	t.Helper()
	s, err := grade.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (w *world) targets() []router.Target {
	var out []router.Target
	for _, r := range w.routes {
		out = append(out, r.Chain[0])
	}
	return out
}

func taskIDs(s *grade.Suite) []string { return s.IDs() }

// Against targets of scripted accuracy, truncation and reachability, eval
// recovers each figure within tolerance, keeps reachability apart from
// accuracy, and proposes the expected order: the free tiers first, then
// the accurate band before the weak one; the poorly reachable and the one
// under the accuracy bar left out.
func TestEval_RecoversScriptedFiguresAndProposesTheOrder(t *testing.T) {
	suite := loadSuite(t, "testdata/sums.yaml")
	targets := []scripted{
		{name: "freeA", pool: "free", accuracy: 0.9},
		{name: "freeB", pool: "free", accuracy: 0.87},
		{name: "paid", pool: "payg", accuracy: 0.92, priceIn: 3, priceOu: 15},
		{name: "weak", pool: "prepaid", accuracy: 0.62, priceIn: 0.1, priceOu: 0.2},
		{name: "cutter", pool: "credit", accuracy: 0.9, cut: 0.5, priceIn: 0.1, priceOu: 0.2},
		{name: "flaky", pool: "prepaid", accuracy: 0.95, down: 0.4, priceIn: 0.1, priceOu: 0.2},
	}
	pr := pairs(t, suite)
	w := newWorld(t, suite, targets, func(s scripted) *sim.Skill {
		return &sim.Skill{Answers: pr, Accuracy: s.accuracy, Truncation: s.cut}
	})
	out, err := evalresults.Open(filepath.Join(t.TempDir(), "eval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	const reps = 20
	run := &eval.Runner{Router: w.router, Suite: suite, Targets: w.routes, Reps: reps, Concurrency: 8}
	p, err := run.Run(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	calls := len(targets) * len(suite.Tasks) * reps
	if p.Total != calls || p.Done != calls || p.Skipped != 0 {
		t.Fatalf("progress %+v, want %d calls done", p, calls)
	}
	// Every call is in the ledger, and each call is one line of results.
	if n := len(w.ledger.Records()); n != calls {
		t.Errorf("%d ledger lines, want %d (one send per call: no fallback, no retry)", n, calls)
	}
	rep := eval.Summarize(suite.Name, suite.Digest(), taskIDs(suite), w.targets(), out.Snapshot())
	byName := map[string]eval.TargetReport{}
	for _, tr := range rep.Targets {
		byName[strings.TrimSuffix(tr.Target, "/m")] = tr
	}
	for _, s := range targets {
		got := byName[s.name]
		wantAcc := (1 - s.cut) * s.accuracy // a cut answer is not correct
		if math.Abs(got.Accuracy-wantAcc) > 0.08 {
			t.Errorf("%s: accuracy %.3f, want %.2f ± 0.08", s.name, got.Accuracy, wantAcc)
		}
		if math.Abs(got.TruncationRate-s.cut) > 0.08 {
			t.Errorf("%s: truncation %.3f, want %.2f ± 0.08", s.name, got.TruncationRate, s.cut)
		}
		if math.Abs(got.Reachability-(1-s.down)) > 0.08 {
			t.Errorf("%s: reachability %.3f, want %.2f ± 0.08", s.name, got.Reachability, 1-s.down)
		}
		if got.Attempted != len(suite.Tasks)*reps || got.Answered+got.Errors != got.Attempted {
			t.Errorf("%s: %d attempted, %d answered, %d errors", s.name, got.Attempted, got.Answered, got.Errors)
		}
		paid := s.priceIn > 0 || s.priceOu > 0
		if paid != (got.CostPerTask > 0) || got.TokensOut <= 0 {
			t.Errorf("%s: cost per task %v, mean tokens out %v", s.name, got.CostPerTask, got.TokensOut)
		}
	}
	prop := eval.Propose("default", rep, eval.ProposeOptions{})
	var chain, left []string
	for _, e := range prop.Chain {
		chain = append(chain, strings.TrimSuffix(e.Target, "/m"))
	}
	for _, e := range prop.Left {
		left = append(left, strings.TrimSuffix(e.Target, "/m"))
	}
	// The two free ones pass the bar and go first (they cost nothing
	// while they last), the more accurate first; then the paid band of
	// about 90%, then the weak one (62%). The cutter (45% once its cut
	// answers count as wrong) is under the 50% bar.
	if want := []string{"freeA", "freeB", "paid", "weak"}; !slices.Equal(chain, want) {
		t.Errorf("proposed %v, want %v", chain, want)
	}
	if !slices.Equal(left, []string{"cutter", "flaky"}) {
		t.Errorf("left out %v, want [cutter flaky] (under the 50%% bar; reachability 60%% under the 90%% gate)", left)
	}
	for _, w := range rep.Warnings {
		if strings.Contains(w, "tie on every task") {
			t.Errorf("warning %q: the targets differ", w)
		}
	}
}

// A rerun measures only what the results file does not hold: after a run
// stopped part way, the rerun makes exactly the missing calls.
func TestEval_RerunMeasuresOnlyWhatIsMissing(t *testing.T) {
	suite := loadSuite(t, "testdata/sums.yaml")
	targets := []scripted{{name: "a", pool: "free", accuracy: 1}, {name: "b", pool: "payg", accuracy: 1}}
	pr := pairs(t, suite)
	w := newWorld(t, suite, targets, func(s scripted) *sim.Skill { return &sim.Skill{Answers: pr, Accuracy: s.accuracy} })
	path := filepath.Join(t.TempDir(), "eval.jsonl")
	out, err := evalresults.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	run := &eval.Runner{Router: w.router, Suite: suite, Targets: w.routes, Reps: 2, Concurrency: 1,
		Progress: func(p eval.Progress) {
			if n = p.Done; n >= 15 {
				cancel()
			}
		}}
	if _, err := run.Run(ctx, out); err == nil {
		t.Fatal("the cancelled run returned no error")
	}
	out.Close()
	sent := w.srv.Stats().Total()
	out, err = evalresults.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	held := len(out.Records)
	if held < 15 || held > 16 {
		t.Fatalf("the file holds %d records after stopping at 15", held)
	}
	w.srv.ClearStats()
	run.Progress = nil
	p, err := run.Run(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	total := 2 * 2 * len(suite.Tasks)
	if p.Skipped != held || p.Done != total {
		t.Fatalf("rerun progress %+v, want %d skipped of %d", p, held, total)
	}
	if got := w.srv.Stats().Total(); got != total-held {
		t.Fatalf("the rerun sent %d calls, want %d (the first sent %d)", got, total-held, sent)
	}
	seen := map[string]bool{}
	for _, r := range out.Snapshot() {
		k := r.Target + r.Task + string(rune('0'+r.Rep))
		if seen[k] {
			t.Fatalf("call %s/%s/%d recorded twice", r.Target, r.Task, r.Rep)
		}
		seen[k] = true
	}
}

// A grader that passes its known-bad answer stops the run before any
// model call, naming the task and the answer.
func TestEval_BadGraderStopsTheRunBeforeAnyCall(t *testing.T) {
	suite, err := grade.Parse("bad.yaml", []byte(`name: bad
tasks:
  - id: lenient
    prompt: "What is 2 + 2? End with ANSWER: <number>."
    grade:
      numeric: {value: 4, tolerance: 2}
    good: ["ANSWER: 4"]
    bad: ["ANSWER: 5"]
`))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, suite, []scripted{{name: "a", accuracy: 1}}, func(scripted) *sim.Skill { return &sim.Skill{} })
	out, err := evalresults.Open(filepath.Join(t.TempDir(), "eval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	_, err = (&eval.Runner{Router: w.router, Suite: suite, Targets: w.routes}).Run(context.Background(), out)
	if err == nil || !strings.Contains(err.Error(), `"lenient"`) || !strings.Contains(err.Error(), "ANSWER: 5") {
		t.Fatalf("err = %v, want the task and its bad answer named", err)
	}
	var ge *eval.GraderError
	if !errAs(err, &ge) || len(ge.Problems) != 1 {
		t.Fatalf("err = %#v, want one grader problem", err)
	}
	if n := w.srv.Stats().Total(); n != 0 {
		t.Fatalf("%d model calls were made", n)
	}
	if len(out.Snapshot()) != 0 {
		t.Fatal("records were written")
	}
}

func errAs(err error, target **eval.GraderError) bool { return errors.As(err, target) }

// Targets that score alike on every task are called a tie: the suite is
// too easy to choose between them. A difference on one task is no tie.
func TestSummarize_WarnsWhenTheTopTargetsTieOnEveryTask(t *testing.T) {
	tasks := []string{"a", "b"}
	targets := []router.Target{{Provider: "x", Model: "m"}, {Provider: "y", Model: "m"}, {Provider: "z", Model: "m"}}
	rec := func(target, task string, o evalresults.Outcome) evalresults.Record {
		return evalresults.Record{Digest: "d", Target: target, Task: task, Rep: 1, Outcome: o}
	}
	recs := []evalresults.Record{
		rec("x/m", "a", evalresults.Correct), rec("x/m", "b", evalresults.Correct),
		rec("y/m", "a", evalresults.Correct), rec("y/m", "b", evalresults.Correct),
		rec("z/m", "a", evalresults.Correct), rec("z/m", "b", evalresults.Wrong),
	}
	rep := eval.Summarize("s", "d", tasks, targets, recs)
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "x/m, y/m tie on every task") {
		t.Fatalf("warnings %q, want x/m and y/m named as a tie", rep.Warnings)
	}
	recs[3] = rec("y/m", "b", evalresults.Truncated)
	for _, w := range eval.Summarize("s", "d", tasks, targets, recs).Warnings {
		if strings.Contains(w, "tie on every task") {
			t.Fatalf("warning %q, but y/m was cut on task b", w)
		}
	}
}

// RPM paces the calls to a provider: at 600 a minute, 10 calls take at
// least 0.9 s (the first goes at once).
func TestEval_PacesAProvider(t *testing.T) {
	suite := loadSuite(t, "testdata/sums.yaml")
	pr := pairs(t, suite)
	w := newWorld(t, suite, []scripted{{name: "a", accuracy: 1}}, func(s scripted) *sim.Skill { return &sim.Skill{Answers: pr, Accuracy: 1} })
	out, err := evalresults.Open(filepath.Join(t.TempDir(), "eval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	start := time.Now()
	run := &eval.Runner{Router: w.router, Suite: suite, Targets: w.routes, Reps: 1, Concurrency: 4, RPM: map[string]float64{"a": 600}}
	if _, err := run.Run(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 850*time.Millisecond {
		t.Fatalf("10 calls at 600 a minute took %v, want at least 0.9 s", el)
	}
}
