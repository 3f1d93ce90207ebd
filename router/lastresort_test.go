package router_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// The last resort: when every candidate fails, the answer kept from the
// same request, else the route's static answer, degraded and recorded;
// never for a request that fails closed.
func TestLastResort(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	route.CacheAnswers, route.StaticAnswer = time.Hour, "Sorry, try again later."
	route.Budget = policy.Budget{MaxPerTarget: 1} // one send per target: each dead() below is used up
	ask := func(text string) (*router.Result, error) {
		return h.router.Complete(context.Background(), route, &llm.Request{
			Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}, router.Options{})
	}
	first, err := ask("hello")
	if err != nil {
		t.Fatal(err)
	}
	dead := func() {
		h.script("p1", "m", sim.Fault{Kind: sim.ServerError})
		h.script("p2", "m", sim.Fault{Kind: sim.ServerError})
	}

	dead()
	h.newLedger()
	res, err := ask("hello")
	if err != nil {
		t.Fatalf("every candidate failed with a kept answer: %v", err)
	}
	if res.Target.ID() != "detour/cache" || !res.Degraded || res.Response.Message.Content != first.Response.Message.Content {
		t.Fatalf("got %s %q degraded=%v, want the kept answer %q", res.Target.ID(), res.Response.Message.Content, res.Degraded,
			first.Response.Message.Content)
	}
	rows := h.rows()
	if last := rows[len(rows)-1]; last.Status != "last_resort" || last.Action != "static" || last.Target != "detour/cache" {
		t.Fatalf("ledger %+v, want a last_resort line last", rows)
	}

	dead()
	res, err = ask("another question")
	if err != nil || res.Target.ID() != "detour/static" || res.Response.Message.Content != "Sorry, try again later." {
		t.Fatalf("no kept answer: %v %+v, want the static answer", err, res)
	}

	h.script("p1", "m", sim.Fault{Kind: sim.BadRequest})
	if _, err := ask("hello"); !errors.Is(err, router.ErrFailClosed) {
		t.Fatalf("an invalid request got %v, want it to fail closed with no last resort", err)
	}

	route.CacheAnswers, route.StaticAnswer = 0, ""
	dead()
	if _, err := ask("hello"); !errors.Is(err, router.ErrAllFailed) {
		t.Fatalf("a route without a last resort: %v", err)
	}
}
