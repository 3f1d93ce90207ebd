package router_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// groupRoute is a route whose first two targets, a/m and b/m (another
// provider, one family), are a group picking as g says, before c/m.
func groupRoute(t *testing.T, g *router.Group) (*harness, *router.Route) {
	t.Helper()
	h, route := newHarness(t, spec{provider: "a", model: "m", family: "f"}, spec{provider: "b", model: "m", family: "f"},
		spec{provider: "c", model: "m", family: "f"})
	route.Chain[0].Group, route.Chain[1].Group = g, g
	// A SQLite store: its records (sends in flight, quota windows, the
	// prompts' members) are what every process on the machine shares.
	st := sqlitestore.Open(filepath.Join(t.TempDir(), "health.db"), sqlitestore.Options{})
	t.Cleanup(func() { st.Close() })
	h.health = health.NewWithStore(health.Settings{}, st)
	h.router.Health = h.health
	return h, route
}

// firsts counts, by target, the requests whose first attempt went to it,
// and returns the pick of each group member's lines.
func firsts(h *harness) (map[string]int, []string) {
	n, picks := map[string]int{}, []string(nil)
	for _, r := range h.ledger.Records() {
		if r.Attempt <= 1 && r.Hop == 0 {
			n[r.Provider+"/"+r.Model]++
		}
		if r.Pick != "" {
			picks = append(picks, r.Pick)
		}
	}
	return n, picks
}

func ask(t *testing.T, h *harness, route *router.Route, req *llm.Request) *router.Result {
	t.Helper()
	res, err := h.router.Complete(context.Background(), route, req, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Weighted: a 3:1 group sends about three in four requests to a first, and
// both members serve; c, after the group, is never needed.
func TestGroup_WeightedSpreadsByWeight(t *testing.T) {
	h, route := groupRoute(t, &router.Group{Pick: router.PickWeighted, Weights: map[string]float64{"a/m": 3}})
	h.router.Rand = rand.New(rand.NewPCG(1, 2)).Float64
	const n = 400
	for range n {
		ask(t, h, route, prompt("hi"))
	}
	got, picks := firsts(h)
	if share := float64(got["a/m"]) / n; share < 0.68 || share > 0.82 || got["b/m"] == 0 || got["c/m"] != 0 {
		t.Errorf("first sends %v over %d requests: want about 75%% to a/m (weight 3), the rest to b/m, none to c/m", got, n)
	}
	if len(picks) == 0 || !strings.HasPrefix(picks[0], "weighted: weight ") {
		t.Errorf("ledger picks %v: want each member's line to say it was weighted", picks[:min(len(picks), 3)])
	}
}

// Least busy: a member with sends in flight (counted in the health store's
// records, as every replica sees them) is passed over for an idle one; a
// send counts itself in while it runs and out when it ends.
func TestGroup_LeastBusyGoesToTheIdleMember(t *testing.T) {
	h, route := groupRoute(t, &router.Group{Pick: router.PickLeastBusy})
	rec := h.health.RecordsOf()
	if _, err := rec.Add("busy:a/m", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	if res := ask(t, h, route, prompt("hi")); res.Target.ID() != "b/m" {
		t.Fatalf("answered by %s, want b/m: a/m has 2 in flight", res.Target.ID())
	}
	if n, _ := rec.Add("busy:b/m", 0, time.Minute); n != 0 {
		t.Errorf("b/m reads %g in flight after its send ended, want 0", n)
	}
	_, picks := firsts(h)
	if len(picks) != 1 || picks[0] != "least_busy: 0 in flight" {
		t.Errorf("picks %q, want b/m's line to say it had 0 in flight", picks)
	}
	// A count below 0 (a send's -1 that landed after its count expired)
	// reads as idle, no idler than idle: with a/m at 0 and b/m at -3 the
	// chain's order decides.
	_, _ = rec.Add("busy:a/m", -2, time.Minute)
	_, _ = rec.Add("busy:b/m", -3, time.Minute)
	if res := ask(t, h, route, prompt("hi")); res.Target.ID() != "a/m" {
		t.Errorf("answered by %s, want a/m: a count below 0 is no busier nor idler than 0", res.Target.ID())
	}
}

// Most room: with rpm 10 on each member, requests go where the most of
// the minute is left, so the two share the load.
func TestGroup_MostRoomSharesTheQuota(t *testing.T) {
	h, route := groupRoute(t, &router.Group{Pick: router.PickMostRoom})
	for i := range 2 {
		route.Chain[i].Quotas = []router.Quota{{Key: route.Chain[i].ID(), Source: "test", Limits: router.Limits{RPM: 10}}}
	}
	for range 10 {
		ask(t, h, route, prompt("hi"))
	}
	if got, _ := firsts(h); got["a/m"] != 5 || got["b/m"] != 5 {
		t.Errorf("first sends %v: want 5 and 5 (each goes where more room is left)", got)
	}
}

// A failure moves to the other member before the chain goes on: a wall on
// the member picked first is answered by the other, not by c.
func TestGroup_FailureMovesToTheOtherMemberFirst(t *testing.T) {
	h, route := groupRoute(t, &router.Group{Pick: router.PickWeighted})
	h.script("a", "m", simulate.Fault{Kind: simulate.InsufficientQuota})
	if res := ask(t, h, route, prompt("hi")); res.Target.ID() != "b/m" {
		t.Fatalf("answered by %s, want b/m, the group's other member", res.Target.ID())
	}
}

// Affinity: a conversation whose shared prefix is worth caching goes back
// to the member that served it, whatever the pick says, while it is
// healthy; parked, the next turn moves and sticks to the new member.
func TestGroup_ConversationSticksToItsMember(t *testing.T) {
	h, route := groupRoute(t, &router.Group{Pick: router.PickLeastBusy})
	system := llm.Message{Role: llm.RoleSystem, Content: strings.Repeat("You are a careful assistant. ", 200)}
	turn := func(n int) *llm.Request {
		msgs := []llm.Message{system}
		for i := range n {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "question " + string(rune('a'+i))},
				llm.Message{Role: llm.RoleAssistant, Content: "answer"})
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "next"})
		return &llm.Request{MaxTokens: 64, Messages: msgs}
	}
	rec := h.health.RecordsOf()
	_, _ = rec.Add("busy:a/m", 1, time.Minute) // least_busy says b/m
	first := ask(t, h, route, turn(0)).Target.ID()
	if first != "b/m" {
		t.Fatalf("turn 1 answered by %s, want b/m (a/m busy)", first)
	}
	_, _ = rec.Add("busy:a/m", -1, time.Minute)
	_, _ = rec.Add("busy:b/m", 3, time.Minute) // now least_busy would say a/m
	// The second turn shares the first's prefix (system prompt and turn 1):
	// the request with one more exchange hashes its leading messages.
	req2 := turn(0)
	req2.Messages = append(req2.Messages, llm.Message{Role: llm.RoleAssistant, Content: "answer"}, llm.Message{Role: llm.RoleUser, Content: "more"})
	if got := ask(t, h, route, req2).Target.ID(); got != "a/m" {
		// turn(0)+exchange has a different prefix from turn(0) alone: it
		// starts its own stickiness, so it follows the pick (a/m).
		t.Fatalf("a new prefix answered by %s, want a/m (least busy)", got)
	}
	if got := ask(t, h, route, turn(0)).Target.ID(); got != "b/m" {
		t.Fatalf("the first prefix again answered by %s, want b/m (its cache is warm there)", got)
	}
	_, picks := firsts(h)
	if last := picks[len(picks)-1]; !strings.HasPrefix(last, "affinity:") {
		t.Errorf("the sticky turn's pick is %q, want affinity", last)
	}
	// Back at the member whose cache holds the prefix, the simulator (as
	// OpenAI does) reads it from the cache, and the ledger says so.
	recs := h.ledger.Records()
	if got := recs[len(recs)-1].TokensCacheRead; got < 1024 {
		t.Errorf("the sticky turn read %d tokens from the cache, want its system prompt's (1024 or more)", got)
	}
	if got := recs[0].TokensCacheRead; got != 0 {
		t.Errorf("the first turn read %d tokens from a cache nothing had filled", got)
	}
	h.health.Park("b/m", h.clk.Now().Add(time.Hour), "test wall", h.clk.Now())
	if got := ask(t, h, route, turn(0)).Target.ID(); got != "a/m" {
		t.Fatalf("with b/m parked the turn went to %s, want a/m", got)
	}
	_, _ = rec.Add("busy:a/m", 5, time.Minute) // the pick alone would leave a/m now
	h.health.Release("b/m", h.clk.Now())
	if got := ask(t, h, route, turn(0)).Target.ID(); got != "a/m" {
		t.Fatalf("after the move, the turn went to %s, want a/m (it sticks to its new member)", got)
	}
	for _, r := range h.ledger.Records() {
		if r.Status == ledger.StatusOK && r.Pick == "" {
			t.Errorf("a group member's answer has no pick: %+v", r)
		}
	}
}

// The eval gate exempts the route's head; a group at the head is the
// head, whichever member its pick put first: an unapproved member is
// served when the other fails, in both orders of the draw.
func TestGroup_HeadGroupIsExemptFromTheEvalGate(t *testing.T) {
	for _, draws := range [][]float64{{0.9, 0.1}, {0.1, 0.9}} { // a/m first, then b/m first
		h, route := groupRoute(t, &router.Group{Pick: router.PickWeighted})
		n := 0
		h.router.Rand = func() float64 { n++; return draws[(n-1)%2] }
		route.Approve = func(tg *router.Target) (bool, string) { return tg.ID() != "a/m", "not measured" }
		h.script("b", "m", simulate.Fault{Kind: simulate.DailyQuota})
		h.script("a", "m", simulate.Fault{Kind: simulate.DailyQuota})
		res, err := h.router.Complete(context.Background(), route, prompt("hi"), router.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range h.ledger.Records() {
			if r.Status == ledger.StatusSkippedUnapproved {
				t.Errorf("draws %v: %s/%s skipped by the eval gate, though a member of the head group", draws, r.Provider, r.Model)
			}
		}
		if res.Target.ID() != "c/m" {
			t.Errorf("draws %v: answered by %s, want c/m once both members are walled", draws, res.Target.ID())
		}
	}
}
