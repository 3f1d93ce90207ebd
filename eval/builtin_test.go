package eval_test

import (
	"context"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/eval"
	"github.com/detourhq/detour/eval/suites"
	"github.com/detourhq/detour/evalresults"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// The built-in suite discriminates: three scripted targets, one of each
// dialect, strong everywhere, strong only at arithmetic, tax and
// constraints, and weak but for constraints, come out in that order, each
// category's score near what was scripted, and no tie. Their right and
// wrong answers (the suite's own known ones, in English and Japanese) go
// through each wire format and are graded as such.
func TestBuiltinSuite_SeparatesTargetsOfKnownSkill(t *testing.T) {
	suite, err := suites.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	category := map[string]string{}
	pairs := map[string]sim.Pair{}
	for _, task := range suite.Tasks {
		category[task.Prompt] = task.Category
		pairs[task.Prompt] = sim.Pair{Right: task.Good[0], Wrong: task.Bad[0]}
	}
	skills := map[string]map[string]float64{ // provider -> category -> accuracy
		"strong": {"*": 0.95},
		"mid":    {"arithmetic": 0.95, "tax": 0.95, "constraints": 0.95, "*": 0.3},
		"weak":   {"constraints": 0.9, "*": 0.2},
	}
	acc := func(p, cat string) float64 {
		if a, ok := skills[p][cat]; ok {
			return a
		}
		return skills[p]["*"]
	}
	dialects := map[string]sim.Dialect{"strong": sim.DialectAnthropic, "mid": sim.DialectGemini, "weak": sim.DialectOpenAI}
	names := []string{"strong", "mid", "weak"}
	var provs []sim.Provider
	for i, name := range names {
		sk := &sim.Skill{Answers: pairs, Seed: uint64(i + 11), AccuracyOf: func(prompt string) float64 { return acc(name, category[prompt]) }}
		provs = append(provs, sim.Provider{Name: name, Dialect: dialects[name], Answer: sk.Answer})
	}
	srv, err := sim.Start(provs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var routes []*router.Route
	var targets []router.Target
	for _, name := range names {
		d := config.Dialect(dialects[name])
		if d == "" {
			d = config.OpenAI
		}
		tg := router.Target{Provider: name, Model: "m", Dialect: string(d),
			Client: config.NewClient(d, srv.BaseURL(name), "k", &http.Client{}, nil)}
		routes = append(routes, &router.Route{Name: tg.ID(), Chain: []router.Target{tg}})
		targets = append(targets, tg)
	}
	out, err := evalresults.Open(filepath.Join(t.TempDir(), "eval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	const reps = 6
	run := &eval.Runner{Router: &router.Router{Ledger: &ledger.Memory{}, Health: health.New(health.Settings{})},
		Suite: suite, Targets: routes, Reps: reps, Concurrency: 8}
	if _, err := run.Run(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	ids := suite.IDs()
	rep := eval.Summarize(suite.Name, suite.Digest(), ids, targets, out.Snapshot())
	for i, tr := range rep.Targets {
		if tr.Reachability != 1 || tr.Truncated != 0 {
			t.Errorf("%s: reachability %.2f, %d truncated; want every call answered whole", tr.Target, tr.Reachability, tr.Truncated)
		}
		if i > 0 && rep.Targets[i-1].Accuracy-tr.Accuracy < 0.15 {
			t.Errorf("%s (%.2f) is not well below %s (%.2f)", tr.Target, tr.Accuracy, rep.Targets[i-1].Target, rep.Targets[i-1].Accuracy)
		}
		// Each category's score is near the scripted skill.
		name := strings.TrimSuffix(tr.Target, "/m")
		byCat := map[string][2]int{}
		for _, task := range suite.Tasks {
			s := tr.Tasks[task.ID]
			c := byCat[task.Category]
			byCat[task.Category] = [2]int{c[0] + s.Correct, c[1] + s.Calls}
		}
		for cat, c := range byCat {
			got, want := float64(c[0])/float64(c[1]), acc(name, cat)
			if math.Abs(got-want) > 0.1 {
				t.Errorf("%s on %s: %.2f correct (%d/%d), scripted %.2f", name, cat, got, c[0], c[1], want)
			}
		}
	}
	for _, w := range rep.Warnings {
		if strings.Contains(w, "tie on every task") {
			t.Errorf("warning %q: the suite failed to separate them", w)
		}
	}
}
