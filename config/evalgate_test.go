package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/evalresults"
)

// A route's eval_gate reads the results file beside the config when the
// config is built, and approves the fallback targets that reached the
// accuracy on the suite's latest version.
func TestEvalGate_ApprovesFromTheResultsFile(t *testing.T) {
	dir := t.TempDir()
	var lines []byte
	add := func(target, digest string, correct, wrong int, at time.Time) {
		for i := range correct + wrong {
			o := evalresults.Correct
			if i >= correct {
				o = evalresults.Wrong
			}
			b, _ := json.Marshal(evalresults.Record{Suite: "builtin", Digest: digest, Target: target, Task: "t", Rep: i + 1, Outcome: o, Time: at})
			lines = append(append(lines, b...), '\n')
		}
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	add("b/m", "old", 10, 0, t0)               // good on an older suite version: does not count
	add("b/m", "new", 2, 8, t0.Add(time.Hour)) // 20% on the latest
	add("c/m", "new", 9, 1, t0.Add(time.Hour)) // 90%
	add("d/m", "new", 2, 0, t0.Add(time.Hour)) // too few answers
	if err := os.WriteFile(filepath.Join(dir, "eval.jsonl"), lines, 0o600); err != nil {
		t.Fatal(err)
	}
	src := `providers:
  a: {base_url: https://a.example/v1}
  b: {base_url: https://b.example/v1}
  c: {base_url: https://c.example/v1}
  d: {base_url: https://d.example/v1}
  e: {base_url: https://e.example/v1}
routes:
  default:
    chain: [a/m, b/m, c/m, d/m, e/m]
    eval_gate: {results: eval.jsonl, suite: builtin, min_accuracy: 0.8}
`
	path := filepath.Join(dir, "detour.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Lookup("default", BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Approve == nil {
		t.Fatal("the route has no gate")
	}
	want := map[string]string{"b/m": "accuracy 20% (2/10)", "c/m": "", "d/m": "only 2 answered", "e/m": "no eval result"}
	for i := 1; i < len(r.Chain); i++ {
		tg := &r.Chain[i]
		ok, why := r.Approve(tg)
		w := want[tg.ID()]
		if ok != (w == "") || !strings.Contains(why, w) {
			t.Errorf("%s: approved %v (%q), want %q", tg.ID(), ok, why, w)
		}
	}
}

// A gate whose results file cannot be read fails the config, naming the
// field and how to make the file; a bad gate field is refused with its line.
func TestEvalGate_Errors(t *testing.T) {
	c := mustParse(t, "providers:\n  a: {base_url: https://a.example/v1}\nroutes:\n  default:\n    chain: [a/m]\n    eval_gate: {results: /nonexistent/eval.jsonl, min_accuracy: 0.8}\n")
	_, err := c.Lookup("default", BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), "routes.default.eval_gate.results") || !strings.Contains(err.Error(), "detour eval --route default") {
		t.Fatalf("err = %v", err)
	}
	for _, tc := range []struct{ name, gate, want string }{
		{"accuracy above 1", "{results: e.jsonl, min_accuracy: 80}", "from 0 to 1"},
		{"no results", "{min_accuracy: 0.8}", "needs results"},
		{"unknown field", "{results: e.jsonl, min_acc: 0.8}", "min_acc"},
		{"zero answers", "{results: e.jsonl, min_answers: 0}", "1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("detour.yaml", []byte("providers:\n  a: {base_url: https://a.example/v1}\nroutes:\n  default:\n    chain: [a/m]\n    eval_gate: "+tc.gate+"\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "detour.yaml:6") {
				t.Fatalf("err = %v, want %q at line 6", err, tc.want)
			}
		})
	}
}
