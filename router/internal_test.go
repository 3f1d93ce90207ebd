package router

import (
	"testing"
	"time"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
)

// A park a day away or more names its date; a nearer one its time, both
// with the zone.
func TestUntilText(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		until time.Time
		want  string
	}{
		{now.Add(7 * time.Minute), "22:07:00 UTC"},
		{now.Add(26 * time.Hour), "2026-12-03 00:00:00 UTC"},
		{now.Add(24 * time.Hour), "2026-12-02 22:00:00 UTC"},
	} {
		if got := untilText(c.until, now); got != c.want {
			t.Errorf("untilText(%s) = %q, want %q", c.until, got, c.want)
		}
	}
}

// A route reads a request's needs only where a target would: one of
// another dialect, or one that declares what it offers.
func TestRoute_ReadsNeeds(t *testing.T) {
	same := Target{Provider: "a", Model: "m", Dialect: "openai"}
	other := Target{Provider: "b", Model: "m", Dialect: "anthropic"}
	offers := Target{Provider: "c", Model: "m", Dialect: "openai", Offers: []string{"tools"}}
	for _, c := range []struct {
		chain []Target
		want  bool
	}{
		{[]Target{same}, false},
		{[]Target{same, same}, false},
		{[]Target{same, other}, true},
		{[]Target{offers}, true},
	} {
		if got := (&Route{Chain: c.chain}).ReadsNeeds("openai"); got != c.want {
			t.Errorf("ReadsNeeds(%+v) = %v, want %v", c.chain, got, c.want)
		}
	}
}

// Chunks read ahead (before the first output reached the caller, or a
// buffered answer) are handed out in order, and once out the stream keeps
// none of them: a long stream does not hold its first chunks' copies for
// its whole life.
func TestRoutedStream_LetsGoOfHeldChunks(t *testing.T) {
	held := []llm.Chunk{{Role: llm.RoleAssistant, Raw: `{"role":"assistant"}`}, {Content: "hi", Raw: `{"content":"hi"}`}}
	s := &routedStream{phase: policy.PhaseSent, pending: held}
	for _, want := range []string{"", "hi"} {
		c, err := s.Next()
		if err != nil || c.Content != want {
			t.Fatalf("Next() = %q, %v; want %q", c.Content, err, want)
		}
	}
	if s.pending != nil {
		t.Errorf("pending = %v after every held chunk went out, want nil", s.pending)
	}
	for i, c := range held {
		if c.Raw != "" || c.Content != "" {
			t.Errorf("held[%d] = %+v: the stream still references a chunk it handed out", i, c)
		}
	}
	if s.phase != policy.PhaseOutputStarted {
		t.Errorf("phase = %v, want %v", s.phase, policy.PhaseOutputStarted)
	}
}
