package router

import (
	"testing"
	"time"
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
