package router_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// Options.IdempotencyKey: one send per key, after completion and for 10
// callers at once; another request under the key is refused; a failed
// first frees the key; a stream refuses a key. It is long by its steps,
// each one part of the same key's story.
func TestIdempotencyKey(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"})
	route.Budget = policy.Budget{MaxPerTarget: 1}
	opts := router.Options{IdempotencyKey: "op-1"}
	first, err := h.router.Complete(context.Background(), route, prompt("pay"), opts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.router.Complete(context.Background(), route, prompt("pay"), opts)
	if err != nil || !again.Replayed || again.Response.ID != first.Response.ID || again.Target.ID() != "p1/m" || len(again.Attempts) != 0 {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if n := h.srv.Stats().Requests("p1", ""); n != 1 {
		t.Fatalf("p1 got %d requests for one key", n)
	}
	if _, err := h.router.Complete(context.Background(), route, prompt("refund"), opts); !errors.Is(err, router.ErrIdempotencyReused) {
		t.Fatalf("another request under the key: %v", err)
	}

	h.script("p1", "m", sim.Fault{Kind: sim.SlowFirstToken, Delay: 200 * time.Millisecond})
	var wg sync.WaitGroup
	ids := make([]string, 10)
	for i := range 10 {
		wg.Go(func() {
			res, err := h.router.Complete(context.Background(), route, prompt("ship"), router.Options{IdempotencyKey: "op-10"})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = res.Response.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("answers %q: want one", ids)
		}
	}
	if n := h.srv.Stats().Requests("p1", ""); n != 2 {
		t.Fatalf("p1 got %d requests, want 2 (one per key)", n)
	}

	h.script("p1", "m", sim.Fault{Kind: sim.ServerError})
	if _, err := h.router.Complete(context.Background(), route, prompt("retry me"), router.Options{IdempotencyKey: "op-f"}); err == nil {
		t.Fatal("the failing first answered")
	}
	if res, err := h.router.Complete(context.Background(), route, prompt("retry me"), router.Options{IdempotencyKey: "op-f"}); err != nil || res.Replayed {
		t.Fatalf("after a failed first: %+v %v, want a fresh answer", res, err)
	}
	short := router.Options{IdempotencyKey: "op-t", IdempotencyTTL: time.Millisecond}
	if _, err := h.router.Complete(context.Background(), route, prompt("brief"), short); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(5 * time.Millisecond) // the records read the router's clock
	if res, err := h.router.Complete(context.Background(), route, prompt("brief"), short); err != nil || res.Replayed {
		t.Fatalf("after its IdempotencyTTL the key replayed: %+v %v", res, err)
	}
	if _, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{IdempotencyKey: "op-s"}); err == nil {
		t.Fatal("a stream took an idempotency key")
	}
}

// ReleaseIdempotency drops a claim in flight (a dead caller's) so the next
// Complete with the key sends at once, and says when an answer is kept.
func TestReleaseIdempotency(t *testing.T) {
	h, route := newHarness(t, spec{provider: "a", model: "m"})
	h.script("a", "m", sim.Fault{Kind: sim.Hang})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.router.Complete(ctx, route, prompt("hi"), router.Options{IdempotencyKey: "k"}) //nolint:errcheck // cancelled
	for h.srv.Stats().Total() == 0 {
		time.Sleep(time.Millisecond)
	}
	if kept, err := h.router.ReleaseIdempotency(route, "k"); kept || err != nil {
		t.Fatalf("a claim in flight: kept %v, %v; want it dropped", kept, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := h.router.Complete(context.Background(), route, prompt("hi"), router.Options{IdempotencyKey: "k"})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the next Complete waited on the released claim")
	}
	if kept, err := h.router.ReleaseIdempotency(route, "k"); !kept || err != nil {
		t.Fatalf("after an answer: kept %v, %v; want kept", kept, err)
	}
}
