package router_test

import (
	"context"
	"strings"
	"testing"

	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// What a buffered stream counts against the router's Buffers is given
// back however the stream ends: a cut while buffering (the walk fails
// over), a caller that closes before reading, a stream read to its end.
func TestBuffers_GivenBackHoweverTheStreamEnds(t *testing.T) {
	h, route := newHarness(t, spec{provider: "p1", model: "m"}, spec{provider: "p2", model: "m"})
	route.Buffered = true
	route.Budget = policy.Budget{MaxPerTarget: 1}
	b := &router.Buffers{}
	h.router.Buffers = b
	h.script("p1", "m", sim.Fault{Kind: sim.StreamCut, Chunks: 3}, sim.Fault{Kind: sim.OK, Pieces: 50})
	res, err := h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Held() == 0 {
		t.Fatal("a buffered answer held counts nothing")
	}
	if text, err := drain(t, res.Stream); err != nil || !strings.Contains(text, "p2/m") {
		t.Fatalf("after p1's cut: %q %v, want p2's answer", text, err)
	}
	if n := b.Held(); n != 0 {
		t.Fatalf("%d bytes still held after a cut and an answer read whole", n)
	}
	res, err = h.router.Stream(context.Background(), route, streamPrompt(), router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Held() == 0 {
		t.Fatal("the second answer held counts nothing")
	}
	res.Stream.Close()
	if n := b.Held(); n != 0 {
		t.Fatalf("%d bytes still held after the caller closed", n)
	}
	if b.Bypassed() != 0 {
		t.Fatalf("%d streams bypassed a budget without a limit", b.Bypassed())
	}
}
