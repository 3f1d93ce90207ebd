package cli

import (
	"strings"
	"testing"

	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// `detour ask` prints the provider's own request id on the failed
// attempt's line, the one the ledger holds, so that a user can quote it to
// the provider's support desk.
func TestAsk_PrintsProviderRequestID(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.NoCredits})
	code, _, errOut := run(t, vars, "", "ask", "hello")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	recs, err := ledger.ReadFile(vars["DETOUR_LEDGER"])
	if err != nil || len(recs) != 2 {
		t.Fatalf("ledger = %+v, %v", recs, err)
	}
	id := recs[0].ProviderRequestID
	if recs[0].Status != "http_402" || id == "" || recs[1].ProviderRequestID == "" || recs[1].ProviderRequestID == id {
		t.Fatalf("ledger = %+v: want each attempt's own upstream_request_id", recs)
	}
	var line string
	for l := range strings.Lines(errOut) {
		if strings.Contains(l, "http_402") {
			line = l
		}
	}
	if !strings.Contains(line, "p1/m") || !strings.Contains(line, "(provider request id "+id+")") {
		t.Fatalf("the failed attempt's line %q does not name its provider request id %q; stderr:\n%s", line, id, errOut)
	}
}
