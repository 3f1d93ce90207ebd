package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	sim "github.com/detourhq/detour/simulate"
)

// run runs the detour command line with env vars and stdin; it returns the
// exit code, stdout and stderr.
func run(t *testing.T, vars map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	state := t.TempDir() // never the real state directory of whoever runs the tests
	code := Main(context.Background(), args, Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string {
			if v, ok := vars[k]; ok || k != "XDG_STATE_HOME" {
				return v
			}
			return state
		},
	})
	return code, out.String(), errb.String()
}

// fixture starts fake providers p1..p3 on loopback and writes a config whose
// route "default" chains them; p2 takes its key from P2_KEY.
func fixture(t *testing.T) (*sim.Server, map[string]string) {
	t.Helper()
	srv, err := sim.Start(sim.Provider{Name: "p1"}, sim.Provider{Name: "p2"}, sim.Provider{Name: "p3"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	cfg := fmt.Sprintf(`providers:
  p1: {base_url: %s, key_env: P1_KEY, pool: free}
  p2: {base_url: %s, key_env: P2_KEY, pool: credit}
  p3: {base_url: %s, key_env: P3_KEY, pool: prepaid}
targets:
  p1/m: {family: fam}
  p2/m: {family: fam}
  p3/other: {family: other}
routes:
  default:
    chain: [p1/m, p2/m, p3/other]
`, srv.BaseURL("p1"), srv.BaseURL("p2"), srv.BaseURL("p3"))
	path := filepath.Join(dir, "detour.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, map[string]string{
		"DETOUR_CONFIG": path, "DETOUR_LEDGER": filepath.Join(dir, "ledger.jsonl"),
		"P1_KEY": "k1", "P2_KEY": "k2", "P3_KEY": "k3",
	}
}

func TestAsk_AnswersAndPrintsHops(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.NoCredits})
	code, out, errOut := run(t, vars, "", "ask", "hello", "there")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "Hello from p2/m") {
		t.Errorf("stdout = %q, want p2's answer", out)
	}
	if !strings.Contains(errOut, "p1/m") || !strings.Contains(errOut, "http_402") || !strings.Contains(errOut, "answered by p2/m") {
		t.Errorf("stderr lacks the hop line or the answer line:\n%s", errOut)
	}
	recs, err := ledger.ReadFile(vars["DETOUR_LEDGER"])
	if err != nil || len(recs) != 2 || recs[0].Status != "http_402" || recs[1].Status != "ok" {
		t.Fatalf("ledger = %+v, %v; want the 402 then ok", recs, err)
	}
	if recs[0].Phase != "sent" || recs[1].Phase != "committed" {
		t.Fatalf("ledger phases = %q, %q; want sent, committed", recs[0].Phase, recs[1].Phase)
	}
}

func TestAsk_ReadsStdinAndPrintsJSON(t *testing.T) {
	_, vars := fixture(t)
	code, out, errOut := run(t, vars, "a prompt on stdin\n", "ask", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got askJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if got.Provider != "p1" || got.Model != "m" || got.Attempts != 1 || got.Degraded || got.Answer == "" ||
		!strings.Contains(out, `"phase":"committed"`) {
		t.Fatalf("json = %+v\n%s", got, out)
	}
}

// Rule 11: the caller learns the model that answered and that it was
// degraded (another family than the route's first), as JSON and as text.
func TestAsk_SaysWhenTheAnswerIsDegraded(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.NoCredits})
	srv.Enqueue("p2", "m", sim.Fault{Kind: sim.NoCredits})
	code, out, errOut := run(t, vars, "", "ask", "--json", "hello")
	var got askJSON
	if err := json.Unmarshal([]byte(out), &got); code != ExitOK || err != nil {
		t.Fatalf("exit %d, %v: %s\n%s", code, err, out, errOut)
	}
	if got.Provider != "p3" || got.Model != "other" || !got.Degraded {
		t.Fatalf("json = %+v, want p3/other, degraded", got)
	}
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.NoCredits})
	srv.Enqueue("p2", "m", sim.Fault{Kind: sim.NoCredits})
	code, _, errOut = run(t, vars, "", "ask", "hello")
	if code != ExitOK || !strings.Contains(errOut, "answered by p3/other") || !strings.Contains(errOut, "degraded") {
		t.Fatalf("exit %d, stderr does not say the answer was degraded:\n%s", code, errOut)
	}
}

func TestAsk_NoFallbackNeverSwapsAndExitsNonZero(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p2", "m", sim.Fault{Kind: sim.NoCredits})
	code, out, errOut := run(t, vars, "", "ask", "--start", "p2", "--no-fallback", "hi")
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFailed, errOut)
	}
	if out != "" {
		t.Errorf("stdout should be empty on failure, got %q", out)
	}
	st := srv.Stats()
	if st.Requests("p1", "") != 0 || st.Requests("p3", "") != 0 || st.Requests("p2", "") != 1 {
		t.Fatalf("requests p1=%d p2=%d p3=%d, want only one to p2", st.Requests("p1", ""), st.Requests("p2", ""), st.Requests("p3", ""))
	}
}

func TestAsk_FailClosedExitCode(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.BadRequest})
	code, _, errOut := run(t, vars, "", "ask", "hi")
	if code != ExitFailClosed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFailClosed, errOut)
	}
	if srv.Stats().Requests("p2", "") != 0 {
		t.Fatal("an invalid request was sent to another provider")
	}
}

func TestAsk_AllFailListsReasonsAndSkipsKeyless(t *testing.T) {
	srv, vars := fixture(t)
	delete(vars, "P2_KEY")
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.DailyQuota})
	srv.Enqueue("p3", "other", sim.Fault{Kind: sim.NoCredits})
	code, _, errOut := run(t, vars, "", "ask", "hi")
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d", code, ExitFailed)
	}
	for _, want := range []string{"1. p1/m", "2. p2/m", "P2_KEY is not set", "3. p3/other"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestAsk_ConfigErrorExitCode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "detour.yaml")
	os.WriteFile(path, []byte("routes:\n  default:\n    chain: [nosuch/model]\n"), 0o600)
	code, _, errOut := run(t, map[string]string{"DETOUR_CONFIG": path}, "", "ask", "hi")
	if code != ExitConfig {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitConfig, errOut)
	}
	if !strings.Contains(errOut, "detour.yaml:3") || !strings.Contains(errOut, "nosuch") {
		t.Errorf("config error should name file:line and the field:\n%s", errOut)
	}
}

func TestAsk_UsageErrors(t *testing.T) {
	_, vars := fixture(t)
	if code, _, _ := run(t, vars, "", "ask", "--bogus"); code != ExitUsage {
		t.Errorf("unknown flag: exit %d, want %d", code, ExitUsage)
	}
	if code, _, errOut := run(t, vars, "   ", "ask"); code != ExitUsage || !strings.Contains(errOut, "empty prompt") {
		t.Errorf("empty stdin: exit %d, stderr %q", code, errOut)
	}
}

func TestCheck_PrintsChainPoolsKeysAndWarnings(t *testing.T) {
	_, vars := fixture(t)
	delete(vars, "P3_KEY")
	code, out, errOut := run(t, vars, "", "check")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"route default", "p1/m", "pool free", "key set (P1_KEY)", "missing P3_KEY"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "k1") || strings.Contains(out, "k2") {
		t.Errorf("check printed a key value:\n%s", out)
	}
}

func TestCheck_WarnsOnOnePoolAndPaidBeforeFree(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "detour.yaml")
	os.WriteFile(path, []byte(`providers:
  a: {base_url: https://a.example/v1, key_env: A_KEY, pool: payg}
  b: {base_url: https://b.example/v1, key_env: B_KEY, pool: payg}
  c: {base_url: https://c.example/v1, key_env: C_KEY, pool: free}
targets:
  a/m: {price: {in: 1, out: 2}}
routes:
  same: {chain: [a/m, b/m]}
  order: {chain: [a/m, c/m]}
`), 0o600)
	code, out, errOut := run(t, map[string]string{"DETOUR_CONFIG": path, "A_KEY": "a-key-123456", "B_KEY": "b-key-123456", "C_KEY": "c-key-123456"}, "", "check")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "pool") || !strings.Contains(strings.ToLower(out), "free") {
		t.Fatalf("no pool warnings:\n%s", out)
	}
	warn := out[strings.Index(out, "warnings:"):]
	if !strings.Contains(warn, "same") || !strings.Contains(warn, "order") {
		t.Errorf("want a one-pool warning for route same and a paid-before-free one for route order:\n%s", warn)
	}
}

func TestDemo_RunsWithNoKeysAndNoConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("demo takes a few seconds")
	}
	code, out, errOut := run(t, map[string]string{}, "", "demo", "--requests", "12", "--latency-scale", "0.05", "--quiet")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"12 requests: 12 answered", "sends saved by parking", "ledger:"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo summary lacks %q:\n%s", want, out)
		}
	}
}

func prompt() *llm.Request {
	return &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}
}

// noSleep is a clock whose waits return at once.
type noSleep struct{}

func (noSleep) Now() time.Time                                  { return time.Now() }
func (noSleep) Sleep(ctx context.Context, _ time.Duration) bool { return ctx.Err() == nil }

func TestAsk_UsesTheHealthSection(t *testing.T) {
	for _, tt := range []struct {
		name, health, want string
	}{
		// the default breaker (3 failures in a row) lets the retry go to p1
		{"default breaker", "", "Hello from p1/m"},
		// one failure parks p1, so the retry is refused and p2 answers
		{"failure_threshold 1", "health:\n  failure_threshold: 1\n", "Hello from p2/m"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, vars := fixture(t)
			appendFile(t, vars["DETOUR_CONFIG"], tt.health)
			srv.Enqueue("p1", "m", sim.Fault{Kind: sim.ServerError})
			code, out, errOut := run(t, vars, "", "ask", "--ledger", "-", "hello")
			if code != ExitOK || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, stdout %q, want %q; stderr:\n%s", code, out, tt.want, errOut)
			}
		})
	}
}

// appendFile appends text to the file at path.
func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func TestCheck_ShowsLimitsAndBreaker(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "detour.yaml")
	if err := os.WriteFile(path, []byte(`providers:
  a: {base_url: https://a.example/v1, key_env: A_KEY, pool: free}
  b: {base_url: https://b.example/v1, key_env: B_KEY, pool: prepaid}
defaults:
  header_timeout: 10s
  idle_timeout: 0
health:
  failure_threshold: 5
  open_for: 30s
routes:
  tuned: {chain: [a/m, b/m], max_duration: 5m, buffered: true, over_buffer: fail_over}
  plain: {chain: [a/m, b/m], header_timeout: 0s, idle_timeout: 1m30s, budget: {profile: batch, deadline: 1m, reserve: 10s}}
  thinking: {chain: [a/m, b/think]}
targets:
  b/think: {offers: [reasoning]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"DETOUR_CONFIG": path, "A_KEY": "a-key-123456", "B_KEY": "b-key-123456"}
	code, out, errOut := run(t, vars, "", "check")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"breaker (health:): parks a target 30s after 5 failures in a row, 5m after a wall with no reset named (at most 24h); probe timeout 2m",
		"limits: deadline 1m (reserve 10s), max_retry_wait 5s, header_timeout 10s, first_token 15s, idle_timeout none, max_duration 5m, buffered (max_buffer 4 MiB, then fail_over)\n",
		"limits: deadline 1m (reserve 10s), max_retry_wait 1m, header_timeout none, first_token 15s, idle_timeout 1m30s, max_duration none\n",
		"limits: deadline 1m (reserve 10s), max_retry_wait 5s, header_timeout 10s, first_token 15s (1m30s for reasoning models), idle_timeout none, max_duration none\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = run(t, vars, "", "check", "--json")
	if code != ExitOK {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	wantBreaker := checkBreaker{FailureThreshold: 5, OpenFor: "30s", WallCooldown: "5m", MaxPark: "24h", ProbeTimeout: "2m"}
	if rep.Breaker != wantBreaker {
		t.Errorf("breaker %+v, want %+v", rep.Breaker, wantBreaker)
	}
	wantTuned := checkTimeouts{Deadline: "1m", Reserve: "10s", MaxRetryWait: "5s", Header: "10s", FirstToken: "15s", Idle: "none", MaxDuration: "5m", Buffered: true,
		MaxBuffer: "4 MiB", OverBuffer: "fail_over"}
	if len(rep.Routes) != 3 || rep.Routes[2].Name != "tuned" || rep.Routes[2].Timeouts != wantTuned {
		t.Errorf("routes %+v, want route tuned with timeouts %+v", rep.Routes, wantTuned)
	}
}
