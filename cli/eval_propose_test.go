package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/eval"
	sim "github.com/detourhq/detour/simulate"
)

// checkDemoProposal runs detour check on the demo's providers (the config
// detour sim writes) with the routes: snippet that out (demo eval's
// output) ends with: check must find nothing to warn about.
func checkDemoProposal(t *testing.T, out string) {
	t.Helper()
	i := strings.Index(out, "# proposed by detour demo eval")
	if i < 0 {
		t.Fatalf("no proposal in:\n%s", out)
	}
	srv, err := sim.Start(sim.DayProfile(1)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	base, _, _ := strings.Cut(simConfig(srv, dir), "routes:")
	path := filepath.Join(dir, "detour.yaml")
	if err := os.WriteFile(path, []byte(base+out[i:]), 0o600); err != nil {
		t.Fatal(err)
	}
	code, cout, cerr := run(t, nil, "", "check", "--config", path)
	if code != 0 || !strings.Contains(cout, "\nno warnings\n") {
		t.Fatalf("check on the demo's proposal: exit %d\n%s\n%s\nproposal:\n%s", code, cout, cerr, out[i:])
	}
}

// A suite every target fails proposes nothing and says why (not "too
// easy"); --write-route then writes nothing, exits 1, and the config is
// as it was, byte for byte.
func TestEvalCommand_AllZeroProposesNothingAndSaysWhy(t *testing.T) {
	dir := t.TempDir()
	suitePath, pairs := evalSuite(t, dir, false)
	p1 := &sim.Skill{Answers: pairs, Accuracy: 0}
	p2 := &sim.Skill{Answers: pairs, Accuracy: 0, Seed: 2}
	_, _, vars, _ := batchFixture(t, sim.Provider{Name: "p1", Answer: p1.Answer}, sim.Provider{Name: "p2", Answer: p2.Answer})
	before, err := os.ReadFile(vars["DETOUR_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, vars, "", "eval", "--suite", suitePath, "--targets", "p1/m,p2/m", "--reps", "1",
		"--results", filepath.Join(dir, "r.jsonl"), "--write-route", "default")
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d (nothing to write)\n%s\n%s", code, ExitFailed, out, errOut)
	}
	_, snippet, _ := strings.Cut(out, "\nroutes:\n")
	for _, want := range []string{"every target scored 0%: nothing is proposed", "left out: p1/m: no correct answer in 6 answers",
		"no target answered a single task correctly"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(snippet, "chain:") || strings.Contains(out, "too easy") {
		t.Errorf("a chain proposed, or the suite called too easy:\n%s", out)
	}
	if !strings.Contains(errOut, "--write-route default: no chain to write: every target scored 0%") {
		t.Errorf("stderr does not say why nothing was written:\n%s", errOut)
	}
	after, err := os.ReadFile(vars["DETOUR_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Fatalf("the config changed:\n%s", after)
	}
}

// --write-route rewrites one route's chain in a commented config: the
// chain's lines change, every other byte stays; the file keeps its mode
// and stays behind its symbolic link; check accepts the result without a
// warning; a rerun writes the same bytes; a new route goes after the
// others.
func TestEvalCommand_WriteRouteRoundTripsACommentedConfig(t *testing.T) {
	dir := t.TempDir()
	suitePath, pairs := evalSuite(t, dir, false)
	good := &sim.Skill{Answers: pairs, Accuracy: 1}
	poor := &sim.Skill{Answers: pairs, Accuracy: 0, Seed: 3}
	_, _, vars, _ := batchFixture(t, sim.Provider{Name: "p1", Answer: good.Answer}, sim.Provider{Name: "p2", Answer: good.Answer},
		sim.Provider{Name: "p3", Answer: poor.Answer})
	fixture, err := os.ReadFile(vars["DETOUR_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	url := regexp.MustCompile(`base_url: (\S+)/p1/v1`).FindStringSubmatch(string(fixture))[1]
	head := `# detour.yaml, kept by hand: 手で書いた設定
providers:
  p1: {base_url: ` + url + `/p1/v1, key_env: P1_KEY, pool: free}   # the free tier
  p2: {base_url: ` + url + `/p2/v1, key_env: P2_KEY, pool: prepaid}
  p3: {base_url: ` + url + `/p3/v1, key_env: P1_KEY, pool: payg}
targets:
  p2/m: {family: fam, price: {in: 1, out: 2}}
  p3/m: {family: fam, price: {in: 0.1, out: 0.2}}
routes:
  # the main route: cheapest by the price list first
  default:
    chain:
`
	oldChain := `      - p3/m   # cheapest per token
      # - p4/m (off for now)
      - p2/m
      - p1/m
`
	tail := `    budget: batch   # long jobs

  # a second route, left alone
  other: {chain: [p1/m, p2/m]}   # flow style
# the end
`
	link := vars["DETOUR_CONFIG"]
	real := filepath.Join(filepath.Dir(link), "real.yaml")
	if err := os.WriteFile(real, []byte(head+oldChain+tail), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "r.jsonl")
	args := []string{"eval", "--suite", suitePath, "--reps", "1", "--results", results, "--write-route", "default"}
	code, out, errOut := run(t, vars, "", args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "wrote routes.default.chain in "+link+": [p1/m, p2/m], was [p3/m, p2/m, p1/m]; no longer in it: p3/m") {
		t.Errorf("stderr does not say what was written:\n%s", errOut)
	}
	got, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	if !strings.HasPrefix(text, head) || !strings.HasSuffix(text, tail) {
		t.Fatalf("the lines around the chain changed:\n%s", text)
	}
	newChain := strings.TrimSuffix(strings.TrimPrefix(text, head), tail)
	entry := func(n int, id, pool string) string {
		return fmt.Sprintf(`      - %s  # %d\. detour eval \d{4}-\d\d-\d\d suite sums: accuracy 100%% \(6/6\), reachability 100%%, `+
			`\$[0-9.]+ per correct answer, p50 \d+ ms, pool %s\n`, regexp.QuoteMeta(id), n, pool)
	}
	want := regexp.MustCompile("^" + entry(1, "p1/m", "free") + entry(2, "p2/m", "prepaid") + "$")
	if !want.MatchString(newChain) {
		t.Fatalf("the chain written:\n%s\nwant it to match %s", newChain, want)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link was replaced: %v, %v", st.Mode(), err)
	}
	if st, err := os.Stat(real); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v), want 0640 kept", st.Mode().Perm(), err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(real), ".real.yaml.*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	if code, cout, cerr := run(t, vars, "", "check"); code != 0 || !strings.Contains(cout, "\nno warnings\n") {
		t.Fatalf("check on the written config: exit %d\n%s\n%s", code, cout, cerr)
	}

	// A rerun (every call already in the results file) writes the same bytes.
	if code, out, errOut := run(t, vars, "", args...); code != 0 {
		t.Fatalf("rerun: exit %d\n%s\n%s", code, out, errOut)
	}
	again, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != text {
		t.Fatalf("the rerun wrote other bytes:\n%s\nwas:\n%s", again, text)
	}

	// A new route goes after the last route, before the comment that
	// ends the file; nothing else moves.
	code, out, errOut = run(t, vars, "", "eval", "--suite", suitePath, "--reps", "1", "--results", results,
		"--targets", "p2/m,p1/m", "--write-route", "fresh")
	if code != 0 {
		t.Fatalf("new route: exit %d\n%s\n%s", code, out, errOut)
	}
	fresh, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	before, after, ok := strings.Cut(text, "# the end\n")
	if !ok || !strings.HasPrefix(string(fresh), before+"  fresh:\n    chain:\n      - p1/m  # 1. ") || !strings.HasSuffix(string(fresh), "\n"+after+"# the end\n") {
		t.Fatalf("the new route is not where it belongs, or other lines moved:\n%s", fresh)
	}
	if !strings.Contains(errOut, "[p1/m, p2/m], a new route") {
		t.Errorf("stderr does not say the route is new:\n%s", errOut)
	}
}

// --write-route says what it needs before anything is measured.
func TestEvalCommand_WriteRouteUsage(t *testing.T) {
	srv, _, vars, _ := batchFixture(t)
	noFile := map[string]string{"GROQ_API_KEY": "gsk-test-key-1234"} // presets, no file
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		want string
	}{
		{"no config file", noFile, []string{"eval", "--targets", "groq/llama-3.3-70b-versatile", "--write-route", "default"}, "--write-route needs a config file"},
		{"two routes", vars, []string{"eval", "--route", "default", "--write-route", "other"}, "name two routes"},
		{"a new route and nothing to measure", vars, []string{"eval", "--write-route", "fresh"}, "has no route fresh yet: name the targets"},
		{"with --check", vars, []string{"eval", "--targets", "p1/m", "--check", "--write-route", "default"}, "--check measures nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(t, tc.vars, "", tc.args...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, ExitUsage, tc.want)
			}
		})
	}
	if n := srv.Stats().Total(); n != 0 {
		t.Errorf("%d calls made before the command line was refused", n)
	}
}

// writeRoute on the example config (every section, comments on most
// lines): each write changes the one chain's lines, whatever its style,
// and loads with that chain; a new route removes no line.
func TestWriteRoute_ChangesOnlyTheChainOfTheExampleConfig(t *testing.T) {
	src, err := os.ReadFile("../examples/detour.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		route   string
		chain   []string
		removed []string // the lines of the file that go, trimmed
	}{
		{"default", []string{"deepseek/deepseek-chat", "groq/llama-3.3-70b-versatile"}, []string{"- groq/llama-3.3-70b-versatile",
			"- groq2/llama-3.3-70b-versatile", "- openrouter/meta-llama/llama-3.3-70b-instruct", "- deepseek/deepseek-chat", "- local/qwen2.5:7b"}},
		{"nightly", []string{"local/qwen2.5:7b", "deepseek/deepseek-chat"},
			[]string{"chain: [groq/llama-3.3-70b-versatile, deepseek/deepseek-chat, local/qwen2.5:7b]"}},
		{"fresh", []string{"groq/llama-3.3-70b-versatile", "deepseek/deepseek-chat"}, nil},
	} {
		t.Run(tc.route, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "detour.yaml")
			if err := os.WriteFile(path, src, 0o600); err != nil {
				t.Fatal(err)
			}
			p := eval.Proposal{Route: tc.route}
			for _, id := range tc.chain {
				p.Chain = append(p.Chain, eval.ProposedEntry{Target: id, Figures: "accuracy 90%"})
			}
			var msg strings.Builder
			if err := writeRoute(&msg, path, p, "detour eval today"); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(path, got)
			if err != nil {
				t.Fatal(err)
			}
			if c := cfg.Routes[tc.route].Chain; !slices.Equal(c, tc.chain) {
				t.Fatalf("chain %q, want %q", c, tc.chain)
			}
			// The lines of the old file between the part both files start
			// with and the part both end with are the ones that went.
			a, b := strings.SplitAfter(string(src), "\n"), strings.SplitAfter(string(got), "\n")
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			j := 0
			for j < len(a)-i && j < len(b)-i && a[len(a)-1-j] == b[len(b)-1-j] {
				j++
			}
			var removed []string
			for _, l := range a[i : len(a)-j] {
				removed = append(removed, strings.TrimSpace(l))
			}
			if !slices.Equal(removed, tc.removed) {
				t.Errorf("lines removed %q, want %q; the file now:\n%s", removed, tc.removed, got)
			}
		})
	}
}

// sameButRoute refuses an edit that changed more than the route's chain.
func TestSameButRoute_RefusesAnyOtherChange(t *testing.T) {
	const base = "providers:\n  p1: {base_url: http://127.0.0.1:1/v1, pool: free}\nroutes:\n  a:\n    chain: [p1/x]\n    budget: batch\n  b:\n    chain: [p1/y]\n"
	before, err := config.Parse("c.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, after, want string
	}{
		{"only the chain", strings.Replace(base, "[p1/x]", "[p1/z, p1/x]", 1), ""},
		{"the chain is not the one proposed", strings.Replace(base, "[p1/x]", "[p1/x, p1/z]", 1), "not"},
		{"another route", strings.Replace(strings.Replace(base, "[p1/x]", "[p1/z, p1/x]", 1), "[p1/y]", "[p1/z]", 1), "changed route b"},
		{"the route's budget", strings.Replace(strings.Replace(base, "[p1/x]", "[p1/z, p1/x]", 1), "batch", "interactive", 1), "more of routes.a"},
		{"a provider", strings.Replace(strings.Replace(base, "[p1/x]", "[p1/z, p1/x]", 1), "free", "payg", 1), "Providers"},
		{"a route more", strings.Replace(base, "[p1/x]", "[p1/z, p1/x]", 1) + "  c:\n    chain: [p1/y]\n", "3 routes, not 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after, err := config.Parse("c.yaml", []byte(tc.after))
			if err != nil {
				t.Fatal(err)
			}
			err = sameButRoute(before, after, "a", []string{"p1/z", "p1/x"})
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
