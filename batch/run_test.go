package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// rig is a simulator of providers p1 and p2 (in memory) and a route
// "default" over p1/m then p2/m, for a Runner.
type rig struct {
	t   *testing.T
	srv *sim.Server
	hb  *health.Breaker
	dir string
}

func newRig(t *testing.T, providers ...sim.Provider) *rig {
	t.Helper()
	if len(providers) == 0 {
		providers = []sim.Provider{{Name: "p1"}, {Name: "p2"}}
	}
	srv, err := sim.NewServer(providers...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	st := sqlitestore.Open(filepath.Join(dir, "health.db"), sqlitestore.Options{})
	t.Cleanup(func() { st.Close() })
	return &rig{t: t, srv: srv, hb: health.NewWithStore(health.Settings{}, st), dir: dir}
}

// route returns a fresh route "default" (Run changes the routes it gets).
func (g *rig) route(name string) (*router.Route, error) {
	if name != "default" {
		return nil, fmt.Errorf("unknown route %q", name)
	}
	hc := &http.Client{Transport: g.srv.Transport()}
	rt := &router.Route{Name: "default"}
	for _, p := range g.srv.Providers() {
		rt.Chain = append(rt.Chain, router.Target{Provider: p, Model: "m", Dialect: "openai", Family: "fam",
			Client: config.NewClient(config.OpenAI, g.srv.BaseURL(p), "key", hc, nil)})
	}
	return rt, nil
}

// runner returns a Runner over the rig, its scope made for out.
func (g *rig) runner(in *Input, out string) *Runner {
	return &Runner{Router: &router.Router{Health: g.hb}, Route: g.route, DefaultRoute: "default",
		Scope: Key(in.Digest, out, "test")}
}

// items writes n native items a0..a(n-1) plus extra lines to in.jsonl.
func (g *rig) items(n int, extra ...string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"a%d","prompt":"item a%d"}`+"\n", i, i)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	path := filepath.Join(g.dir, "in.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		g.t.Fatal(err)
	}
	return path
}

// run runs in into out once.
func (g *rig) run(r func(*Runner), inPath, outPath string) (Summary, error) {
	g.t.Helper()
	in, err := OpenInput(inPath)
	if err != nil {
		g.t.Fatal(err)
	}
	defer in.Close()
	out, err := OpenOutput(outPath, in.Format)
	if err != nil {
		g.t.Fatal(err)
	}
	defer out.Close()
	rn := g.runner(in, outPath)
	if r != nil {
		r(rn)
	}
	return rn.Run(context.Background(), in, out)
}

// results reads a native results file by id (the last line of each).
func results(t *testing.T, path string) (map[string]map[string]any, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	lines := 0
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines++
		id, _ := m["id"].(string)
		if line, ok := m["line"].(float64); ok {
			id = fmt.Sprintf("line %d", int(line))
		}
		out[id] = m
	}
	return out, lines
}

func TestRun_AnswersEveryItemOnceAndARerunSendsNothing(t *testing.T) {
	g := newRig(t)
	g.srv.Enqueue("p1", "m", sim.Fault{Kind: sim.NoCredits}) // one failover
	in, out := g.items(30), filepath.Join(g.dir, "out.jsonl")
	sum, err := g.run(func(r *Runner) { r.Concurrency = 5 }, in, out)
	if err != nil {
		t.Fatal(err)
	}
	got, lines := results(t, out)
	if lines != 30 || len(got) != 30 || sum.Answered != 30 || sum.Done != 30 || sum.Failovers != 1 {
		t.Fatalf("%d lines, %d ids, summary %+v; want 30 answers, one failover", lines, len(got), sum)
	}
	a := got["a7"]
	if a["status"] != "ok" || !strings.HasPrefix(a["answer"].(string), "Hello from p") || a["attempts"] == nil ||
		a["request_id"] == "" || a["degraded"] != false {
		t.Fatalf("a7 = %v", a)
	}
	if sends := g.srv.Stats().Total(); sends != 31 || sum.Sends != 31 {
		t.Fatalf("provider saw %d requests, summary %d sends; want 31 (30 + the 402)", sends, sum.Sends)
	}
	sum, err = g.run(nil, in, out)
	if err != nil || sum.Skipped != 30 || sum.Sends != 0 || g.srv.Stats().Total() != 31 {
		t.Fatalf("rerun: %v, %+v, %d requests; want every item skipped, nothing sent", err, sum, g.srv.Stats().Total())
	}
	if _, lines := results(t, out); lines != 30 {
		t.Fatalf("rerun wrote %d lines in all, want 30", lines)
	}
}

// An answer that came before a crash but never reached the results file
// is given again from the idempotency record, with no send.
func TestRun_AnswerKeptBeforeACrashIsGivenAgainWithoutASend(t *testing.T) {
	g := newRig(t)
	in, out := g.items(10), filepath.Join(g.dir, "out.jsonl")
	if _, err := g.run(nil, in, out); err != nil {
		t.Fatal(err)
	}
	// The crash: the last 4 lines never reached the disk.
	b, _ := os.ReadFile(out)
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(out, []byte(strings.Join(lines[:6], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	before := g.srv.Stats().Total()
	sum, err := g.run(nil, in, out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Answered != 4 || sum.Replayed != 4 || sum.Sends != 0 || g.srv.Stats().Total() != before {
		t.Fatalf("summary %+v, %d new requests; want 4 answers replayed with no send", sum, g.srv.Stats().Total()-before)
	}
	got, n := results(t, out)
	if n != 10 || len(got) != 10 {
		t.Fatalf("%d lines, %d ids; want each id once", n, len(got))
	}
}

// A claim left in flight by a run that died is released: the rerun does
// not wait for it to expire.
func TestRun_ReleasesAClaimADeadRunLeft(t *testing.T) {
	g := newRig(t)
	in, out := g.items(1), filepath.Join(g.dir, "out.jsonl")
	input, _ := OpenInput(in)
	input.Close()
	key := Key(input.Digest, out, "test") + "/a0"
	// What a run killed mid-request leaves: the router's claim of the key,
	// in flight. Here a request that hangs holds it while the run starts.
	it, _, _ := ParseLine([]byte(`{"id":"a0","prompt":"item a0"}`), 1, Native)
	g.srv.Enqueue("p1", "m", sim.Fault{Kind: sim.Hang})
	rt, _ := g.route("default")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go (&router.Router{Health: g.hb}).Complete(ctx, rt, it.Request, router.Options{IdempotencyKey: key}) //nolint:errcheck // cancelled
	for g.srv.Stats().Total() == 0 {                                                                     // the request is out, the hang served
		time.Sleep(time.Millisecond)
	}
	before := g.srv.Stats().Total()
	done := make(chan error, 1)
	go func() { _, err := g.run(nil, in, out); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run waits on the dead run's claim")
	}
	if got, _ := results(t, out); got["a0"]["status"] != "ok" || g.srv.Stats().Total() != before+1 {
		t.Fatalf("a0 = %v, %d sends; want an answer from one send", got["a0"], g.srv.Stats().Total()-before)
	}
}

// release finds the answer the router kept under a key.
func TestRelease_FindsTheRoutersKeptAnswer(t *testing.T) {
	g := newRig(t)
	rt, _ := g.route("default")
	r := &router.Router{Health: g.hb}
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}
	if _, err := r.Complete(context.Background(), rt, req, router.Options{IdempotencyKey: "scope/id"}); err != nil {
		t.Fatal(err)
	}
	rn := &Runner{Router: r}
	if !rn.release(rt, "scope/id") {
		t.Fatal("release did not find the answer the router kept under the key")
	}
}

func TestRun_BadLinesAreReportedAndWrittenAndNeverStopTheRun(t *testing.T) {
	g := newRig(t)
	in := g.items(3, `{"id":"d","prompt":" "}`, `{"id":"b","prompt":"x","route":"nope"}`, `{oops`, `{"id":"c"}`)
	out := filepath.Join(g.dir, "out.jsonl")
	var told []string
	sum, err := g.run(func(r *Runner) { r.OnInvalid = func(e *InputError) { told = append(told, e.Error()) } }, in, out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`line 4: prompt is empty`, `line 5: route "nope": unknown route "nope"`,
		"line 6: not a JSON object", "line 7: no request"}
	if len(told) != len(want) {
		t.Fatalf("told %q", told)
	}
	for i := range want {
		if !strings.HasPrefix(told[i], want[i]) {
			t.Errorf("report %d = %q, want %q...", i, told[i], want[i])
		}
	}
	got, lines := results(t, out)
	if sum.Answered != 3 || sum.Invalid != 4 || lines != 7 {
		t.Fatalf("summary %+v, %d lines", sum, lines)
	}
	if e := got["line 4"]; e["status"] != "error" || e["id"] != "d" || e["error"].(map[string]any)["kind"] != KindInvalidInput {
		t.Fatalf("line 4's result = %v", e)
	}
	// A rerun writes none of them again.
	sum, err = g.run(nil, in, out)
	if _, n := results(t, out); err != nil || n != 7 || sum.Skipped != 7 {
		t.Fatalf("rerun: %v, %d lines, %+v", err, n, sum)
	}
}

// Items blocked only by walls are written pending with the earliest reset;
// a rerun sends them again; with Wait they wait for the reset instead.
func TestRun_WalledItemsArePendingThenRunAgain(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	g := newRig(t)
	g.srv.Clock = clk
	g.srv.Enqueue("p1", "m", sim.Fault{Kind: sim.DailyQuota, RetryAfter: 10 * time.Minute})
	g.srv.Enqueue("p2", "m", sim.Fault{Kind: sim.InsufficientQuota})
	in, out := g.items(3), filepath.Join(g.dir, "out.jsonl")
	withClock := func(r *Runner) { r.Clock, r.Router.Clock, r.Concurrency = clk, clk, 1 }
	sum, err := g.run(withClock, in, out)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := results(t, out)
	if sum.Pending != 3 || sum.RetryAt.IsZero() || got["a2"]["status"] != "pending" || got["a2"]["retry_at"] == nil {
		t.Fatalf("summary %+v, a2 %v; want 3 pending with a reset", sum, got["a2"])
	}
	if sent := g.srv.Stats().Total(); sent != 2 {
		t.Fatalf("%d sends, want 2: the walls, then skips with no send", sent)
	}
	// Past the reset, a rerun answers them, one line each.
	clk.Advance(sum.RetryAt.Sub(clk.Now()) + time.Hour*24*31)
	sum, err = g.run(withClock, in, out)
	got, lines := results(t, out)
	if err != nil || sum.Answered != 3 || lines != 3 || got["a0"]["status"] != "ok" {
		t.Fatalf("rerun: %v, %+v, %d lines, a0 %v", err, sum, lines, got["a0"])
	}

	// With Wait, the items wait for the reset within MaxWait.
	g.srv.Enqueue("p1", "m", sim.Fault{Kind: sim.DailyQuota, RetryAfter: 10 * time.Minute})
	g.srv.Enqueue("p2", "m", sim.Fault{Kind: sim.DailyQuota, RetryAfter: 20 * time.Minute})
	out2 := filepath.Join(g.dir, "out2.jsonl")
	sum, err = g.run(func(r *Runner) { withClock(r); r.Wait, r.MaxWait = true, time.Hour }, in, out2)
	if err != nil || sum.Answered != 3 || sum.Pending != 0 {
		t.Fatalf("with Wait: %v, %+v; want every item answered after the reset", err, sum)
	}
	if got, _ := results(t, out2); got["a0"]["target"] != "p1/m" {
		t.Fatalf("a0 = %v, want it answered by p1/m once its park ended", got["a0"])
	}
}

func TestRun_OpenAIFileGetsOpenAILines(t *testing.T) {
	g := newRig(t)
	path := filepath.Join(g.dir, "in.jsonl")
	body := `{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"default","messages":[{"role":"user","content":"hi"}]}}
{"custom_id":"r2","method":"POST","url":"/v1/chat/completions","body":{"model":"unknown-model","messages":[{"role":"user","content":"hi"}]}}
`
	os.WriteFile(path, []byte(body), 0o600)
	out := filepath.Join(g.dir, "out.jsonl")
	sum, err := g.run(nil, path, out)
	if err != nil || sum.Answered != 1 || sum.Invalid != 1 {
		t.Fatalf("%v, %+v", err, sum)
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), `"custom_id":"r1","response":{"status_code":200`) ||
		!strings.Contains(string(b), `"custom_id":"r2","response":null,"error":{"code":"invalid_input"`) {
		t.Fatalf("results:\n%s", b)
	}
}

func TestRun_CancelWritesNothingInFlight(t *testing.T) {
	g := newRig(t, sim.Provider{Name: "p1", Script: []sim.Fault{{Kind: sim.Hang}, {Kind: sim.Hang}}})
	in, out := g.items(2), filepath.Join(g.dir, "out.jsonl")
	input, _ := OpenInput(in)
	defer input.Close()
	output, _ := OpenOutput(out, input.Format)
	defer output.Close()
	ctx, cancel := context.WithCancel(context.Background())
	rn := g.runner(input, out)
	rn.OnProgress = func(p Progress) {
		if p.InFlight == 2 {
			cancel()
		}
	}
	rn.ProgressEvery = 10 * time.Millisecond
	sum, err := rn.Run(ctx, input, output)
	if err != context.Canceled || sum.Canceled != 2 || sum.Done != 0 {
		t.Fatalf("%v, %+v; want both cancelled and nothing done", err, sum)
	}
	if b, _ := os.ReadFile(out); len(b) != 0 {
		t.Fatalf("results file = %q, want nothing written for cancelled items", b)
	}
}

// An item that says it has side effects is never sent again once its
// outcome is unknown (the connection reset after the send); the same item
// without the field is retried and answered, as before.
func TestRun_NonIdempotentItemIsNotSentAgainAfterAReset(t *testing.T) {
	for _, tt := range []struct {
		name, field string
		sends       int
		status      string
	}{
		{"said to have side effects", `,"non_idempotent":true`, 1, "error"},
		{"said nothing", ``, 2, "ok"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newRig(t)
			g.srv.Enqueue("p1", "m", sim.Fault{Kind: sim.Reset})
			in, out := g.items(0, `{"id":"book","prompt":"book the room"`+tt.field+`}`), filepath.Join(g.dir, "out.jsonl")
			if _, err := g.run(nil, in, out); err != nil {
				t.Fatal(err)
			}
			got, _ := results(t, out)
			if n := g.srv.Stats().Total(); n != tt.sends || got["book"]["status"] != tt.status {
				t.Fatalf("%d sends, result %v; want %d sends and %s", n, got["book"], tt.sends, tt.status)
			}
			if tt.status == "error" && !strings.Contains(fmt.Sprint(got["book"]["error"]), "not idempotent") {
				t.Errorf("error = %v, want it to say the request is not idempotent", got["book"]["error"])
			}
		})
	}
}
