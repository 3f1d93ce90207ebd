package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detourhq/detour/internal/redistest"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// quotaConfig writes a config whose route chains p1/m, declared at rpm
// requests a minute, and p2/m, with health in store ("" for ask's SQLite
// file beside the ledger), and returns the simulator and the variables
// of a detour process.
func quotaConfig(t *testing.T, rpm int, store string) (*sim.Server, map[string]string) {
	t.Helper()
	srv, err := sim.Start(sim.Provider{Name: "p1"}, sim.Provider{Name: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	cfg := fmt.Sprintf(`providers:
  p1: {base_url: %s, key_env: P1_KEY, pool: free}
  p2: {base_url: %s, key_env: P2_KEY, pool: credit}
targets:
  p1/m: {family: fam, limits: {rpm: %d}}
  p2/m: {family: fam}
routes:
  default:
    chain: [p1/m, p2/m]
gateway:
  drain_delay: 0s
`, srv.BaseURL("p1"), srv.BaseURL("p2"), rpm)
	if store != "" {
		cfg += fmt.Sprintf("health:\n  store: %s\n  namespace: %s\n", store, strings.ReplaceAll(t.Name(), "/", "-"))
	}
	path := filepath.Join(dir, "detour.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, map[string]string{"DETOUR_CONFIG": path, "DETOUR_LEDGER": filepath.Join(dir, "ledger.jsonl"),
		"P1_KEY": "k1", "P2_KEY": "k2"}
}

// check shows what is used of each declared limit, from the store the
// asks counted in: rpm 2 after three asks is 2/2 with the minute's end,
// and the third ask went to p2 with p1's skip in the ledger.
func TestCheck_ShowsUseAgainstEachLimit(t *testing.T) {
	srv, vars := quotaConfig(t, 2, "")
	code, out, _ := run(t, vars, "", "check")
	if code != ExitOK || !strings.Contains(out, "p1/m  rpm 0/2") {
		t.Fatalf("check before any ask: exit %d\n%s", code, out)
	}
	for i := range 3 {
		if code, _, errOut := run(t, vars, "", "ask", "hi"); code != ExitOK {
			t.Fatalf("ask %d: exit %d\n%s", i, code, errOut)
		}
	}
	if n := srv.Stats().Requests("p1", "m"); n != 2 {
		t.Fatalf("p1/m got %d sends, want 2 (rpm 2)", n)
	}
	recs, err := ledger.ReadFile(vars["DETOUR_LEDGER"])
	if err != nil || len(recs) != 4 || recs[2].Status != ledger.StatusSkippedQuota {
		t.Fatalf("ledger %+v (%v): want the third ask to skip p1/m as skipped_quota", recs, err)
	}
	code, out, _ = run(t, vars, "", "check")
	if code != ExitOK || !strings.Contains(out, "p1/m  rpm 2/2 (frees ") || !strings.Contains(out, "targets.p1/m.limits") {
		t.Fatalf("check after three asks: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, vars, "", "check", "--json")
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); code != ExitOK || err != nil {
		t.Fatalf("check --json: exit %d, %v\n%s", code, err, out)
	}
	q := rep.Health.Quotas
	if len(q) != 1 || q[0].Key != "p1/m" || len(q[0].Windows) != 1 || q[0].Windows[0].Used != 2 || q[0].Windows[0].Limit != 2 ||
		q[0].Windows[0].Frees.IsZero() {
		t.Fatalf("quotas %+v, want p1/m's rpm 2 of 2 with its end", q)
	}
}

// Concurrent `detour ask` processes on one SQLite file stay under p1's
// rpm together: at most rpm sends reach it, every ask is answered (by p2
// when p1's minute is spent). A few seconds, the minute never waited for.
func TestAsk_ConcurrentProcessesShareOneQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("24 processes")
	}
	const rpm, asks = 10, 24
	srv, vars := quotaConfig(t, rpm, "")
	var failed atomic.Int32
	var wg sync.WaitGroup
	for range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _, errOut := runDetour(t, vars, "ask", "hi"); code != ExitOK {
				failed.Add(1)
				t.Logf("an ask failed: exit %d\n%s", code, errOut)
			}
		}()
	}
	wg.Wait()
	p1 := srv.Stats().Requests("p1", "m")
	t.Logf("p1/m got %d of %d asks (rpm %d), p2/m %d", p1, asks, rpm, srv.Stats().Requests("p2", "m"))
	if failed.Load() != 0 || p1 > rpm || p1 == 0 {
		t.Fatalf("%d asks failed, p1/m got %d sends: want none failed and at most %d", failed.Load(), p1, rpm)
	}
}

// Three `detour serve` replicas on one Redis, rpm 10 on the head: 60
// requests spread over them within the minute send at most 10 to it, and
// none fails while p2 is healthy. Seconds, not a minute: a window starts
// at its first send, so all 60 fall in one.
func TestServe_ThreeReplicasShareOneQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("three serve processes")
	}
	rs := redistest.Start(t)
	const rpm, requests = 10, 60
	srv, vars := quotaConfig(t, rpm, rs.URL())
	var bases []string
	for range 3 {
		b, _, _ := serveProcess(t, vars, "--ledger", "-")
		bases = append(bases, b)
	}
	// 60 requests in about 1.5 s, overlapping: a burst of all 60 at once
	// on a busy machine can pass the store's 50 ms op timeout, and a
	// replica whose store is down counts on its own (quotas are
	// advisory, as health is).
	var failed atomic.Int32
	var wg sync.WaitGroup
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for i := range requests {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code := chat(bases[i%3]); code != http.StatusOK {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	p1 := srv.Stats().Requests("p1", "m")
	t.Logf("p1/m got %d of %d requests over 3 replicas (rpm %d), p2/m %d", p1, requests, rpm, srv.Stats().Requests("p2", "m"))
	if failed.Load() != 0 || p1 > rpm || p1 == 0 {
		t.Fatalf("%d requests failed, p1/m got %d sends: want none failed and at most %d", failed.Load(), p1, rpm)
	}
}

// report, given the config, shows each declared limit beside the busiest
// window of its length in the ledger, and the sends skipped at it.
func TestReport_ShowsUseAgainstEachDeclaredLimit(t *testing.T) {
	_, vars := quotaConfig(t, 2, "")
	for i := range 3 {
		if code, _, errOut := run(t, vars, "", "ask", "hi"); code != ExitOK {
			t.Fatalf("ask %d: exit %d\n%s", i, code, errOut)
		}
	}
	code, out, errOut := run(t, vars, "", "report")
	if code != ExitOK {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"declared quotas", "targets.p1/m.limits (p1/m)",
		"rpm  2 requests: busiest minute 2 (100%) from ", "; 1 send(s) skipped at the limit"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, vars, "", "report", "--json")
	var r struct {
		QuotaPeaks []struct {
			Key, Window string
			Requests    int
		} `json:"quota_peaks"`
		Targets []struct {
			Target     string
			QuotaSkips []struct {
				Window      string
				Limit, Used int
				Skips       int
			} `json:"quota_skips"`
		}
	}
	if err := json.Unmarshal([]byte(out), &r); code != ExitOK || err != nil {
		t.Fatalf("report --json: exit %d, %v\n%s", code, err, out)
	}
	if len(r.QuotaPeaks) == 0 || r.QuotaPeaks[0].Window != "minute" || r.QuotaPeaks[0].Requests != 2 {
		t.Errorf("quota_peaks %+v: want p1/m's busiest minute at 2 sends", r.QuotaPeaks)
	}
	var skips int
	for _, tg := range r.Targets {
		for _, q := range tg.QuotaSkips {
			if tg.Target == "p1/m" && q.Window == "rpm" && q.Limit == 2 && q.Used == 2 {
				skips += q.Skips
			}
		}
	}
	if skips != 1 {
		t.Errorf("quota_skips of p1/m: %d skips at rpm 2 of 2, want 1\n%s", skips, out)
	}
	// Without the config, the ledger's own word stays: no declared quotas.
	delete(vars, "DETOUR_CONFIG")
	vars["DETOUR_CONFIG"] = filepath.Join(t.TempDir(), "none.yaml")
	if _, out, _ = run(t, vars, "", "report", vars["DETOUR_LEDGER"]); strings.Contains(out, "declared quotas") {
		t.Errorf("report with no config shows declared quotas:\n%s", out)
	}
}
