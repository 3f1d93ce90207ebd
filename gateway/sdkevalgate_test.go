package gateway_test

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"

	sim "github.com/detourhq/detour/simulate"
)

// A route's eval_gate holds through the gateway as users set it up: with
// the head walled, the official SDK's request passes by a fallback at the
// same provider that measured badly (skipped_unapproved, never sent to)
// and is answered by an approved one at another provider.
func TestSDK_EvalGateSkipsAnUnapprovedFallbackAtTheSameProvider(t *testing.T) {
	f := newFixture(t, setup{routes: gatedRoute(gatedResults(t))})
	enqueue(f, "p1", "m", sim.Fault{Kind: sim.DailyQuota})
	got, err := f.openai(option.WithMaxRetries(0)).Chat.Completions.New(ctx(t), hi("gated"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "m" || f.sim.Stats().Requests("p2", "m") != 1 || f.sim.Stats().Requests("p1", "alt") != 0 {
		t.Fatalf("model %q; p2 got %d, p1/alt %d", got.Model, f.sim.Stats().Requests("p2", "m"), f.sim.Stats().Requests("p1", "alt"))
	}
	var rows []string
	for _, r := range f.ledger.Records() {
		rows = append(rows, r.Provider+"/"+r.Model+":"+r.Status)
		if r.Status == "skipped_unapproved" && !strings.Contains(r.Reason, "accuracy 20% (1/5)") {
			t.Errorf("reason %q", r.Reason)
		}
	}
	if want := "p1/m:http_429 p1/alt:skipped_unapproved p2/m:ok"; strings.Join(rows, " ") != want {
		t.Fatalf("ledger %v, want %s", rows, want)
	}
}
