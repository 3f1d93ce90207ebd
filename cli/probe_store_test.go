package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// withProbeGenerate rewrites the fixture's config so that route default
// says probe: generate.
func withProbeGenerate(t *testing.T, vars map[string]string) {
	t.Helper()
	b, err := os.ReadFile(vars["DETOUR_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "    chain: [p1/m, p2/m, p3/other]\n", "    chain: [p1/m, p2/m, p3/other]\n    probe: generate\n", 1)
	if err := os.WriteFile(vars["DETOUR_CONFIG"], []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// `detour probe --target` checks a target as its route would: a quota
// wall on p1 (which a model list cannot vouch for) gets the one-token
// generation its route's probe: generate allows, and p1 is back.
func TestProbe_TargetHonoursItsRoutesProbeGenerate(t *testing.T) {
	for _, generate := range []bool{false, true} {
		srv, vars := fixture(t)
		if generate {
			withProbeGenerate(t, vars)
		}
		srv.Enqueue("p1", "m", sim.Fault{Kind: sim.InsufficientQuota}) // a quota wall: account:p1 parked
		if code, out, errOut := runDetour(t, vars, "ask", "hello"); code != ExitOK || !strings.Contains(out, "Hello from p2/m") {
			t.Fatalf("ask: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
		}
		chats := srv.Stats().Requests("p1", "")
		code, out, errOut := runDetour(t, vars, "probe", "--target", "p1/m", "--json")
		var round struct {
			Checks []struct{ Target, Method, Status, After, Note string } `json:"checks"`
		}
		if err := json.Unmarshal([]byte(out), &round); err != nil || code != ExitOK || len(round.Checks) != 1 {
			t.Fatalf("generate %v: probe -t p1/m: exit %d (%v), stdout:\n%s\nstderr:\n%s", generate, code, err, out, errOut)
		}
		c := round.Checks[0]
		sent := srv.Stats().Requests("p1", "") - chats
		switch {
		case generate && (c.Method != "generate" || c.Status != ledger.StatusProbeOK || c.After != "closed" || sent != 1):
			t.Errorf("probe -t p1/m under probe: generate = %+v, %d chat request(s) to p1; want one generation that releases p1", c, sent)
		case !generate && (c.Method != "none" || c.After != "open" || sent != 0 || !strings.Contains(c.Note, "probe: generate would check")):
			t.Errorf("probe -t p1/m without probe: generate = %+v, %d chat request(s) to p1; want nothing sent, the park kept, and why", c, sent)
		}
	}
}

// probe says only what the health store shows: a probe lease left out in
// health.db by a process that is gone is named as a lease of the store,
// with when it lapses, never as live traffic probing now; nothing is sent
// under it, and the last line names the store read.
func TestProbe_SaysOnlyWhatTheStoreShows(t *testing.T) {
	srv, vars := fixture(t)
	path := filepath.Join(filepath.Dir(vars["DETOUR_LEDGER"]), healthFile)
	st := sqlitestore.Open(path, sqlitestore.Options{})
	b := health.NewWithStore(health.Settings{}, st)
	now := time.Now()
	b.Park("p1/m", now.Add(-time.Second), "503 overloaded", now.Add(-time.Minute)) // over: half-open
	if _, _, ok := b.BeginProbe("p1/m", now); !ok {                                // and a lease taken by a process that then died
		t.Fatal("BeginProbe refused")
	}
	lapse := now.Add(health.DefaultProbeTimeout).UTC().Format("15:04")
	st.Close()

	code, out, errOut := runDetour(t, vars, "probe", "--target", "p1/m")
	if code != ExitOK || strings.Contains(out, "live traffic") || !strings.Contains(out, "the health store holds a probe of p1/m out until "+lapse) ||
		!strings.Contains(out, "nothing sent") || !strings.Contains(out, "health store: sqlite "+path) {
		t.Fatalf("probe: exit %d, stdout:\n%s\nstderr:\n%s\nwant the store's lease, until %s, and the store named", code, out, errOut, lapse)
	}
	if srv.Stats().ModelReads("p1") != 0 || srv.Stats().Requests("p1", "") != 0 {
		t.Fatal("probe sent to p1 under another's lease")
	}
	code, out, _ = runDetour(t, vars, "probe", "--target", "p1/m", "--json")
	var round struct {
		Checks []struct {
			LeaseUntil time.Time `json:"lease_until"`
		} `json:"checks"`
		Store health.Status `json:"store"`
	}
	if err := json.Unmarshal([]byte(out), &round); err != nil || code != ExitOK || len(round.Checks) != 1 ||
		round.Checks[0].LeaseUntil.IsZero() || round.Store.Kind != "sqlite" || round.Store.Where != path {
		t.Fatalf("probe --json: exit %d (%v): %s; want lease_until and the store", code, err, out)
	}
}
