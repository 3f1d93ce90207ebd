package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/redisstore"
	"github.com/detourhq/detour/health/sqlitestore"
	"github.com/detourhq/detour/internal/redistest"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// The daily ceiling the reservation tests share: $0.50, and each send's
// worst case $0.02 (p1/m: 100 tokens out at $200 a million, nothing in),
// so that 25 sends fill it.
const (
	ceilingUSD = 0.50
	worstUSD   = 0.02
)

// ceilingConfig writes a config whose route chains p1/m, priced, slow
// (each answer takes slow) and under the route's $0.50 daily ceiling, and
// the free p2/m, with health in store ("" for ask's SQLite file beside
// the ledger); it returns the simulator and a detour process's variables.
func ceilingConfig(t *testing.T, slow time.Duration, store string) (*sim.Server, map[string]string) {
	t.Helper()
	srv, err := sim.Start(sim.Provider{Name: "p1", Latency: sim.Latency{FirstToken: slow}}, sim.Provider{Name: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	cfg := fmt.Sprintf(`providers:
  p1: {base_url: %s, key_env: P1_KEY, pool: payg}
  p2: {base_url: %s, key_env: P2_KEY, pool: free}
targets:
  p1/m: {family: fam, price: {in: 0, out: 200}}
  p2/m: {family: fam}
routes:
  default:
    chain: [p1/m, p2/m]
    daily_cost_limit: %g
gateway:
  drain_delay: 0s
`, srv.BaseURL("p1"), srv.BaseURL("p2"), ceilingUSD)
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

// ceilingKey is the records key of the route's daily counter today.
func ceilingKey() string {
	return "spend:route:default:" + time.Now().UTC().Format(time.DateOnly)
}

// watchCeiling reads the route's counter from rec every 5 ms until stop
// is called, which returns the highest sum it read and how many reads.
func watchCeiling(t *testing.T, rec health.Records) (stop func() (top float64, reads int)) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var top float64
	var reads int
	wg.Go(func() {
		for {
			if v, ok, err := rec.Get(ceilingKey()); err == nil && ok {
				if f, err := strconv.ParseFloat(string(v), 64); err == nil {
					top = max(top, f)
					reads++
				}
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return func() (float64, int) {
		close(done)
		wg.Wait()
		return top, reads
	}
}

// checkCeiling asserts, from the ledger's lines recs, that p1/m's sends
// never held more than the ceiling together: at each send's start, the
// worst cases of the sends in flight (a send holds its room from before
// its start to after its end) plus what the sends that ended cost stay
// within $0.50; and that what they cost in all is within it, and is what
// the store's counter holds (counter): no reservation was left behind. It
// returns how many sends p1/m got.
func checkCeiling(t *testing.T, recs []ledger.Record, counter float64) int {
	t.Helper()
	type send struct {
		start, end time.Time
		cost       float64
	}
	var sends []send
	skipped := 0
	for _, r := range recs {
		if r.Provider != "p1" {
			continue
		}
		if r.Status == ledger.StatusSkippedCost {
			skipped++
			continue
		}
		if strings.HasPrefix(r.Status, "skipped") {
			continue
		}
		sends = append(sends, send{r.Time, r.Time.Add(time.Duration(r.Seconds * float64(time.Second))), r.Cost})
	}
	sort.Slice(sends, func(i, j int) bool { return sends[i].start.Before(sends[j].start) })
	var spent, peak float64
	for _, s := range sends {
		held := 0.0
		for _, o := range sends {
			switch {
			case !o.start.After(s.start) && o.end.After(s.start):
				held += worstUSD
			case !o.end.After(s.start):
				held += o.cost
			}
		}
		peak = max(peak, held)
		spent += s.cost
	}
	t.Logf("p1/m: %d sends, %d skipped_cost; at most $%.2f held and spent at once by the ledger, $%.4f spent; the counter holds $%.4f",
		len(sends), skipped, peak, spent, counter)
	if peak > ceilingUSD+health.ReserveSlack {
		t.Errorf("the ledger shows $%.2f held and spent at once, past the $%.2f ceiling", peak, ceilingUSD)
	}
	if spent > ceilingUSD+health.ReserveSlack || spent-counter > 1e-9 || counter-spent > 1e-9 {
		t.Errorf("p1/m's sends cost $%g, the counter holds $%g: want them equal and within $%.2f", spent, counter, ceilingUSD)
	}
	if len(sends) == 0 || skipped == 0 {
		t.Errorf("%d sends and %d skips of p1/m: the test wants the ceiling to bite", len(sends), skipped)
	}
	return len(sends)
}

// 100 requests over three `detour serve` replicas sharing one Redis, each
// send's worst case $0.02 against the route's $0.50 ceiling and taking 3
// s to answer, so that the 100 are all in flight at once: never more than
// 25 sends hold room together, as the counter in Redis (read throughout)
// and the replicas' ledgers show; the others go to the free p2, and what
// was spent is within the ceiling.
func TestServe_ThreeReplicasHoldOneDailyCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("three serve processes")
	}
	rs := redistest.Start(t)
	srv, vars := ceilingConfig(t, 3*time.Second, rs.URL())
	dir := filepath.Dir(vars["DETOUR_LEDGER"])
	var bases, books []string
	var stderrs []*lockedBuffer
	for i := range 3 {
		book := filepath.Join(dir, fmt.Sprintf("replica%d.jsonl", i))
		b, stderr, _ := serveProcess(t, vars, "--ledger", book)
		bases, books, stderrs = append(bases, b), append(books, book), append(stderrs, stderr)
	}
	st, err := redisstore.Open(redisstore.Options{URL: rs.URL(), Namespace: strings.ReplaceAll(t.Name(), "/", "-"),
		OpTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stop := watchCeiling(t, st)
	// 100 requests in 2.5 s, each in flight 3 s: a burst of all at once
	// can pass the store's 50 ms op timeout on a busy machine, and a
	// replica whose store is down sends without holding (health is
	// advisory).
	var failed atomic.Int32
	var wg sync.WaitGroup
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for i := range 100 {
		<-tick.C
		wg.Go(func() {
			resp, err := http.Post(bases[i%3]+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"default","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil || resp.StatusCode != http.StatusOK {
				failed.Add(1)
			}
			if err == nil {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	top, reads := stop()
	if failed.Load() != 0 {
		t.Fatalf("%d requests failed", failed.Load())
	}
	for i, e := range stderrs {
		if strings.Contains(e.String(), "unreachable") {
			t.Errorf("replica %d lost Redis, and sent without holding its room meanwhile:\n%s", i, e.String())
		}
	}
	var recs []ledger.Record
	eventually(t, "the ledgers to hold every request's answer", func() bool {
		recs = nil
		answers := 0
		for _, b := range books {
			rr, _ := ledger.ReadFile(b)
			recs = append(recs, rr...)
			for _, r := range rr {
				if r.Status == ledger.StatusOK {
					answers++
				}
			}
		}
		return answers == 100
	})
	counter := readCounter(t, st)
	t.Logf("the counter in Redis: at most $%.4f over %d reads", top, reads)
	if top > ceilingUSD+health.ReserveSlack || reads == 0 {
		t.Errorf("the counter in Redis reached $%g (%d reads), past the $%.2f ceiling", top, reads, ceilingUSD)
	}
	if n := checkCeiling(t, recs, counter); srv.Stats().Requests("p1", "m") != n {
		t.Errorf("the ledgers show %d sends to p1/m, the simulator counts %d", n, srv.Stats().Requests("p1", "m"))
	}
}

// 100 `detour ask` processes on one SQLite file, 40 running at once, each
// send's worst case $0.02 against the route's $0.50 ceiling and taking 3
// s to answer: never more than 25 sends hold room together, as the
// counter in the file (read throughout) and the ledger show; every ask is
// answered (the others by the free p2), and what was spent is within the
// ceiling. 40 at once, not 100: on two cores under the race detector, 100
// starting together starve one another of the file's write lock past its
// busy timeout, and a process whose store times out runs on memory for
// the rest of its run (health is advisory), on a count of its own.
func TestAsk_ConcurrentProcessesHoldOneDailyCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("100 processes")
	}
	srv, vars := ceilingConfig(t, 3*time.Second, "")
	file := filepath.Join(filepath.Dir(vars["DETOUR_LEDGER"]), healthFile)
	watcher := sqlitestore.Open(file, sqlitestore.Options{})
	defer watcher.Close()
	stop := watchCeiling(t, watcher)
	var failed atomic.Int32
	var wg sync.WaitGroup
	alive := make(chan struct{}, 40)
	for range 100 {
		alive <- struct{}{}
		wg.Go(func() {
			defer func() { <-alive }()
			code, _, errOut := runDetour(t, vars, "ask", "--max-tokens", "100", "hi")
			if code != ExitOK {
				failed.Add(1)
				t.Logf("an ask failed: exit %d\n%s", code, errOut)
			}
			if strings.Contains(errOut, "health") {
				t.Logf("an ask's store: %s", errOut)
			}
		})
	}
	wg.Wait()
	top, reads := stop()
	if failed.Load() != 0 {
		t.Fatalf("%d asks failed", failed.Load())
	}
	recs, err := ledger.ReadFile(vars["DETOUR_LEDGER"])
	if err != nil {
		t.Fatal(err)
	}
	st := sqlitestore.Open(file, sqlitestore.Options{}) // afresh: the watcher's may have run on memory under the load
	defer st.Close()
	counter := readCounter(t, st)
	t.Logf("the counter in SQLite: at most $%.4f over %d reads (the watcher's store: %+v)", top, reads, watcher.Status())
	if top > ceilingUSD+health.ReserveSlack || reads == 0 {
		t.Errorf("the counter in SQLite reached $%g (%d reads), past the $%.2f ceiling", top, reads, ceilingUSD)
	}
	if n := checkCeiling(t, recs, counter); srv.Stats().Requests("p1", "m") != n {
		t.Errorf("the ledger shows %d sends to p1/m, the simulator counts %d", n, srv.Stats().Requests("p1", "m"))
	}
}

// readCounter is what the route's counter in rec holds now.
func readCounter(t *testing.T, rec health.Records) float64 {
	t.Helper()
	v, ok, err := rec.Get(ceilingKey())
	if err != nil || !ok {
		t.Fatalf("the route's counter: %q %v %v", v, ok, err)
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
