package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/detourhq/detour/bench/ledgergen"
	"github.com/detourhq/detour/report"
)

// oneOffLedger writes a ledger of lines lines, oneOff of them naming a
// target of their own (bench/ledgergen), and returns its path and bytes.
func oneOffLedger(t *testing.T, lines, oneOff int) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	if _, err := ledgergen.Write(&b, ledgergen.Options{Lines: lines, OneOff: oneOff, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ledger.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, b.Bytes()
}

// reportJSON runs `detour report --json args...` as a process, with stdin
// (a pipe) when not nil, and decodes its output.
func reportJSON(t *testing.T, stdin []byte, args ...string) report.Report {
	t.Helper()
	cmd := detourCmd(t, nil, append([]string{"report", "--json"}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin) // through a pipe: no file to read again
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("report --json %v: %v: %s", args, err, errb.String())
	}
	var r report.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("report --json %v: %v", args, err)
	}
	return r
}

// Issue 30: a ledger of 200,000 targets took gigabytes, every target a row.
// Past --top, the rest are one "other" row, last, that says how many it
// folds, in the table, the JSON, the CSV and the HTML, from a file or a
// pipe alike, and every total stays what it was.
func TestReport_TopFoldsTheRestIntoOneRow(t *testing.T) {
	path, data := oneOffLedger(t, 1500, 200)
	all := reportJSON(t, nil, "--top", "0", path)
	calls := 0
	for _, x := range all.Targets {
		calls += x.Calls
	}
	folds := len(all.Targets) - 5
	label := "(other: " + strconv.Itoa(folds) + " targets)" // fewer than 1,000: no comma

	for _, r := range []report.Report{reportJSON(t, nil, "--top", "5", path), reportJSON(t, data, "--top", "5", "-")} {
		got := 0
		for _, x := range r.Targets {
			got += x.Calls
		}
		f := r.Folded
		if len(r.Targets) != 6 || !r.Targets[5].Other || r.Targets[5].Target != label || got != calls ||
			f == nil || f.Targets == nil || f.Targets.N != folds || f.Targets.Approx || r.Top != 5 {
			t.Errorf("--top 5: %d rows, last %q, %d calls, folded %+v; want 6, %q, %d, %d folded exactly",
				len(r.Targets), r.Targets[len(r.Targets)-1].Target, got, f, label, calls, folds)
		}
	}

	code, out, errs := runDetour(t, nil, "report", "--top", "5", path)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, label) {
			rows++
		}
	}
	if rows != 2 || !strings.Contains(out, "past the 5 with the most lines (--top)") {
		t.Errorf("text: want the other row and its note:\n%s", out)
	}
	assertWidth(t, out)

	code, out, errs = runDetour(t, nil, "report", "--csv", "--top", "5", path)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != ExitOK || len(lines) != 7 || !strings.HasPrefix(lines[6], label+",") {
		t.Errorf("csv: exit %d, %d lines, want 7 ending with the other row: %s%s", code, len(lines), out, errs)
	}

	page := filepath.Join(t.TempDir(), "r.html")
	if code, _, errs := runDetour(t, nil, "report", "--top", "5", "--html", page, "-q", path); code != ExitOK {
		t.Fatalf("html: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(page); !bytes.Contains(b, []byte(label)) || !bytes.Contains(b, []byte("targets folded")) {
		t.Errorf("the page lacks the other row or its count")
	}

	if code, _, errs := runDetour(t, nil, "report", "--top", "-1", path); code != ExitUsage || !strings.Contains(errs, "--top -1") {
		t.Errorf("--top -1: exit %d: %s", code, errs)
	}
}
