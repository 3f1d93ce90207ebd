package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/detourhq/detour/eval"
	"github.com/detourhq/detour/evalresults"
	"github.com/detourhq/detour/grade"
	sim "github.com/detourhq/detour/simulate"
)

// evalSuite is a small suite of sums, right and wrong answers known.
func evalSuite(t *testing.T, dir string, lenient bool) (string, map[string]sim.Pair) {
	t.Helper()
	var b strings.Builder
	b.WriteString("name: sums\ntasks:\n")
	pairs := map[string]sim.Pair{}
	for i := range 6 {
		a, c := 11+i*5, 30+i*9
		prompt := fmt.Sprintf("What is %d + %d? End with a line ANSWER: <number>.", a, c)
		tol := 0
		if lenient && i == 3 {
			tol = 20 // passes its own known-bad answer
		}
		fmt.Fprintf(&b, "  - id: sum-%d\n    prompt: %q\n    max_tokens: 64\n    grade: {numeric: {value: %d, tolerance: %d}}\n    good: [\"ANSWER: %d\"]\n    bad: [\"ANSWER: %d\"]\n",
			i, prompt, a+c, tol, a+c, a+c+10)
		pairs[prompt] = sim.Pair{Right: fmt.Sprintf("Adding: %d + %d = %d.\nANSWER: %d", a, c, a+c, a+c), Wrong: fmt.Sprintf("ANSWER: %d", a+c+10)}
	}
	path := filepath.Join(dir, "sums.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := grade.Load(path); err != nil {
		t.Fatal(err)
	}
	return path, pairs
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	return n
}

// detour eval measures each target as itself through the config's
// providers, writes every call to the ledger and the results file, prints
// the table and a proposal that detour check accepts; a rerun makes no
// call and prints the same report.
func TestEvalCommand_MeasuresResumesAndProposes(t *testing.T) {
	dir := t.TempDir()
	suitePath, pairs := evalSuite(t, dir, false)
	good := &sim.Skill{Answers: pairs, Accuracy: 1}
	poor := &sim.Skill{Answers: pairs, Accuracy: 0, Seed: 2}
	srv, _, vars, _ := batchFixture(t, sim.Provider{Name: "p1", Answer: poor.Answer}, sim.Provider{Name: "p2", Answer: good.Answer})
	resultsPath := filepath.Join(dir, "eval.jsonl")
	proposal := filepath.Join(dir, "proposed.yaml")
	args := []string{"eval", "--suite", suitePath, "--targets", "p1/m,p2/m", "--reps", "2", "--results", resultsPath, "--proposal", proposal}
	code, out, errOut := run(t, vars, "", args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	calls := 2 * 6 * 2
	if got := srv.Stats().Total(); got != calls {
		t.Fatalf("%d calls, want %d (no fallback: p1's wrong answers are its own)", got, calls)
	}
	if n := countLines(t, vars["DETOUR_LEDGER"]); n != calls {
		t.Errorf("%d ledger lines, want %d", n, calls)
	}
	if n := countLines(t, resultsPath); n != calls {
		t.Errorf("%d results lines, want %d", n, calls)
	}
	for _, want := range []string{"REACH", "ACCURACY", "TRUNC", "P95", "$/CORRECT", "p1/m", "0% (0/12)", "100% (12/12)", "correct answers per task", "sum-5"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// The proposal holds the accurate p2, and leaves p1 (0%) out.
	snippet, err := os.ReadFile(proposal)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(snippet), "      - p2/m  # 1. ") || strings.Contains(string(snippet), "- p1/m") ||
		!strings.Contains(string(snippet), "# left out: p1/m: no correct answer in 12 answers") {
		t.Fatalf("proposal does not hold p2/m alone, p1/m left out:\n%s", snippet)
	}
	cfg, err := os.ReadFile(vars["DETOUR_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	base, _, _ := strings.Cut(string(cfg), "routes:")
	checked := filepath.Join(dir, "checked.yaml")
	if err := os.WriteFile(checked, []byte(base+string(snippet)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, vars, "", "check", "--config", checked); code != 0 {
		t.Fatalf("check refused the proposal (exit %d):\n%s\n%s\n%s", code, snippet, out, errOut)
	}

	srv.ClearStats()
	code, out2, errOut := run(t, vars, "", args...)
	if code != 0 || srv.Stats().Total() != 0 {
		t.Fatalf("rerun: exit %d, %d calls; stderr:\n%s", code, srv.Stats().Total(), errOut)
	}
	if !strings.Contains(errOut, fmt.Sprintf("(%d from an earlier run)", calls)) {
		t.Errorf("rerun stderr does not say the calls came from the earlier run:\n%s", errOut)
	}
	if strings.Contains(out2, "100% (12/12)") != strings.Contains(out, "100% (12/12)") {
		t.Errorf("rerun report differs:\n%s\nvs\n%s", out2, out)
	}
}

// A grader that passes its known-bad answer stops eval before any model
// call, with exit 4 and the task and answer named.
func TestEvalCommand_BadGraderStopsBeforeAnyCall(t *testing.T) {
	dir := t.TempDir()
	suitePath, pairs := evalSuite(t, dir, true)
	sk := &sim.Skill{Answers: pairs, Accuracy: 1}
	srv, _, vars, _ := batchFixture(t, sim.Provider{Name: "p1", Answer: sk.Answer}, sim.Provider{Name: "p2"})
	code, _, errOut := run(t, vars, "", "eval", "--suite", suitePath, "--targets", "p1/m", "--results", filepath.Join(dir, "r.jsonl"))
	if code != ExitConfig {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitConfig, errOut)
	}
	if !strings.Contains(errOut, `"sum-3"`) || !strings.Contains(errOut, "known-bad") {
		t.Errorf("stderr does not name the task and the bad answer:\n%s", errOut)
	}
	if n := srv.Stats().Total(); n != 0 {
		t.Fatalf("%d model calls before the graders were fixed", n)
	}
	code, out, errOut := run(t, vars, "", "eval", "--suite", suitePath, "--targets", "p1/m", "--check")
	if code != ExitConfig || !strings.Contains(errOut, `"sum-3"`) {
		t.Fatalf("--check: exit %d\n%s\n%s", code, out, errOut)
	}
}

// Wrong command lines say what to write.
func TestEvalCommand_Usage(t *testing.T) {
	_, _, vars, _ := batchFixture(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"eval"}, ExitUsage, "--targets provider/model"},
		{[]string{"eval", "--targets", "p1/m", "--reps", "0"}, ExitUsage, "--reps"},
		{[]string{"eval", "--targets", "p1/m", "--tie", "5"}, ExitUsage, "0.05 is 5 points"},
		{[]string{"eval", "--targets", "nope/m"}, ExitConfig, "nope"},
		{[]string{"eval", "--targets", "p1/m", "--suite", "/nonexistent.yaml"}, ExitConfig, "nonexistent.yaml"},
	} {
		code, _, errOut := run(t, vars, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// A route's eval_gate, read from eval's results file, keeps a fallback
// target that measured badly out of the chain: with the head walled, the
// request fails rather than reach it (policy is never offered it as the
// next candidate), and the error says why.
func TestEvalGate_KeepsAnUnapprovedFallbackOut(t *testing.T) {
	dir := t.TempDir()
	suitePath, pairs := evalSuite(t, dir, false)
	good := &sim.Skill{Answers: pairs, Accuracy: 1}
	poor := &sim.Skill{Answers: pairs, Accuracy: 0, Seed: 2}
	srv, _, vars, _ := batchFixture(t, sim.Provider{Name: "p1", Answer: poor.Answer}, sim.Provider{Name: "p2", Answer: good.Answer})
	resultsPath := filepath.Join(dir, "eval.jsonl")
	if code, out, errOut := run(t, vars, "", "eval", "--suite", suitePath, "--targets", "p1/m,p2/m", "--results", resultsPath); code != 0 {
		t.Fatalf("eval: exit %d\n%s\n%s", code, out, errOut)
	}
	cfg, err := os.ReadFile(vars["DETOUR_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	base, _, _ := strings.Cut(string(cfg), "routes:")
	gated := base + "routes:\n  gated:\n    chain: [p2/m, p1/m]\n    eval_gate: {results: eval.jsonl, suite: sums, min_accuracy: 0.8}\n"
	path := filepath.Join(dir, "gated.yaml")
	if err := os.WriteFile(path, []byte(gated), 0o600); err != nil {
		t.Fatal(err)
	}
	vars["DETOUR_CONFIG"] = path
	ledgerPath := filepath.Join(dir, "gate-ledger.jsonl")
	vars["DETOUR_LEDGER"] = ledgerPath
	if err := srv.Enqueue("p2", "m", sim.Fault{Kind: sim.DailyQuota}); err != nil {
		t.Fatal(err)
	}
	srv.ClearStats()
	code, out, errOut := run(t, vars, "", "ask", "--route", "gated", "Say hi")
	if code == 0 {
		t.Fatalf("ask answered (%s) though the only fallback is not approved", out)
	}
	if n := srv.Stats().Requests("p1", ""); n != 0 {
		t.Fatalf("the unapproved p1 got %d requests", n)
	}
	if !strings.Contains(errOut, "p1/m: not approved by routes.gated.eval_gate: accuracy 0% (0/18) on suite sums is below 80%") {
		t.Fatalf("the error does not say why the fallback was kept out:\n%s", errOut)
	}
	b, err := os.ReadFile(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"status":"http_429"`) || !strings.Contains(string(b), `"action":"fail"`) {
		t.Fatalf("ledger does not record the head's wall ending the request:\n%s\nstderr:\n%s", b, errOut)
	}
}

// A judge grader's verdict comes through detour itself: the route it names
// in the config, in the same ledger; it judges the known answers before
// any measured call, then each answer.
func TestEvalCommand_JudgeGoesThroughDetour(t *testing.T) {
	dir := t.TempDir()
	suite := `name: prose
tasks:
  - id: thanks-note
    prompt: "Write a one-line thank-you note to a colleague."
    grade:
      judge: {route: judge, rubric: "warm, one line, thanks the colleague"}
    good: ["Thank you so much for covering my shift, it meant a lot! (warm)"]
    bad: ["Noted. (cold)"]
`
	suitePath := filepath.Join(dir, "prose.yaml")
	if err := os.WriteFile(suitePath, []byte(suite), 0o600); err != nil {
		t.Fatal(err)
	}
	writer := &sim.Skill{Answers: map[string]sim.Pair{"Write a one-line thank-you note to a colleague.": {
		Right: "Thanks a million for your help today! (warm)", Wrong: "ok (cold)"}}, Accuracy: 0.5}
	judge := func(q sim.Question) sim.Reply {
		_, answer, _ := strings.Cut(q.Prompt, "<answer>")
		if strings.Contains(answer, "(warm)") {
			return sim.Reply{Text: "It is warm and thanks them.\nVERDICT: PASS"}
		}
		return sim.Reply{Text: "It is curt.\nVERDICT: FAIL"}
	}
	srv, _, vars, _ := batchFixture(t, sim.Provider{Name: "p1", Answer: writer.Answer}, sim.Provider{Name: "p2", Answer: judge})
	cfg, err := os.ReadFile(vars["DETOUR_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	withJudge := strings.Replace(string(cfg), "routes:\n", "routes:\n  judge:\n    chain: [p2/m]\n", 1)
	if err := os.WriteFile(vars["DETOUR_CONFIG"], []byte(withJudge), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, vars, "", "eval", "--suite", suitePath, "--targets", "p1/m", "--reps", "4", "--results", filepath.Join(dir, "r.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	recs, err := evalresults.Read(filepath.Join(dir, "r.jsonl"))
	if err != nil || len(recs) != 4 {
		t.Fatalf("results: %v, %d records", err, len(recs))
	}
	kinds := map[evalresults.Outcome]int{}
	for _, r := range recs {
		kinds[r.Outcome]++
		if warm := strings.Contains(r.Answer, "(warm)"); warm != (r.Outcome == evalresults.Correct) {
			t.Errorf("answer %q graded %s", r.Answer, r.Outcome)
		}
	}
	if kinds[evalresults.Correct] == 0 || kinds[evalresults.Wrong] == 0 {
		t.Errorf("outcomes %v: want both warm and cold notes judged", kinds)
	}
	// 2 known answers + 4 measured answers judged; 4 measured calls.
	if j, w := srv.Stats().Requests("p2", ""), srv.Stats().Requests("p1", ""); j != 6 || w != 4 {
		t.Errorf("judge got %d calls (want 6), writer %d (want 4)", j, w)
	}
	b, _ := os.ReadFile(vars["DETOUR_LEDGER"])
	if n := strings.Count(string(b), `"route":"judge"`); n != 6 {
		t.Errorf("%d ledger lines of route judge, want 6", n)
	}
	if strings.Contains(errOut, "\r") {
		t.Errorf("a progress bar was drawn though stderr is no terminal: %q", errOut)
	}
}

// detour demo eval measures the demo's fake providers on the built-in
// suite with no keys and no config, and proposes a chain: the free tier
// that passes first, then the most accurate paid target, without the
// target its day made unreachable; detour check accepts it without a
// warning.
func TestDemoEval(t *testing.T) {
	code, out, errOut := run(t, nil, "", "demo", "eval", "--reps", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	_, chain, ok := strings.Cut(out, "chain:\n")
	if !ok {
		t.Fatalf("no proposal:\n%s", out)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(chain), "\n")
	if !strings.HasPrefix(first, "- groq-free/") && !strings.HasPrefix(first, "- gemini-free/") {
		t.Errorf("proposal starts %q, want a free tier first", first)
	}
	paid := regexp.MustCompile(`(?m)^      - (\S+)  # \d+\. accuracy band 1`).FindStringSubmatch(chain)
	if paid == nil || paid[1] != "anthropic/claude-haiku-4-5" {
		t.Errorf("the first paid target is %q, want the most accurate reachable one:\n%s", paid, chain)
	}
	if !strings.Contains(chain, "left out: openrouter/anthropic/claude-sonnet-4: no answer") {
		t.Errorf("proposal does not leave out the unreachable target:\n%s", chain)
	}
	checkDemoProposal(t, out)
}

// --route measures the route's chain, and --json prints the report for
// scripts, its proposal named after the route.
func TestEvalCommand_RouteAndJSON(t *testing.T) {
	dir := t.TempDir()
	suitePath, pairs := evalSuite(t, dir, false)
	sk := &sim.Skill{Answers: pairs, Accuracy: 1}
	_, _, vars, _ := batchFixture(t, sim.Provider{Name: "p1", Answer: sk.Answer}, sim.Provider{Name: "p2", Answer: sk.Answer})
	code, out, errOut := run(t, vars, "", "eval", "--suite", suitePath, "--route", "default", "--reps", "1", "--json", "--results", filepath.Join(dir, "r.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(rep.Targets) != 2 || rep.Targets[0].Target != "p1/m" || rep.Targets[1].Target != "p2/m" || rep.Targets[0].Correct != 6 {
		t.Fatalf("targets %+v, want the chain p1/m, p2/m, each 6 of 6", rep.Targets)
	}
	if len(rep.Proposals) != 1 || rep.Proposals[0].Route != "default" || len(rep.Proposals[0].Chain) != 2 {
		t.Fatalf("proposals %+v", rep.Proposals)
	}
	if len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[0], "tie on every task") {
		t.Errorf("warnings %q: both targets answer everything right", rep.Warnings)
	}
}

// Without --route, each route of the config whose chain holds a measured
// target gets a proposal; the chain's unmeasured targets are named, not
// silently dropped.
func TestEvalCommand_ProposesPerRoute(t *testing.T) {
	dir := t.TempDir()
	suitePath, pairs := evalSuite(t, dir, false)
	sk := &sim.Skill{Answers: pairs, Accuracy: 1}
	_, _, vars, _ := batchFixture(t, sim.Provider{Name: "p1", Answer: sk.Answer}, sim.Provider{Name: "p2", Answer: sk.Answer})
	code, out, errOut := run(t, vars, "", "eval", "--suite", suitePath, "--targets", "p2/m", "--reps", "1", "--results", filepath.Join(dir, "r.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"  default:\n    # accuracy bar 50% (detour's default;", "  gpt-4o-mini:\n    # accuracy bar",
		"    chain:\n      - p2/m", "# not measured (add it back if you keep it): p1/m"} {
		if !strings.Contains(out, want) {
			t.Errorf("proposal lacks %q:\n%s", want, out)
		}
	}
}
