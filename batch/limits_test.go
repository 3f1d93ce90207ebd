package batch

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

func TestLimits_AIMD(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	l := NewLimits(map[string]float64{"groq": 40}, true, clk)
	groq := &router.Target{Provider: "groq", Model: "m"}
	rateLimit := router.Attempt{Target: groq, Status: "http_429", Kind: classify.Transient, Failure: &classify.Failure{}}
	answer := router.Attempt{Target: groq, Status: "ok"}
	steps := []struct {
		name    string
		advance time.Duration
		a       router.Attempt
		want    float64
	}{
		{"a 429 halves", time.Second, rateLimit, 20},
		{"a second 429 within the second is the same burst", 100 * time.Millisecond, rateLimit, 20},
		{"a 429 a second later halves again", time.Second, rateLimit, 10},
		{"an answer adds one a minute", 0, answer, 11},
		{"a wall changes nothing: the router parks", time.Second, router.Attempt{Target: groq, Status: "http_429", Kind: classify.Wall, Failure: &classify.Failure{}}, 11},
		{"a skip changes nothing", 0, router.Attempt{Target: groq, Status: "skipped_open", Action: "skip"}, 11},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		l.Observe(s.a)
		if got := l.RPM("groq"); got != s.want {
			t.Fatalf("%s: %v a minute, want %v", s.name, got, s.want)
		}
	}
	for range 100 {
		l.Observe(answer)
	}
	if got := l.RPM("groq"); got != 40 {
		t.Fatalf("after 100 answers: %v a minute, want the ceiling 40", got)
	}
	for range 20 {
		clk.Advance(time.Second)
		l.Observe(rateLimit)
	}
	if got := l.RPM("groq"); got != MinRPM {
		t.Fatalf("after 20 halvings: %v a minute, want the floor %v", got, MinRPM)
	}
}

func TestLimits_UnpacedProviderIsPacedAtHalfItsRateByA429(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	l := NewLimits(nil, true, clk)
	if !math.IsInf(l.RPM("p"), 1) || l.Paced() {
		t.Fatal("a provider with no --rpm starts unpaced")
	}
	for range 60 { // 60 sends over 30 s: 120 a minute
		l.sent("p")
		clk.Advance(500 * time.Millisecond)
	}
	l.Observe(router.Attempt{Target: &router.Target{Provider: "p"}, Status: "http_429", Kind: classify.Transient})
	if got := l.RPM("p"); math.Abs(got-61) > 1.5 || !l.Paced() {
		t.Fatalf("%v a minute after a 429 at 120 a minute, want about 60", got)
	}
	fixed := NewLimits(nil, false, nil)
	fixed.Observe(router.Attempt{Target: &router.Target{Provider: "p"}, Status: "http_429", Kind: classify.Transient})
	if !math.IsInf(fixed.RPM("p"), 1) {
		t.Fatal("with adaptive off, a 429 paces nothing")
	}
}

// The pace holds across a run: 6 items at 120 a minute take 2.5 s or
// more (burst 1), and the wrapped client keeps what the router reads.
func TestRun_RPMPacesTheSends(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 3 s")
	}
	g := newRig(t, sim.Provider{Name: "p1"})
	in, out := g.items(6), filepath.Join(g.dir, "out.jsonl")
	start := time.Now()
	sum, err := g.run(func(r *Runner) {
		r.Concurrency = 6
		r.Limits = NewLimits(map[string]float64{"p1": 120}, true, nil)
	}, in, out)
	took := time.Since(start)
	if err != nil || sum.Answered != 6 {
		t.Fatalf("%v, %+v", err, sum)
	}
	if took < 2400*time.Millisecond || took > 6*time.Second {
		t.Fatalf("6 items at 120 a minute took %s, want about 2.5 s", took)
	}
	// A turn taken before the router was called is used by the first send,
	// which waits no more; a send without one waits its turn.
	rt, _ := g.route("default")
	l := NewLimits(map[string]float64{"p1": 1}, true, nil)
	l.Wrap(rt)
	if _, ok := rt.Chain[0].Client.(llm.Carrier); !ok {
		t.Fatal("the paced client hides the Carrier the router reads")
	}
	if err := l.Wait(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := rt.Chain[0].Client.Complete(withTicket(ctx, "p1"), req); err != nil {
		t.Fatalf("with its turn: %v", err)
	}
	if _, err := rt.Chain[0].Client.Complete(ctx, req); err == nil {
		t.Fatal("a send without a turn did not wait for it (1 a minute)")
	}
}

// A paced provider gets its share; the items past it flow down the chain,
// each hold-back a recorded skip.
func TestRun_PacedHeadTakesItsShareAndTheRestFlowsOn(t *testing.T) {
	g := newRig(t)
	in, out := g.items(10), filepath.Join(g.dir, "out.jsonl")
	book := &ledger.Memory{}
	sum, err := g.run(func(r *Runner) {
		r.Concurrency, r.Patience = 1, 100*time.Millisecond
		r.Limits = NewLimits(map[string]float64{"p1": 6}, true, nil) // one every 10 s
		r.Router.Ledger = book
	}, in, out)
	if err != nil || sum.Answered != 10 {
		t.Fatalf("%v, %+v", err, sum)
	}
	st := g.srv.Stats()
	if p1, p2 := st.Requests("p1", ""), st.Requests("p2", ""); p1 != 1 || p2 != 9 {
		t.Fatalf("p1 got %d, p2 %d; want 1 (its pace) and 9", p1, p2)
	}
	held := 0
	for _, rec := range book.Records() {
		if rec.Status == ledger.StatusSkippedPaced && rec.Provider == "p1" && strings.Contains(rec.Reason, "detour batch's pace for p1") {
			held++
		}
	}
	if held != 9 {
		t.Fatalf("%d recorded hold-backs of p1, want 9", held)
	}
	if got, _ := results(t, out); got["a5"]["degraded"] != false || got["a5"]["target"] != "p2/m" {
		t.Fatalf("a5 = %v", got["a5"])
	}
}
