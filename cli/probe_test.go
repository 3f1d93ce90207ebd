package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/health/sqlitestore"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/probe"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

// From outside, as a user runs it: a wall parks p1 in health.db, `detour
// probe` reads p1's model list (no chat request) and releases it, and the
// next `detour ask` goes to p1 first.
func TestProbe_ReleasesAParkedHeadAcrossRuns(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.Unauthorized}) // the key refused once: a wall
	for run := 1; run <= 2; run++ {
		if code, out, errOut := runDetour(t, vars, "ask", "hello"); code != ExitOK || !strings.Contains(out, "Hello from p2/m") {
			t.Fatalf("ask %d: exit %d, stdout %q, stderr:\n%s", run, code, out, errOut)
		}
	}
	chats := srv.Stats().Requests("p1", "")
	code, out, errOut := runDetour(t, vars, "probe")
	if code != ExitOK || !strings.Contains(out, "p1/m") || !strings.Contains(out, "(released)") {
		t.Fatalf("probe: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if st := srv.Stats(); st.Requests("p1", "") != chats || st.ModelReads("p1") == 0 {
		t.Fatalf("probe sent %d chat requests and %d model reads to p1; want none and some",
			st.Requests("p1", "")-chats, st.ModelReads("p1"))
	}
	if code, out, errOut := runDetour(t, vars, "ask", "hello"); code != ExitOK || !strings.Contains(out, "Hello from p1/m") {
		t.Fatalf("ask after the probe: exit %d, stdout %q (want p1 first again), stderr:\n%s", code, out, errOut)
	}
	recs, err := ledger.ReadFile(vars["DETOUR_LEDGER"])
	if err != nil {
		t.Fatal(err)
	}
	probes := 0
	for _, r := range recs {
		if r.Status == ledger.StatusProbeOK {
			probes++
		}
	}
	if probes != 3 { // p1/m, p2/m, p3/other
		t.Fatalf("%d probe_ok records, want 3 (one per target)", probes)
	}
}

// --json prints one object per round; command-line mistakes exit 2.
func TestProbe_JSONAndUsageErrors(t *testing.T) {
	_, vars := fixture(t)
	vars["P2_KEY"] = "" // p2 has no key: nothing sent, a note
	code, out, errOut := runDetour(t, vars, "probe", "--json")
	if code != ExitOK {
		t.Fatalf("probe --json: exit %d\n%s\n%s", code, out, errOut)
	}
	var round struct {
		Checks []struct {
			Target, Method, Status, Note, After string
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &round); err != nil || len(round.Checks) != 3 {
		t.Fatalf("probe --json output %q: %v", out, err)
	}
	for _, c := range round.Checks {
		if c.Target == "p2/m" && (c.Method != "none" || !strings.Contains(c.Note, "P2_KEY")) {
			t.Errorf("p2/m without a key: %+v, want nothing sent and a note naming P2_KEY", c)
		}
		if c.Target == "p1/m" && (c.Method != "metadata" || c.Status != "probe_ok" || c.After != "closed") {
			t.Errorf("p1/m: %+v, want a metadata read, ok, closed", c)
		}
	}
	if code, _, _ := runDetour(t, vars, "probe", "--route", "nosuch"); code != ExitUsage {
		t.Fatalf("probe --route nosuch: exit %d, want %d", code, ExitUsage)
	}
	if code, _, errOut := runDetour(t, vars, "probe", "--every", "1m"); code != ExitUsage || !strings.Contains(errOut, "--watch") {
		t.Fatalf("probe --every without --watch: exit %d, stderr %q", code, errOut)
	}
}

// check flags a route whose head has been parked for a day or more.
func TestCheck_FlagsARouteWhoseHeadStaysParked(t *testing.T) {
	_, vars := fixture(t)
	path := filepath.Join(filepath.Dir(vars["DETOUR_LEDGER"]), healthFile)
	st := sqlitestore.Open(path, sqlitestore.Options{})
	b := health.NewWithStore(health.Settings{MaxPark: 72 * time.Hour}, st)
	now := time.Now()
	b.Park("p1/m", now.Add(time.Hour), "daily quota exhausted", now.Add(-50*time.Hour))
	st.Close()
	code, out, errOut := runDetour(t, vars, "check")
	if code != ExitOK || !strings.Contains(out, "route default: its head p1/m has been parked since") || !strings.Contains(out, "2d 2h") {
		t.Fatalf("check: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, _ = runDetour(t, vars, "check", "--json")
	var rep struct {
		Stale []struct{ Route, Head, Key string } `json:"stale_routes"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK || len(rep.Stale) != 1 || rep.Stale[0].Head != "p1/m" {
		t.Fatalf("check --json stale_routes = %+v (%v), want p1/m's route", rep.Stale, err)
	}
}

// serve's background loop: on its round it releases a parked head of the
// routes the gateway serves now, and logs it.
func TestProbeLoop_ReleasesInTheBackground(t *testing.T) {
	srv, vars := fixture(t)
	cfg, err := config.Open(vars["DETOUR_CONFIG"], func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Probe.Every = time.Hour // the next round is far: one round runs in the test
	routes, err := cfg.Build(config.BuildOptions{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	hb := health.New(health.Settings{})
	now := time.Now()
	hb.Park("p1/m", now.Add(time.Hour), "probe test", now)
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		probeLoop(ctx, &probe.Prober{Health: hb}, 10*time.Millisecond,
			func() (*config.Config, map[string]*router.Route) { return cfg, routes }, log)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for hb.Get("p1/m", time.Now()).State != health.Closed {
		if time.Now().After(deadline) {
			t.Fatal("the background probe did not release p1/m within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "target back in service") || srv.Stats().ModelReads("p1") == 0 {
		t.Fatalf("log %q, model reads %d: want the release logged and p1's list read", logs.String(), srv.Stats().ModelReads("p1"))
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// report names a route whose head has been walled for a day, in the table
// and in --json.
func TestReport_FlagsAStaleHead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.jsonl")
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var lines []string
	add := func(r ledger.Record) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	add(ledger.Record{Time: t0, Route: "default", Provider: "free", Model: "m", Status: "http_429", Kind: "wall", Reason: "tokens per day exhausted"})
	for h := 1; h <= 26; h++ {
		at := t0.Add(time.Duration(h) * time.Hour)
		add(ledger.Record{Time: at, Route: "default", Provider: "free", Model: "m", Status: ledger.StatusSkippedParked})
		add(ledger.Record{Time: at, Route: "default", Provider: "paid", Model: "m", Hop: 1, Failover: true, Attempt: 1, Status: "ok"})
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, nil, "", "report", path)
	if code != ExitOK || !strings.Contains(out, "routes that stay degraded") || !strings.Contains(out, "route default: its head free/m") {
		t.Fatalf("report: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, _ = run(t, nil, "", "report", "--json", path)
	var r struct {
		Flags []struct{ Route, Head, Why string } `json:"flags"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != ExitOK || len(r.Flags) != 1 || r.Flags[0].Why != "walled" {
		t.Fatalf("report --json flags = %+v (%v)", r.Flags, err)
	}
}
