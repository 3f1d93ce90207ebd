package cli

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// A `detour serve` killed with SIGKILL while three sends are in flight:
// the upstream saw them, so the ledger must too. The next detour process
// to open the ledger (here an `ask`) writes them as interrupted and says
// so. (On b98ee14 such sends were missing from the ledger for good.)
func TestServe_SIGKILLedSendsReachTheLedger(t *testing.T) {
	srv, vars := fixture(t)
	gatewaySection(t, vars)
	const inFlight = 3
	for range inFlight {
		srv.Enqueue("p1", "m", sim.Fault{Kind: sim.Hang})
	}
	book := vars["DETOUR_LEDGER"]
	c := serveChild(t, vars, "--ledger", book)
	for range inFlight {
		chatAsync(c.base)
	}
	eventually(t, "the upstream to get the sends", func() bool { return srv.Stats().Total() == inFlight })
	if err := c.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not die")
	}
	if recs, _ := ledger.ReadFile(book); len(recs) != 0 {
		t.Fatalf("the killed serve wrote %d lines, want none (its sends never ended)", len(recs))
	}

	code, _, errOut := runDetour(t, vars, "ask", "--ledger", book, "hello")
	if code != ExitOK {
		t.Fatalf("ask exit %d:\n%s", code, errOut)
	}
	if want := "3 attempt(s) a stopped detour process left in flight"; !strings.Contains(errOut, want) {
		t.Errorf("ask's stderr lacks %q:\n%s", want, errOut)
	}
	recs, err := ledger.ReadFile(book)
	if err != nil {
		t.Fatal(err)
	}
	interrupted := 0
	for _, r := range recs {
		if r.Status == ledger.StatusInterrupted {
			interrupted++
			if r.Provider != "p1" || r.Model != "m" || r.Route != "default" || r.Phase != "unknown" {
				t.Errorf("interrupted line %+v, want p1/m on route default, phase unknown", r)
			}
		}
	}
	if interrupted != inFlight {
		t.Errorf("%d interrupted lines, want %d (one per send the upstream saw):\n%+v", interrupted, inFlight, recs)
	}
}
