package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/redisstore"
	"github.com/detourhq/detour/internal/redistest"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// Two `detour ask` processes in sequence: the second knows, from the
// SQLite file beside the ledger, the wall the first found, and skips the
// target without a send.
func TestAsk_SecondRunSkipsWhatTheFirstParked(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.DailyQuota}) // a wall: the tokens of the day are spent
	for run := 1; run <= 2; run++ {
		code, out, errOut := runDetour(t, vars, "ask", "hello")
		if code != ExitOK || !strings.Contains(out, "Hello from p2/m") {
			t.Fatalf("run %d: exit %d, stdout %q, stderr:\n%s", run, code, out, errOut)
		}
		if run == 2 && !strings.Contains(errOut, "skipped_parked") {
			t.Errorf("run 2 did not say it skipped the parked p1/m:\n%s", errOut)
		}
	}
	if n := srv.Stats().Requests("p1", ""); n != 1 {
		t.Fatalf("p1 got %d requests over two runs, want 1: the second run must know the wall", n)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(vars["DETOUR_LEDGER"]), healthFile)); err != nil {
		t.Fatalf("no health file beside the ledger: %v", err)
	}
	recs, err := ledger.ReadFile(vars["DETOUR_LEDGER"])
	if err != nil || len(recs) != 4 || recs[2].Status != ledger.StatusSkippedParked {
		t.Fatalf("ledger %+v (%v): want run 2 to record p1's skip", recs, err)
	}
}

// sharedConfig writes a config whose route chains p1/m (a wall while
// wall() says so) and p2/m, with health in Redis at url, and returns the
// simulator and the variables of a detour process.
func sharedConfig(t *testing.T, url string, wall func() bool, retry time.Duration) (*sim.Server, map[string]string) {
	t.Helper()
	p1 := sim.Provider{Name: "p1", Profile: &sim.Profile{Rules: []sim.Rule{{
		Match:   func(string) bool { return wall() },
		Chances: []sim.Chance{{Fault: sim.Fault{Kind: sim.DailyQuota, RetryAfter: retry}, P: 1}},
	}}}}
	srv, err := sim.Start(p1, sim.Provider{Name: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	cfg := fmt.Sprintf(`providers:
  p1: {base_url: %s, key_env: P1_KEY, pool: free}
  p2: {base_url: %s, key_env: P2_KEY, pool: credit}
targets:
  p1/m: {family: fam}
  p2/m: {family: fam}
routes:
  default:
    chain: [p1/m, p2/m]
health:
  store: %s
  namespace: %s
gateway:
  drain_delay: 0s
`, srv.BaseURL("p1"), srv.BaseURL("p2"), url, strings.ReplaceAll(t.Name(), "/", "-"))
	path := filepath.Join(dir, "detour.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, map[string]string{"DETOUR_CONFIG": path, "P1_KEY": "k1", "P2_KEY": "k2"}
}

// chat posts one chat request to base and returns its status (0 when it
// could not be sent).
func chat(base string) int {
	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"default","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
	resp.Body.Close()
	return resp.StatusCode
}

// Three `detour serve` processes share one Redis. p1 is a wall for 30 s
// that names a 3 s reset; 300 requests spread over the replicas in those
// 30 s. Together the replicas send p1 one request per park window (a
// probe), plus the one that found the wall: not one per replica.
func TestServe_ThreeReplicasShareOneRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("30 s of traffic")
	}
	rs := redistest.Start(t)
	const wallFor, reset = 30 * time.Second, 3 * time.Second
	var start atomic.Int64
	start.Store(time.Now().UnixNano())
	srv, vars := sharedConfig(t, rs.URL(), func() bool { return time.Since(time.Unix(0, start.Load())) < wallFor }, reset)
	var bases []string
	for range 3 {
		b, _, _ := serveProcess(t, vars, "--ledger", "-")
		bases = append(bases, b)
	}
	start.Store(time.Now().UnixNano())
	tick := time.NewTicker(wallFor / 300)
	defer tick.Stop()
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := range 300 {
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
	windows := int(wallFor / reset)
	p1 := srv.Stats().Requests("p1", "")
	t.Logf("p1 got %d requests over %d park windows (3 replicas, 300 requests)", p1, windows)
	if failed.Load() != 0 {
		t.Errorf("%d requests failed", failed.Load())
	}
	if p1 > windows+1 || p1 < 2 {
		t.Fatalf("p1 got %d requests, want at most one probe per %s window across the replicas, plus the first (<= %d)",
			p1, reset, windows+1)
	}
}

// Redis killed mid-run and restarted: no request fails, every attempt is
// in the ledger, and the park learned while Redis was away reaches it.
func TestServe_RedisOutageLosesNothing(t *testing.T) {
	rs := redistest.Start(t)
	var walled atomic.Bool
	srv, vars := sharedConfig(t, rs.URL(), walled.Load, time.Hour)
	book := filepath.Join(t.TempDir(), "ledger.jsonl")
	base, stderr, _ := serveProcess(t, vars, "--ledger", book)

	send := func(n int) {
		for range n {
			if code := chat(base); code != http.StatusOK {
				t.Fatalf("a request failed with %d during the store's outage\n%s", code, stderr.String())
			}
		}
	}
	send(20)
	rs.Stop()
	send(5)
	walled.Store(true) // p1's day runs out while Redis is away
	send(20)
	if !strings.Contains(stderr.String(), "unreachable") {
		t.Errorf("serve did not say the store is unreachable:\n%s", stderr.String())
	}
	rs.Restart(t)
	send(20)

	// Another replica, started now, learns the park from Redis.
	st, err := redisstore.Open(redisstore.Options{URL: rs.URL(), Namespace: strings.ReplaceAll(t.Name(), "/", "-")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := health.NewWithStore(health.Settings{}, st)
	eventually(t, "the park learned in the outage to reach Redis", func() bool {
		s, _ := b.State("p1/m", time.Now())
		return s == health.Open
	})
	if n := srv.Stats().Requests("p1", ""); n != 26 {
		t.Errorf("p1 got %d requests, want 25 before the wall and 1 that found it", n)
	}
	// Every attempt reached the ledger: 65 answers, p1's one wall, and p1
	// skipped for the 39 requests after it.
	var recs []ledger.Record
	eventually(t, "the ledger to hold every attempt", func() bool {
		recs, _ = ledger.ReadFile(book)
		return len(recs) >= 65+1+39
	})
	if len(recs) != 65+1+39 {
		t.Fatalf("the ledger holds %d lines, want 105", len(recs))
	}
}

// check shows the health store and what it holds parked: what an ask
// learned is what the next command shows.
func TestCheck_ShowsTheSharedParks(t *testing.T) {
	srv, vars := fixture(t)
	code, out, _ := run(t, vars, "", "check")
	if code != ExitOK || !strings.Contains(out, "health store: sqlite ") || !strings.Contains(out, "no file yet") {
		t.Fatalf("check before any ask: exit %d\n%s", code, out)
	}
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.DailyQuota})
	if code, _, errOut := run(t, vars, "", "ask", "hi"); code != ExitOK {
		t.Fatalf("ask: exit %d\n%s", code, errOut)
	}
	code, out, _ = run(t, vars, "", "check")
	if code != ExitOK || !strings.Contains(out, "(up") || !strings.Contains(out, "p1/m") ||
		!strings.Contains(out, "parked until") {
		t.Fatalf("check after the wall: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, vars, "", "check", "--json")
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); code != ExitOK || err != nil {
		t.Fatalf("check --json: exit %d, %v\n%s", code, err, out)
	}
	h := rep.Health
	if h.Store.Kind != "sqlite" || !h.Store.Up || len(h.Parked) != 1 || h.Parked[0].Key != "p1/m" ||
		h.Parked[0].State != "open" || h.Parked[0].Kind != "wall" || !h.Parked[0].Until.After(time.Now()) {
		t.Fatalf("health %+v, want p1/m parked by a wall in a sqlite store", h)
	}
}

// The route's kept answers live in the SQLite file too: a second ask
// process whose every candidate fails gets the answer the first one got.
func TestAsk_KeptAnswerAcrossRuns(t *testing.T) {
	srv, vars := fixture(t)
	appendFile(t, vars["DETOUR_CONFIG"], "    cache_answers: 1h\n    budget: {max_per_target: 1}\n")
	code, first, errOut := runDetour(t, vars, "ask", "hello")
	if code != ExitOK {
		t.Fatalf("first: exit %d\n%s", code, errOut)
	}
	down := sim.Fault{Kind: sim.ServerError}
	srv.Enqueue("p1", "m", down)
	srv.Enqueue("p2", "m", down)
	srv.Enqueue("p3", "other", down)
	code, again, errOut := runDetour(t, vars, "ask", "hello")
	if code != ExitOK || again != first || !strings.Contains(errOut, "detour/cache") {
		t.Fatalf("second: exit %d, %q (first %q)\n%s", code, again, first, errOut)
	}
}

// ask --idempotency-key: a second process with the same key and prompt
// gets the kept answer and sends nothing; another prompt is refused.
func TestAsk_IdempotencyKeyAcrossRuns(t *testing.T) {
	srv, vars := fixture(t)
	code, first, errOut := runDetour(t, vars, "ask", "--idempotency-key", "op-7", "pay the invoice")
	if code != ExitOK {
		t.Fatalf("first: exit %d\n%s", code, errOut)
	}
	code, again, errOut := runDetour(t, vars, "ask", "--idempotency-key", "op-7", "pay the invoice")
	if code != ExitOK || again != first || !strings.Contains(errOut, "replayed") {
		t.Fatalf("repeat: exit %d %q\n%s", code, again, errOut)
	}
	if n := srv.Stats().Total(); n != 1 {
		t.Fatalf("the providers got %d requests for one key, want 1", n)
	}
	if code, _, errOut := runDetour(t, vars, "ask", "--idempotency-key", "op-7", "pay twice"); code != ExitUsage ||
		!strings.Contains(errOut, "first used with another request") {
		t.Fatalf("another prompt under the key: exit %d\n%s", code, errOut)
	}
}
