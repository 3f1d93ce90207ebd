package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/evalresults"
	sim "github.com/detourhq/detour/simulate"
)

// gatedRoute is the route "gated" over p1/m, p1/alt and p2/m whose
// eval_gate reads the results file at path (see gatedResults): p1/alt
// measured 20% on suite builtin, below the gate's 80%; p2/m 100%.
func gatedRoute(path string) string {
	return "  gated:\n    chain: [p1/m, p1/alt, p2/m]\n    budget: {base_backoff: 1ms, max_backoff: 5ms}\n" +
		"    eval_gate: {results: " + path + ", suite: builtin, min_accuracy: 0.8}\n"
}

// gatedResults writes the `detour eval` results gatedRoute's gate reads
// and returns the file's path: five answers each of p1/alt (one right)
// and of p2/m (all right).
func gatedResults(t *testing.T) string {
	t.Helper()
	var lines []byte
	for i, r := range []struct {
		target string
		out    evalresults.Outcome
	}{
		{"p1/alt", evalresults.Wrong}, {"p1/alt", evalresults.Wrong}, {"p1/alt", evalresults.Correct}, {"p1/alt", evalresults.Wrong}, {"p1/alt", evalresults.Wrong},
		{"p2/m", evalresults.Correct}, {"p2/m", evalresults.Correct}, {"p2/m", evalresults.Correct}, {"p2/m", evalresults.Correct}, {"p2/m", evalresults.Correct},
	} {
		b, _ := json.Marshal(evalresults.Record{Suite: "builtin", Digest: "d", Target: r.target, Task: "t", Rep: i + 1, Outcome: r.out,
			Time: time.Unix(int64(i), 0)})
		lines = append(append(lines, b...), '\n')
	}
	path := filepath.Join(t.TempDir(), "eval.jsonl")
	if err := os.WriteFile(path, lines, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A request that lists its own models keeps the eval_gate of the route it
// names first: with the head walled, the unapproved p1/alt is skipped
// (skipped_unapproved, never sent to) exactly as on the route alone, and
// the approved p2/m answers.
func TestModels_KeepTheFirstRoutesEvalGate(t *testing.T) {
	f := newFixture(t, setup{routes: gatedRoute(gatedResults(t))})
	enqueue(f, "p1", "m", sim.Fault{Kind: sim.DailyQuota})
	resp, body := f.post("/v1/chat/completions", `{"model":"gated","models":["p3/other"],"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if n := f.sim.Stats().Requests("p1", "alt"); n != 0 {
		t.Fatalf("the unapproved p1/alt got %d request(s): the models route lost the gate", n)
	}
	var rows []string
	for _, r := range f.ledger.Records() {
		rows = append(rows, r.Provider+"/"+r.Model+":"+r.Status)
	}
	if want := "p1/m:http_429 p1/alt:skipped_unapproved p2/m:ok"; strings.Join(rows, " ") != want {
		t.Fatalf("ledger %v, want %s", rows, want)
	}
}
