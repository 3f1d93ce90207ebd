package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// A group of two free tiers with rpm limits carries a batch at both
// members' rate: 20 items at rpm 10 each are split 10 and 10, with no 429
// and no send refused, where one tier alone would wait a minute for its
// window (measured at 200 items and rpm 100: 79 s alone, 30 s as a group;
// docs/measurements.md, "A group of two free tiers").
func TestBatch_GroupUsesBothMembers(t *testing.T) {
	srv, err := sim.Start(sim.Provider{Name: "p1"}, sim.Provider{Name: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	cfg := fmt.Sprintf(`providers:
  p1: {base_url: %s, key_env: P1_KEY, pool: free}
  p2: {base_url: %s, key_env: P2_KEY, pool: free}
targets:
  p1/m: {family: fam, limits: {rpm: 10}}
  p2/m: {family: fam, limits: {rpm: 10}}
routes:
  default:
    chain:
      - group: [p1/m, p2/m]
        pick: most_room
    budget: batch
`, srv.BaseURL("p1"), srv.BaseURL("p2"))
	path := filepath.Join(dir, "detour.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for i := range 20 {
		fmt.Fprintf(&in, `{"id": "q%d", "prompt": "item %d"}`+"\n", i, i)
	}
	inPath, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(inPath, []byte(in.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"DETOUR_CONFIG": path, "DETOUR_LEDGER": filepath.Join(dir, "ledger.jsonl"), "P1_KEY": "k1", "P2_KEY": "k2"}
	if code, _, errOut := run(t, vars, "", "batch", inPath, "-o", out); code != ExitOK {
		t.Fatalf("batch: exit %d\n%s", code, errOut)
	}
	if a, b := srv.Stats().Requests("p1", "m"), srv.Stats().Requests("p2", "m"); a != 10 || b != 10 {
		t.Errorf("p1/m got %d sends, p2/m %d: want 10 and 10 (each its rpm)", a, b)
	}
	recs, err := ledger.ReadFile(vars["DETOUR_LEDGER"])
	if err != nil {
		t.Fatal(err)
	}
	// Items in flight at once may read the same room and find it taken at
	// the send: a skip, never a send, and the other member takes it.
	ok := 0
	for _, r := range recs {
		switch {
		case r.Status == ledger.StatusOK && strings.HasPrefix(r.Pick, "most_room: "):
			ok++
		case r.Status == ledger.StatusSkippedQuota:
		default:
			t.Errorf("ledger line %s %s pick %q: want answers picked by most_room, or quota skips", r.Provider, r.Status, r.Pick)
		}
	}
	if ok != 20 {
		t.Errorf("%d answers, want 20", ok)
	}
}
