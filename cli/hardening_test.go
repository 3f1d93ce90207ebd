package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/policy"
	sim "github.com/detourhq/detour/simulate"
)

func TestAsk_StartThatNamesNoCandidateIsAUsageError(t *testing.T) {
	srv, vars := fixture(t)
	code, out, errOut := run(t, vars, "", "ask", "--start", "nosuch", "hi")
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitUsage, errOut)
	}
	want := `detour: --start "nosuch": route "default" has no such candidate; name a provider or provider/model of its chain: p1/m, p2/m, p3/other`
	if !strings.Contains(errOut, want) || out != "" {
		t.Errorf("stdout %q, stderr:\n%s\nwant it to say: %s", out, errOut, want)
	}
	for _, p := range []string{"p1", "p2", "p3"} {
		if n := srv.Stats().Requests(p, ""); n != 0 {
			t.Errorf("%s got %d requests; a command-line mistake sends none", p, n)
		}
	}
	// A provider and a provider/model of the chain are both accepted.
	for _, start := range []string{"p2", "p3/other"} {
		if code, _, errOut := run(t, vars, "", "ask", "--start", start, "hi"); code != ExitOK {
			t.Errorf("--start %s: exit %d: %s", start, code, errOut)
		}
	}
}

// snakeKey matches a snake_case JSON key.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// keysOf returns every object key in the JSON document doc, nested ones
// included.
func keysOf(t *testing.T, doc string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	var keys []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				keys = append(keys, k)
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	return keys
}

func TestAsk_JSONKeysAreSnakeCase(t *testing.T) {
	srv, vars := fixture(t)
	srv.Enqueue("p1", "m", sim.Fault{Kind: sim.NoCredits})
	srv.Enqueue("p2", "m", sim.Fault{Kind: sim.NoCredits})
	srv.Enqueue("p3", "other", sim.Fault{Kind: sim.NoCredits})
	code, out, _ := run(t, vars, "", "ask", "--json", "hi")
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d", code, ExitFailed)
	}
	keys := keysOf(t, out)
	for _, want := range []string{"error", "kind", "phase", "candidates", "target", "status", "scope", "sends", "reason"} {
		if !strings.Contains(" "+strings.Join(keys, " ")+" ", " "+want+" ") {
			t.Errorf("failure JSON lacks key %q:\n%s", want, out)
		}
	}
	vars["DETOUR_HEALTH_STORE"] = "-" // a run that does not know the walls above, so it is answered
	code, answer, errOut := run(t, vars, "", "ask", "--json", "hi")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(answer, `"phase":"committed"`) {
		t.Errorf("answer JSON lacks phase committed:\n%s", answer)
	}
	for _, k := range append(keys, keysOf(t, answer)...) {
		if !snakeKey.MatchString(k) {
			t.Errorf("key %q is not snake_case in:\n%s\n%s", k, out, answer)
		}
	}
}

// writeConfig writes src as detour.yaml in a new directory and returns
// its path.
func writeConfig(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "detour.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheck_JSONReportsConfigErrorsAsJSON(t *testing.T) {
	path := writeConfig(t, "routes:\n  default:\n    chain: [nosuch/model]\n    budget: {deadline: 5s}\n")
	code, out, errOut := run(t, map[string]string{"DETOUR_CONFIG": path}, "", "check", "--json")
	if code != ExitConfig {
		t.Fatalf("exit %d, want %d", code, ExitConfig)
	}
	if errOut != "" {
		t.Errorf("stderr should stay empty with --json, got %q", errOut)
	}
	var got checkFailure
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if got.Config != path || len(got.Errors) != 2 {
		t.Fatalf("report %+v, want config %s and 2 errors", got, path)
	}
	e := got.Errors[0]
	if e.File != path || e.Line != 3 || e.Column != 13 || e.Field != "routes.default.chain[0]" ||
		!strings.HasPrefix(e.Message, `unknown provider "nosuch"`) || e.Text != path+":3:13: routes.default.chain[0]: "+e.Message {
		t.Errorf("error %+v", e)
	}
	if e := got.Errors[1]; e.Line != 4 || e.Field != "routes.default.budget.deadline" || !strings.Contains(e.Message, "reserve 10s") {
		t.Errorf("error %+v, want the reserve at line 4", e)
	}
	// Without --json the same problems go to stderr as text.
	code, out, errOut = run(t, map[string]string{"DETOUR_CONFIG": path}, "", "check")
	if code != ExitConfig || out != "" || !strings.Contains(errOut, got.Errors[0].Text) || !strings.Contains(errOut, got.Errors[1].Text) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	// A file that cannot be read is one problem, without a line.
	code, out, _ = run(t, map[string]string{"DETOUR_CONFIG": filepath.Join(t.TempDir(), "none.yaml")}, "", "check", "--json")
	var missing checkFailure
	if err := json.Unmarshal([]byte(out), &missing); code != ExitConfig || err != nil || len(missing.Errors) != 1 ||
		missing.Errors[0].Line != 0 || !strings.Contains(missing.Errors[0].Message, "none.yaml") {
		t.Errorf("exit %d, %v: %s", code, err, out)
	}
}

func TestCheck_JSONReportHasNoErrors(t *testing.T) {
	_, vars := fixture(t)
	code, out, errOut := run(t, vars, "", "check", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &rep); err != nil || string(rep["errors"]) != "[]" {
		t.Errorf("errors = %s, %v; want []", rep["errors"], err)
	}
}

// TestCheckAndServe_RefuseTheSameConfigs runs each config serve refuses
// through check, which must refuse it too, with the same words.
func TestCheckAndServe_RefuseTheSameConfigs(t *testing.T) {
	srv, err := sim.Start(sim.Provider{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	remote := "providers:\n  r: {base_url: https://api.example.com/v1, key_env: R_KEY}\n  p: {base_url: " + srv.BaseURL("p") +
		", key_env: P_KEY}\nroutes:\n  default: {chain: [p/m, r/m]}\n"
	tests := []struct {
		name, src string
		vars      map[string]string
		say       string // in check's message and serve's
	}{
		{"a client key variable that is unset", remote + "gateway:\n  keys:\n    app: {key_env: DETOUR_KEY_APP}\n",
			map[string]string{"R_KEY": "r-key-123456"}, "DETOUR_KEY_APP is not set (export it, or give the key's sha256 instead)"},
		{"a provider key too short to redact", remote, map[string]string{"R_KEY": "r"},
			"R_KEY holds a key of 1 character, and no real provider key is shorter than 8"},
		{"a public address without client keys", remote + "gateway: {listen: \"0.0.0.0:8787\"}\n",
			map[string]string{"R_KEY": "r-key-123456"}, "refusing to listen on 0.0.0.0:8787 without client keys"},
		{"a header value with CR LF", "providers:\n  p: {base_url: " + srv.BaseURL("p") +
			", headers: {X-Title: \"a\\r\\nX-Evil: 1\"}}\nroutes:\n  default: {chain: [p/m]}\n",
			nil, "holds a carriage return (CR, \\r) at byte 2"},
		{"a reserve past the deadline", remote + "defaults:\n  budget: {deadline: 10s, reserve: 20s}\n",
			nil, "budget reserve 20s is not below the deadline 10s"},
		{"a file nested past the limit", "routes: " + strings.Repeat("[", 100_000) + "\n", nil, "past the most a config may nest (64 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"DETOUR_CONFIG": writeConfig(t, tt.src), "P_KEY": "dummy"}
			for k, v := range tt.vars {
				vars[k] = v
			}
			code, _, checkErr := run(t, vars, "", "check")
			if code != ExitConfig || !strings.Contains(checkErr, tt.say) {
				t.Errorf("check: exit %d, want %d, saying %q:\n%s", code, ExitConfig, tt.say, checkErr)
			}
			// serve must refuse at once; should it start, the timeout stops it.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var serveOut, serveErrB bytes.Buffer
			code = Main(ctx, []string{"serve", "--ledger", "-"}, Env{Stdin: strings.NewReader(""), Stdout: &serveOut,
				Stderr: &serveErrB, Getenv: func(k string) string { return vars[k] }})
			serveErr := serveErrB.String()
			if code != ExitConfig || !strings.Contains(serveErr, tt.say) {
				t.Errorf("serve: exit %d, want %d, saying %q:\n%s", code, ExitConfig, tt.say, serveErr)
			}
		})
	}
}

func TestParkTime(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		until time.Time
		want  string
	}{
		{now.Add(5*time.Minute + 3*time.Second), "22:05:03 UTC (in 5m3s)"},
		{now.Add(23*time.Hour + 59*time.Minute), "21:59:00 UTC (in 23h59m0s)"},
		{now.Add(25*time.Hour + 54*time.Minute + 12*time.Second), "2026-12-02 23:54:12 UTC (in 25h54m12s)"},
		{now.Add(-48 * time.Hour), "2026-11-29 22:00:00 UTC (48h0m0s ago)"},
		{now.In(time.FixedZone("CET", 3600)).Add(30 * 24 * time.Hour), "2026-12-31 22:00:00 UTC (in 720h0m0s)"},
		{now, "22:00:00 UTC"},
	} {
		if got := parkTime(tt.until, now); got != tt.want {
			t.Errorf("parkTime(%v) = %q, want %q", tt.until, got, tt.want)
		}
	}
}

func TestExplain_FarParkShowsItsDate(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	until := now.Add(26 * time.Hour)
	var b strings.Builder
	printExplanation(&b, &Explanation{Kind: classify.Wall, Status: "http_429", ParkUntil: &until,
		Action: string(policy.Fallback), Why: "wall", Reason: "tokens per day"}, now)
	if !strings.Contains(b.String(), "parked:  until 2026-12-03 00:00:00 UTC (in 26h0m0s)\n") {
		t.Errorf("output:\n%s", b.String())
	}
}
