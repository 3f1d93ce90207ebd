package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// `detour ask --no-fallback --probe` asks a parked head "have you
// recovered?": plain --no-fallback skips it with no send; --probe sends
// the prompt under the store's probe lease, records it as a probe, and,
// when it answers, its park ends: the next plain ask goes to it first.
func TestAsk_ProbeSendsToAParkedHead(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.InsufficientQuota}) // a quota wall: account:p1 parked
	if code, out, errOut := runDetour(t, vars, "ask", "hello"); code != ExitOK || !strings.Contains(out, "Hello from p2/m") {
		t.Fatalf("ask: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	sends := func() int { return srv.Stats().Requests("p1", "") }
	if code, _, errOut := runDetour(t, vars, "ask", "--no-fallback", "hello"); code != ExitFailed || sends() != 1 ||
		!strings.Contains(errOut, "skipped_parked") {
		t.Fatalf("ask --no-fallback on the parked head: exit %d, %d send(s) to p1, stderr:\n%s\nwant it skipped with no send", code, sends(), errOut)
	}

	code, out, errOut := runDetour(t, vars, "ask", "--no-fallback", "--probe", "hello")
	if code != ExitOK || !strings.Contains(out, "Hello from p1/m") || sends() != 2 ||
		!strings.Contains(errOut, "probe: p1/m answered: released account:p1") {
		t.Fatalf("ask --no-fallback --probe: exit %d, %d send(s) to p1, stdout %q, stderr:\n%s\nwant p1's answer and its park released",
			code, sends(), out, errOut)
	}
	recs, err := ledger.ReadFile(vars["DETOUR_LEDGER"])
	if err != nil {
		t.Fatal(err)
	}
	if last := recs[len(recs)-1]; last.Status != ledger.StatusProbeOK || last.Action != "probe" || last.Route != "default" ||
		last.Provider != "p1" || last.TokensOut == 0 {
		t.Fatalf("the probe's ledger line %+v; want probe_ok, action probe, route default, its tokens", last)
	}
	if code, out, errOut := runDetour(t, vars, "ask", "hello"); code != ExitOK || !strings.Contains(out, "Hello from p1/m") {
		t.Fatalf("ask after the probe: exit %d, stdout %q, stderr:\n%s\nwant p1 first again", code, out, errOut)
	}
	if code, _, errOut := runDetour(t, vars, "ask", "--probe", "hello"); code != ExitUsage || !strings.Contains(errOut, "--no-fallback") {
		t.Fatalf("ask --probe alone: exit %d, stderr %q; want a usage error naming --no-fallback", code, errOut)
	}
}

// A probe that fails keeps the park and says so, from what the store
// reads; the ledger has it as probe_failed and the next ask still skips
// the head.
func TestAsk_ProbeThatFailsKeepsThePark(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.InsufficientQuota}, sim.Fault{Kind: sim.InsufficientQuota})
	if code, _, errOut := runDetour(t, vars, "ask", "hello"); code != ExitOK {
		t.Fatalf("ask: exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut := runDetour(t, vars, "ask", "--start", "p1", "--no-fallback", "--probe", "hello")
	if code != ExitFailed || srv.Stats().Requests("p1", "") != 2 || !strings.Contains(errOut, "probe: p1/m did not answer: account:p1 parked until") {
		t.Fatalf("a failed probe: exit %d, %d send(s) to p1, stderr:\n%s\nwant one send, exit 1 and the park named", code,
			srv.Stats().Requests("p1", ""), errOut)
	}
	recs, err := ledger.ReadFile(vars["DETOUR_LEDGER"])
	if err != nil {
		t.Fatal(err)
	}
	if last := recs[len(recs)-1]; last.Status != ledger.StatusProbeFailed || last.Action != "probe" || last.Kind != "wall" {
		t.Fatalf("the failed probe's ledger line %+v; want probe_failed, action probe, kind wall", last)
	}
	if code, out, _ := runDetour(t, vars, "ask", "hello"); code != ExitOK || !strings.Contains(out, "Hello from p2/m") || srv.Stats().Requests("p1", "") != 2 {
		t.Fatalf("ask after a failed probe: exit %d, stdout %q; want p1 still skipped", code, out)
	}
}

// A probe already out in the store (here a lease a process that died
// left in health.db) is not raced: nothing is sent, and ask says what
// the store holds and until when, not who holds it.
func TestAsk_ProbeLeavesAProbeOutAlone(t *testing.T) {
	srv, vars := fixture(t)
	st := sqlitestore.Open(filepath.Join(filepath.Dir(vars["DETOUR_LEDGER"]), healthFile), sqlitestore.Options{})
	b := health.NewWithStore(health.Settings{}, st)
	now := time.Now()
	b.Park("p1/m", now.Add(time.Hour), "503 overloaded", now)
	if _, _, ok := b.BeginProbe("p1/m", now); !ok {
		t.Fatal("BeginProbe refused")
	}
	st.Close()
	code, _, errOut := runDetour(t, vars, "ask", "--no-fallback", "--probe", "hello")
	if code != ExitFailed || srv.Stats().Requests("p1", "") != 0 || strings.Contains(errOut, "live traffic") ||
		!strings.Contains(errOut, "probe: nothing sent to p1/m: the health store holds a probe of p1/m out until") {
		t.Fatalf("probe under a lease out: exit %d, %d send(s) to p1, stderr:\n%s\nwant nothing sent and the lease named", code,
			srv.Stats().Requests("p1", ""), errOut)
	}
}
