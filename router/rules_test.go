package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// Rule 2: a failover on the first target and success on the second records
// failover: true.
func TestRouter_FailoverIsRecorded(t *testing.T) {
	h, route := newHarness(t, spec{provider: "alpha", model: "m", family: "f"}, spec{provider: "beta", model: "m", family: "f"})
	h.script("alpha", "m", f(sim.NoCredits))
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs := h.ledger.Records()
	if len(recs) != 2 || recs[0].Failover || !recs[1].Failover || recs[1].Hop != 1 {
		t.Fatalf("records = %+v, want first failover=false hop 0, second failover=true hop 1", recs)
	}
	if res.Degraded {
		t.Error("same family answered: not degraded")
	}
}

// Rule 2, its other half: a retry of the first target is not a failover.
func TestRouter_RetryIsNotAFailover(t *testing.T) {
	h, route := newHarness(t, spec{provider: "alpha", model: "m"}, spec{provider: "beta", model: "m"})
	h.script("alpha", "m", f(sim.RateLimit), f(sim.OK))
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil || res.Target.Provider != "alpha" {
		t.Fatalf("res %v, err %v: want alpha's answer after one retry", res, err)
	}
	recs := h.ledger.Records()
	if len(recs) != 2 || recs[0].Failover || recs[1].Failover {
		t.Fatalf("records = %+v, want two records of alpha, neither a failover", recs)
	}
}

// Rule 3: three failures then success on the fourth gives three hop events,
// each naming the target that failed and its own one-line reason.
func TestRouter_ThreeFailuresThenSuccess(t *testing.T) {
	h, route := newHarness(t,
		spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"},
		spec{provider: "p3", model: "m"}, spec{provider: "p4", model: "m"})
	h.script("p1", "m", f(sim.NoCredits))
	h.script("p2", "m", f(sim.DailyQuota))
	h.script("p3", "m", f(sim.Unauthorized))
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.Provider != "p4" {
		t.Fatalf("answered by %s, want p4", res.Target.ID())
	}
	if len(h.hops) != 3 {
		t.Fatalf("got %d hops, want 3: %+v", len(h.hops), h.hops)
	}
	want := []struct{ from, to, reasonHas string }{
		{"p1/m", "p2/m", "402"}, {"p2/m", "p3/m", "tokens per day"}, {"p3/m", "p4/m", "401"},
	}
	for i, w := range want {
		hp := h.hops[i]
		if hp.From != w.from || hp.To != w.to || !strings.Contains(hp.Reason, w.reasonHas) {
			t.Errorf("hop %d = %+v, want from %s to %s with reason containing %q", i, hp, w.from, w.to, w.reasonHas)
		}
		if n := len([]rune(hp.Reason)); n == 0 || n > 140 || strings.Contains(hp.Reason, "\n") {
			t.Errorf("hop %d reason is not one line of at most 140 characters: %q", i, hp.Reason)
		}
	}
}

// Rule 5: all candidates fail; the error lists every candidate's reason in
// order, skips included.
func TestRouter_AllFailListsEveryReasonInOrder(t *testing.T) {
	h, route := newHarness(t,
		spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m", noKey: true}, spec{provider: "p3", model: "m"})
	h.script("p1", "m", f(sim.NoCredits))
	h.script("p3", "m", f(sim.InsufficientQuota))
	_, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	var re *router.Error
	if !errors.As(err, &re) || !errors.Is(err, router.ErrAllFailed) {
		t.Fatalf("err = %v, want *router.Error wrapping ErrAllFailed", err)
	}
	var got []string
	for _, c := range re.Candidates {
		got = append(got, c.Target+" "+c.Status)
	}
	want := []string{"p1/m http_402", "p2/m skipped_no_key", "p3/m http_429"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("candidates = %v, want %v", got, want)
	}
	msg := err.Error()
	i1, i2, i3 := strings.Index(msg, "p1/m"), strings.Index(msg, "TEST_p2_KEY"), strings.Index(msg, "p3/m")
	if i1 < 0 || i2 < i1 || i3 < i2 {
		t.Fatalf("error does not list the reasons in order:\n%s", msg)
	}
}

// Rule 6 (library side): NoFallback never swaps.
func TestRouter_NoFallbackNeverSwaps(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	h.script("p1", "m", f(sim.NoCredits))
	_, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{NoFallback: true})
	if err == nil {
		t.Fatal("want an error: the only allowed target failed")
	}
	if n := h.srv.Stats().Requests("p2", ""); n != 0 {
		t.Fatalf("p2 got %d requests under NoFallback", n)
	}
}

// Start picks the first target and wraps round the chain.
func TestRouter_StartWrapsRound(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"}, spec{provider: "p3", model: "m"})
	h.script("p2", "m", f(sim.NoCredits))
	h.script("p3", "m", f(sim.NoCredits))
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{Start: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.Provider != "p1" {
		t.Fatalf("answered by %s, want p1 after wrapping", res.Target.ID())
	}
	if _, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{Start: "nope"}); err == nil {
		t.Fatal("unknown start: want an error")
	}
}

// Rule 7: every attempt is recorded before the next one starts, and no
// prompt or response text is recorded.
func TestRouter_RecordsEachAttemptBeforeTheNext(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"}, spec{provider: "p3", model: "m"})
	h.script("p1", "m", rateLimit(time.Second), f(sim.ServerError))
	h.script("p2", "m", f(sim.NoCredits))
	var sends int
	check := &checkingSink{fn: func(r ledger.Record) {
		if r.Action != "skip" {
			sends++
		}
		// When the k-th send is recorded the providers have seen exactly k.
		if got := h.srv.Stats().Total(); got != sends {
			t.Errorf("record %d (%s %s) written when providers had %d requests", sends, r.Provider, r.Status, got)
		}
	}}
	h.router.Ledger = ledger.Multi(h.ledger, check)
	const secret = "the-secret-prompt-text-42"
	res, err := h.router.Complete(context.Background(), route, prompt(secret), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sends != 4 {
		t.Fatalf("recorded %d sends, want 4", sends)
	}
	b, _ := json.Marshal(h.ledger.Records())
	if strings.Contains(string(b), secret) || strings.Contains(string(b), res.Response.Message.Content) {
		t.Fatalf("ledger holds prompt or response text: %s", b)
	}
}

type checkingSink struct{ fn func(ledger.Record) }

func (c *checkingSink) Write(r ledger.Record) error { c.fn(r); return nil }
func (c *checkingSink) Close() error                { return nil }

// Rule 9: upstream sends per request never exceed the budget, whatever the
// failure mix.
func TestRouter_SendsNeverExceedBudget(t *testing.T) {
	kinds := []sim.Kind{sim.RateLimit, sim.DailyQuota, sim.NoCredits, sim.Unavailable, sim.ServerError, sim.Reset, sim.OK, sim.Unauthorized}
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		chain := []spec{{provider: "p1", model: "m"}, {provider: "p2", model: "m"}, {provider: "p3", model: "m"}, {provider: "p4", model: "m"}}
		h, route := newHarness(t, chain...)
		route.Budget = policy.Budget{MaxAttempts: 1 + rng.IntN(6), MaxPerTarget: 1 + rng.IntN(3)}
		for _, s := range chain {
			var fs []sim.Fault
			for range 4 {
				k := kinds[rng.IntN(len(kinds))]
				fs = append(fs, sim.Fault{Kind: k, RetryAfter: time.Duration(rng.IntN(3)) * time.Second})
			}
			h.script(s.provider, s.model, fs...)
		}
		_, _ = h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
		b := route.Budget.WithDefaults()
		if got := h.srv.Stats().Total(); got > b.MaxAttempts {
			t.Fatalf("seed %d: %d sends, budget %d", seed, got, b.MaxAttempts)
		}
		perTarget := map[string]int{}
		for _, r := range h.srv.Stats().Records {
			perTarget[r.Provider]++
		}
		for p, n := range perTarget {
			if n > b.MaxPerTarget {
				t.Fatalf("seed %d: %d sends to %s, budget %d per target", seed, n, p, b.MaxPerTarget)
			}
		}
		if took := h.clk.Now().Sub(epoch); took > b.Deadline {
			t.Fatalf("seed %d: took %s of fake time, deadline %s", seed, took, b.Deadline)
		}
	}
}

// Rule 10: a parked target gets no traffic until its time is up, then exactly
// one probe, and success closes it.
func TestRouter_ParkedTargetGetsNoTrafficThenOneProbe(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	h.script("p1", "m", f(sim.DailyQuota)) // resets in 433 s
	ctx := context.Background()
	for i := range 5 {
		if _, err := h.router.Complete(ctx, route, prompt("x"), router.Options{}); err != nil {
			t.Fatal(err)
		}
		h.clk.Advance(time.Minute)
		if i == 0 {
			continue
		}
		if n := h.srv.Stats().Requests("p1", ""); n != 1 {
			t.Fatalf("request %d: parked p1 received %d requests, want only the first", i, n)
		}
	}
	recs := h.ledger.Records()
	if recs[2].Status != ledger.StatusSkippedParked {
		t.Fatalf("second request's first record = %+v, want skipped_parked", recs[2])
	}
	h.clk.Advance(3 * time.Minute) // past the reset
	res, err := h.router.Complete(ctx, route, prompt("x"), router.Options{})
	if err != nil || res.Target.Provider != "p1" {
		t.Fatalf("after the reset the probe should go to p1 and succeed: %v %v", res, err)
	}
	if n := h.srv.Stats().Requests("p1", ""); n != 2 {
		t.Fatalf("p1 received %d requests, want 2 (the wall and one probe)", n)
	}
}

// Rule 11: the caller learns the model that really answered and whether the
// answer is degraded.
func TestRouter_ReportsTheModelThatAnswered(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "big", family: "big"}, spec{provider: "p2", model: "small", family: "small"})
	h.script("p1", "big", f(sim.NoCredits))
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.ID() != "p2/small" || res.Response.Model != "small" || !res.Degraded {
		t.Fatalf("got target %s model %q degraded %v, want p2/small, small, true", res.Target.ID(), res.Response.Model, res.Degraded)
	}
	if !strings.Contains(res.Response.Message.Content, "p2/small") {
		t.Fatalf("answer %q does not come from p2/small", res.Response.Message.Content)
	}
}

// Rule 12: keys never appear in the ledger, hop reasons or errors.
func TestRouter_KeysNeverLeak(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	h.script("p1", "m", f(sim.Unauthorized), f(sim.Unauthorized))
	h.script("p2", "m", f(sim.BadRequest))
	_, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err == nil {
		t.Fatal("want an error")
	}
	b, _ := json.Marshal(h.ledger.Records())
	hb, _ := json.Marshal(h.hops)
	for what, s := range map[string]string{"ledger": string(b), "hops": string(hb), "error": err.Error()} {
		if strings.Contains(s, testKey) || strings.Contains(s, testKey[8:]) {
			t.Errorf("%s contains the key: %s", what, s)
		}
	}
}

// A cancelled caller stops every wait at once.
func TestRouter_CancelStopsWaits(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	entered := make(chan struct{})
	h.router.Clock = blockingClock{h.clk, entered}
	// Within max_retry_wait: a wait, not a move to p2.
	h.script("p1", "m", rateLimit(3*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.router.Complete(ctx, route, prompt("x"), router.Options{})
		done <- err
	}()
	select {
	case <-entered: // the router is waiting out the Retry-After
	case err := <-done:
		t.Fatalf("returned before waiting: %v", err)
	}
	cancel()
	err := <-done
	if !errors.Is(err, router.ErrCanceled) && !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want cancelled", err)
	}
	if n := h.srv.Stats().Requests("p2", ""); n != 0 {
		t.Fatalf("p2 got %d requests after cancel", n)
	}
}

// blockingClock sleeps until the context ends: a wait that only cancel can stop.
type blockingClock struct {
	*clock.Fake
	entered chan struct{}
}

func (b blockingClock) Sleep(ctx context.Context, d time.Duration) bool {
	close(b.entered)
	<-ctx.Done()
	return false
}

// A chain that crosses wire formats as well as billing pools: Gemini's free
// tier is out of its daily quota, Anthropic is overloaded, an
// OpenAI-compatible provider answers. One request, three records, two hops.
func TestRouter_ChainAcrossDialects(t *testing.T) {
	h, route := newHarness(t,
		spec{provider: "gemini", model: "gemini-2.5-flash", dialect: sim.DialectGemini},
		spec{provider: "anthropic", model: "claude-haiku-4-5", dialect: sim.DialectAnthropic},
		spec{provider: "deepseek", model: "deepseek-chat"})
	route.Budget = policy.Budget{MaxPerTarget: 1}
	h.script("gemini", "gemini-2.5-flash", f(sim.DailyQuota))
	h.script("anthropic", "claude-haiku-4-5", f(sim.Unavailable))
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.ID() != "deepseek/deepseek-chat" || res.Response.Model != "deepseek-chat" {
		t.Fatalf("answered by %s (%s)", res.Target.ID(), res.Response.Model)
	}
	want := []row{
		{"gemini/gemini-2.5-flash", "http_429", "wall", "fallback", 0},
		{"anthropic/claude-haiku-4-5", "http_529", "transient", "fallback", 0},
		{"deepseek/deepseek-chat", "ok", "", "return", 0},
	}
	if diff := cmp.Diff(want, h.rows()); diff != "" {
		t.Fatalf("ledger (-want +got):\n%s", diff)
	}
	if len(h.hops) != 2 || h.hops[0].From != "gemini/gemini-2.5-flash" || h.hops[1].From != "anthropic/claude-haiku-4-5" {
		t.Fatalf("hops = %+v", h.hops)
	}
	// The Gemini daily wall parks until the provider's daily reset, far past
	// a per-minute wait.
	if st, until := h.health.State("gemini/gemini-2.5-flash", h.clk.Now()); st != "open" || until.Sub(h.clk.Now()) < time.Hour {
		t.Fatalf("gemini health %s until %s, want parked for hours", st, until)
	}
}

// The budget's extra-cost ceiling stops a fallback to a dearer target.
func TestRouter_ExtraCostCeilingStopsDearFallback(t *testing.T) {
	h, route := newHarness(t, spec{provider: "cheap", model: "m"}, spec{provider: "dear", model: "m"})
	route.Chain[1].PriceIn, route.Chain[1].PriceOut = 15, 75 // USD per million
	route.Budget = policy.Budget{MaxExtraCost: 0.01}
	h.script("cheap", "m", f(sim.NoCredits))
	req := prompt("x")
	req.MaxTokens = 1000 // 1000 output tokens at $75/M = $0.075 over the ceiling
	_, err := h.router.Complete(context.Background(), route, req, router.Options{})
	if !errors.Is(err, router.ErrAllFailed) {
		t.Fatalf("err = %v, want the request to stop at the ceiling", err)
	}
	if n := h.srv.Stats().Requests("dear", ""); n != 0 {
		t.Fatalf("the dear target got %d requests past the extra-cost ceiling", n)
	}
	// With the cheap target parked, the dear one is still held to the ceiling.
	if _, err := h.router.Complete(context.Background(), route, req, router.Options{}); !errors.Is(err, router.ErrAllFailed) {
		t.Fatalf("parked primary: err = %v, want the ceiling to stop the dear target", err)
	}
	if rows := h.rows(); rows[len(rows)-1].Status != "skipped_cost" {
		t.Fatalf("last record %+v, want skipped_cost", rows[len(rows)-1])
	}
	req.MaxTokens = 10 // now within the ceiling
	res, err := h.router.Complete(context.Background(), route, req, router.Options{})
	if err != nil || res.Target.Provider != "dear" {
		t.Fatalf("within the ceiling: %v %v", res, err)
	}
}

// A batch request whose every candidate is already parked waits for the
// earliest reset (inside its deadline), then sends one probe.
func TestRouter_BatchQueuesWhenEverythingIsParked(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"})
	route.Budget = policy.Batch()
	h.script("p1", "m", f(sim.DailyQuota), f(sim.OK))
	// The first request meets the wall and queues for it (policy path).
	if _, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{}); err != nil {
		t.Fatal(err)
	}
	h.script("p1", "m", f(sim.DailyQuota))
	route.Budget.Queue = false
	if _, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{}); err == nil {
		t.Fatal("without queueing the parked target should fail the request")
	}
	// The next request finds it parked before any send (skip path) and waits.
	route.Budget.Queue = true
	before := len(h.clk.Sleeps())
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil || res.Target.Provider != "p1" {
		t.Fatalf("queued request: %v %v", res, err)
	}
	sleeps := h.clk.Sleeps()[before:]
	if len(sleeps) != 1 || sleeps[0] < 7*time.Minute {
		t.Fatalf("sleeps = %v, want one wait for the ~7 min reset", sleeps)
	}
	rows := h.rows()
	if got := rows[len(rows)-2].Status; got != "skipped_parked" {
		t.Fatalf("want a recorded skip before the wait, got %s", got)
	}
}

// TestRouter_QueuesOnce checks that a request waits for a reset at most
// once: when the target hits its wall again after the wait, the request
// fails at once, and its record says so (fail, not another queue).
func TestRouter_QueuesOnce(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"})
	route.Budget = policy.Batch()
	route.Budget.MaxPerTarget = 3
	h.script("p1", "m", f(sim.DailyQuota), f(sim.DailyQuota), f(sim.OK))
	_, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if !errors.Is(err, router.ErrAllFailed) {
		t.Fatalf("err = %v, want ErrAllFailed after one queue", err)
	}
	if sleeps := h.clk.Sleeps(); len(sleeps) != 1 {
		t.Fatalf("sleeps = %v, want exactly one wait for the reset", sleeps)
	}
	var actions []string
	for _, r := range h.rows() {
		actions = append(actions, r.Action)
	}
	if want := []string{"queue", "fail"}; !slices.Equal(actions, want) {
		t.Fatalf("actions %v, want %v", actions, want)
	}
}
