package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The demo writes its ledger by default, anew each run, in the state
// directory, and ends with the commands to run next: report on that
// ledger, then sim. --ledger - writes none and proposes no report.
func TestDemo_WritesItsLedgerAndSaysWhatToRunNext(t *testing.T) {
	state := t.TempDir()
	vars := map[string]string{"XDG_STATE_HOME": state}
	path := filepath.Join(state, "detour", demoLedgerFile)
	lines := regexp.MustCompile(`ledger: (\d+) lines`)
	for i := range 2 {
		code, out, errOut := run(t, vars, "", "demo", "--requests", "3", "--latency-scale", "0.05", "-q")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		m := lines.FindStringSubmatch(out)
		b, err := os.ReadFile(path)
		if m == nil || err != nil {
			t.Fatalf("run %d: %v; summary:\n%s", i, err, out)
		}
		if n, _ := strconv.Atoi(m[1]); n == 0 || strings.Count(string(b), "\n") != n {
			t.Errorf("run %d: %s holds %d lines, the summary says %s", i, path, strings.Count(string(b), "\n"), m[1])
		}
		_, next, _ := strings.Cut(out, "Next:\n")
		if !strings.Contains(next, " report "+path+" ") || !strings.Contains(next, " sim ") {
			t.Errorf("run %d: the commands to run next lack report %s and sim:\n%s", i, path, next)
		}
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, vars, "", "demo", "--requests", "2", "--latency-scale", "0.05", "-q", "--ledger", "-")
	if _, err := os.Stat(path); code != 0 || err == nil || strings.Contains(out, " report ") || !strings.Contains(out, " sim ") {
		t.Errorf("--ledger -: exit %d, file %v, summary:\n%s", code, err, out)
	}
}
