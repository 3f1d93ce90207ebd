package router_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// refusedClient is a provider whose host refuses every connection.
type refusedClient struct{ sends int }

func (c *refusedClient) err() error {
	c.sends++
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

func (c *refusedClient) Complete(context.Context, *llm.Request) (*llm.Response, error) {
	return nil, c.err()
}
func (c *refusedClient) Stream(context.Context, *llm.Request) (llm.Stream, error) {
	return nil, c.err()
}

// An endpoint that refuses connections: every target on that host is
// skipped in the request once it failed, a target elsewhere answers, and
// a later request skips the host while its breaker is open.
func TestRouter_EndpointScopeSkipsTheHost(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p1", model: "b"}, spec{provider: "p2", model: "c"})
	down := &refusedClient{}
	route.Chain[0].Client, route.Chain[0].Endpoint = down, "down.example:443"
	route.Chain[1].Client, route.Chain[1].Endpoint = down, "down.example:443"
	route.Chain[2].Endpoint = "up.example:443"
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil || res.Target.ID() != "p2/c" {
		t.Fatalf("res %v err %v: want p2/c", res, err)
	}
	got := h.rows()
	want := []string{"p1/a net_refused retry", "p1/a net_refused fallback", "p1/b skipped_endpoint skip", "p2/c ok return"}
	if s := rowWords(got); s != strings.Join(want, ",") {
		t.Fatalf("ledger %s, want %s", s, strings.Join(want, ","))
	}
	if recs := h.ledger.Records(); recs[0].Scope != "endpoint" {
		t.Errorf("scope %q, want endpoint", recs[0].Scope)
	}
	// The third refusal on the host opens it: the next request skips
	// both of its targets without a send.
	h.newLedger()
	if _, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{}); err != nil {
		t.Fatal(err)
	}
	if down.sends != 3 {
		t.Fatalf("the refusing host got %d sends, want 3 (2, then 1 that opened it)", down.sends)
	}
	h.newLedger()
	if _, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.rows()[:2] {
		if r.Status != "skipped_parked" {
			t.Errorf("%s %s, want skipped_parked while the endpoint is open", r.Target, r.Status)
		}
	}
	if down.sends != 3 {
		t.Errorf("the open endpoint got sends: %d", down.sends)
	}
}

// An account wall (insufficient_quota) parks every target of the
// provider's key: its other model is skipped now and in later requests,
// while a model of another provider answers.
func TestRouter_AccountScopeParksTheKey(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p1", model: "b"}, spec{provider: "p2", model: "c"})
	h.script("p1", "a", f(sim.InsufficientQuota))
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil || res.Target.ID() != "p2/c" {
		t.Fatalf("res %v err %v: want p2/c", res, err)
	}
	if s, want := rowWords(h.rows()), "p1/a http_429 fallback,p1/b skipped_account skip,p2/c ok return"; s != want {
		t.Fatalf("ledger %s, want %s", s, want)
	}
	recs := h.ledger.Records()
	if recs[0].Scope != "account" || !strings.Contains(recs[1].Reason, "account p1 failed in this request") {
		t.Fatalf("records %+v: want an account wall, then its other model skipped for it", recs[:2])
	}
	h.newLedger()
	if _, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{}); err != nil {
		t.Fatal(err)
	}
	if s, want := rowWords(h.rows()), "p1/a skipped_parked skip,p1/b skipped_parked skip,p2/c ok return"; s != want {
		t.Fatalf("later request: ledger %s, want %s", s, want)
	}
	if r := h.ledger.Records()[1]; !strings.Contains(r.Reason, "account p1 parked until") {
		t.Fatalf("later skip %q: want it to name the account's park", r.Reason)
	}
	if n := h.srv.Stats().Requests("p1", ""); n != 1 {
		t.Fatalf("p1 got %d sends, want 1", n)
	}
}

// A target wall (a model not found) leaves the provider's other model
// eligible: it answers in the same request.
func TestRouter_TargetScopeKeepsTheProvidersOtherModels(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "gone"}, spec{provider: "p1", model: "b"})
	h.script("p1", "gone", f(sim.ModelNotFound))
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil || res.Target.ID() != "p1/b" {
		t.Fatalf("res %v err %v: want p1/b", res, err)
	}
	if recs := h.ledger.Records(); recs[0].Kind != "wall" || recs[0].Scope != "target" {
		t.Fatalf("first record %+v: want a wall of the target", recs[0])
	}
}

// No wait without a send: a failure that opens the target's breaker (here
// the third transient failure, a 429 asking for 3 s) moves on at once.
func TestRouter_NoWaitWhenTheFailureOpenedTheTarget(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p2", model: "b"})
	h.script("p1", "a", f(sim.ServerError), f(sim.ServerError), rateLimit(3*time.Second))
	if _, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Minute) // the first two failures still count
	h.newLedger()
	before := len(h.clk.Sleeps())
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil || res.Target.ID() != "p2/b" {
		t.Fatalf("res %v err %v: want p2/b", res, err)
	}
	rows := h.rows()
	if rows[0].Status != "http_429" || rows[0].Action != "fallback" || rows[0].Wait != 0 {
		t.Fatalf("first record %+v: want a 429 that moves on at once (the breaker opened)", rows[0])
	}
	if s := h.clk.Sleeps()[before:]; len(s) != 0 {
		t.Fatalf("slept %v for a target that could not be sent to", s)
	}
}

// A failed half-open probe moves the request that carried it to the next
// candidate at once, with no backoff.
func TestRouter_FailedProbeMovesOnAtOnce(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p1", model: "b"})
	h.health.Park("p1/a", h.clk.Now().Add(time.Second), "test park", h.clk.Now())
	h.clk.Advance(time.Second)
	h.script("p1", "a", f(sim.Unavailable))
	res, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	if err != nil || res.Target.ID() != "p1/b" {
		t.Fatalf("res %v err %v: want p1/b, the same provider's other model", res, err)
	}
	if s := h.clk.Sleeps(); len(s) != 0 {
		t.Fatalf("slept %v after the probe failed", s)
	}
	if s, want := rowWords(h.rows()), "p1/a http_503 fallback,p1/b ok return"; s != want {
		t.Fatalf("ledger %s, want %s", s, want)
	}
}

// Rule 5, whole: the error lists every candidate in chain order, failed,
// skipped or never reached, each reason said once.
func TestRouter_AllFailedNamesEveryCandidateOnce(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p1", model: "b"}, spec{provider: "p2", model: "c"})
	h.script("p1", "a", f(sim.Unavailable), f(sim.Unavailable))
	h.script("p1", "b", f(sim.BadRequest))
	_, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	var re *router.Error
	if !errors.As(err, &re) || !errors.Is(err, router.ErrFailClosed) {
		t.Fatalf("err %v, want a fail-closed *router.Error", err)
	}
	if len(re.Candidates) != 3 {
		t.Fatalf("candidates %+v, want all three", re.Candidates)
	}
	c := re.Candidates
	if c[0].Sends != 2 || c[1].Sends != 1 || c[2].Sends != 0 || !c[2].Skipped() || !strings.HasPrefix(c[2].Reason, "not tried: ") {
		t.Fatalf("candidates %+v", c)
	}
	for _, cand := range c {
		if head, _, ok := strings.Cut(cand.Reason, " — "); ok && strings.Contains(cand.Reason[len(head):], strings.TrimPrefix(head, "503 ")) {
			t.Errorf("reason says the same twice: %q", cand.Reason)
		}
	}
}

// The reason of a candidate holds the provider's message once, whole.
func TestRouter_FullReasonSaysItOnce(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"})
	h.script("p1", "a", f(sim.Unavailable), f(sim.Unavailable))
	_, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	var re *router.Error
	if !errors.As(err, &re) {
		t.Fatal(err)
	}
	r := re.Candidates[0].Reason
	if strings.Count(r, "overloaded with other requests") != 1 || strings.Contains(r, "…") {
		t.Fatalf("reason %q: want the whole message once", r)
	}
	if re.Exhaustion != router.Unavailable {
		t.Errorf("exhaustion %s, want unavailable", re.Exhaustion)
	}
}

// Every candidate rate limited: the error says so and when to come back.
func TestRouter_AllRateLimitedSaysWhen(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "a"}, spec{provider: "p2", model: "b"})
	h.script("p1", "a", f(sim.DailyQuota))
	h.script("p2", "b", rateLimit(90*time.Second))
	_, err := h.router.Complete(context.Background(), route, prompt("x"), router.Options{})
	var re *router.Error
	if !errors.As(err, &re) || re.Exhaustion != router.RateLimited {
		t.Fatalf("err %v: want every candidate rate limited", err)
	}
	if want := h.clk.Now().Add(90 * time.Second); !re.RetryAt.Equal(want) {
		t.Errorf("RetryAt %s, want the earliest reset %s", re.RetryAt, want)
	}
	if f := classify.Classify(re, h.clk.Now()); f.Kind != classify.Wall {
		t.Errorf("the error still reaches the last provider error: %s", f.Kind)
	}
}

// rowWords is "target status action" per row, comma-separated.
func rowWords(rows []row) string {
	var b strings.Builder
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r.Target + " " + r.Status + " " + r.Action)
	}
	return b.String()
}
