package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clobberCase is a command line that names one file twice, once to read
// (or to write) and once to write, spelled so that the paths differ.
type clobberCase struct {
	name string
	// setup makes the links the case needs in dir and returns the
	// command line, run in dir.
	setup func(t *testing.T, dir string) []string
}

// link makes newname a hard link to oldname, or with soft a symbolic one,
// both in dir.
func link(t *testing.T, dir, oldname, newname string, soft bool) {
	t.Helper()
	var err error
	if soft {
		err = os.Symlink(oldname, filepath.Join(dir, newname)) // relative to dir, as ln -s writes it
	} else {
		err = os.Link(filepath.Join(dir, oldname), filepath.Join(dir, newname))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// runRefused runs `detour args...` as a process in dir and returns its
// exit code and stderr. A refusal is at once: a process still running
// after 30 s (serve listening, a run that locked itself) is killed and
// its exit code is -1.
func runRefused(t *testing.T, dir string, vars map[string]string, args ...string) (int, string) {
	t.Helper()
	cmd := detourCmd(t, vars, args...)
	cmd.Dir = dir
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer kill.Stop()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, errb.String()
}

// refusesEach runs each case as a real detour process in a directory of
// its own (made by fill, with vars made for it) and wants it refused: a
// usage error naming the two files, and every file of keep (names in
// dir) byte for byte as it was.
func refusesEach(t *testing.T, cases []clobberCase, fill func(t *testing.T) (dir string, vars map[string]string), keep ...string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, vars := fill(t)
			args := tc.setup(t, dir)
			before := map[string][]byte{}
			for _, k := range keep {
				b, err := os.ReadFile(filepath.Join(dir, k))
				if err != nil || len(b) == 0 {
					t.Fatalf("%s: %v (%d bytes): the case needs it whole", k, err, len(b))
				}
				before[k] = b
			}
			code, errOut := runRefused(t, dir, vars, args...)
			if code != ExitUsage || !strings.Contains(errOut, "are one file") {
				t.Errorf("detour %s: exit %d, want %d with \"are one file\"; stderr:\n%s", strings.Join(args, " "), code, ExitUsage, errOut)
			}
			for _, k := range keep {
				if b, _ := os.ReadFile(filepath.Join(dir, k)); !bytes.Equal(b, before[k]) {
					t.Errorf("%s changed: %d bytes before, %d after", k, len(before[k]), len(b))
				}
			}
		})
	}
}

// batchDir is a directory with detour.yaml (vars' config), in.jsonl (two
// items) and ledger.jsonl (vars' ledger, one line).
func batchDir(t *testing.T) (string, map[string]string) {
	_, _, vars, dir := batchFixture(t)
	writeItems(t, dir, 2)
	line := `{"ts":"2026-01-02T03:04:05Z","route":"default","target":"p1/m","status":"ok"}` + "\n"
	if err := os.WriteFile(vars["DETOUR_LEDGER"], []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, vars
}

// The issue's finding: `ln in.jsonl out.jsonl; detour batch in.jsonl -o
// out.jsonl` cut the input to 0 bytes and exited 0. Every spelling of one
// file is refused before anything is opened for writing.
func TestBatch_RefusesAnOutputThatIsAnInput(t *testing.T) {
	cases := []clobberCase{
		{"-o a hard link to the input", func(t *testing.T, dir string) []string {
			link(t, dir, "in.jsonl", "out.jsonl", false)
			return []string{"batch", "in.jsonl", "-o", "out.jsonl"}
		}},
		{"-o a symbolic link to the input", func(t *testing.T, dir string) []string {
			link(t, dir, "in.jsonl", "out.jsonl", true)
			return []string{"batch", "in.jsonl", "-o", "out.jsonl"}
		}},
		{"-o the input spelled ./", func(t *testing.T, dir string) []string {
			return []string{"batch", "in.jsonl", "-o", "./in.jsonl"}
		}},
		{"-o the input through a directory symlink", func(t *testing.T, dir string) []string {
			link(t, dir, ".", "d", true)
			return []string{"batch", "in.jsonl", "-o", "d/in.jsonl"}
		}},
		{"-o a symbolic link to the ledger", func(t *testing.T, dir string) []string {
			link(t, dir, "ledger.jsonl", "out.jsonl", true)
			return []string{"batch", "in.jsonl", "-o", "out.jsonl"}
		}},
		{"-o a hard link to the config", func(t *testing.T, dir string) []string {
			link(t, dir, "detour.yaml", "out.jsonl", false)
			return []string{"batch", "in.jsonl", "-o", "out.jsonl"}
		}},
		{"--ledger the input", func(t *testing.T, dir string) []string {
			return []string{"batch", "in.jsonl", "-o", "out.jsonl", "--ledger", "./in.jsonl"}
		}},
	}
	refusesEach(t, cases, batchDir, "in.jsonl", "ledger.jsonl", "detour.yaml")
}

// report --html over a ledger it reads replaced the ledger with the page.
func TestReport_RefusesAnHTMLFileThatIsALedgerItReads(t *testing.T) {
	cases := []clobberCase{
		{"--html the ledger", func(t *testing.T, dir string) []string {
			return []string{"report", "ledger.jsonl", "--html", "ledger.jsonl", "-q"}
		}},
		{"--html a hard link to the ledger", func(t *testing.T, dir string) []string {
			link(t, dir, "ledger.jsonl", "r.html", false)
			return []string{"report", "ledger.jsonl", "--html", "r.html", "-q"}
		}},
		{"--html a symbolic link to the ledger", func(t *testing.T, dir string) []string {
			link(t, dir, "ledger.jsonl", "r.html", true)
			return []string{"report", "./ledger.jsonl", "--html", "r.html", "-q"}
		}},
		{"--html the ledger through a directory symlink", func(t *testing.T, dir string) []string {
			link(t, dir, ".", "d", true)
			return []string{"report", "ledger.jsonl", "--html", "d/ledger.jsonl"}
		}},
		{"--html the default ledger, read with no argument", func(t *testing.T, dir string) []string {
			return []string{"report", "--html", "./ledger.jsonl"}
		}},
		{"--html one ledger of a glob", func(t *testing.T, dir string) []string {
			return []string{"report", "*.jsonl", "--html", "in.jsonl"}
		}},
	}
	refusesEach(t, cases, batchDir, "ledger.jsonl", "in.jsonl")
}

// evalDir is batchDir with the suite sums.yaml.
func evalDir(t *testing.T) (string, map[string]string) {
	dir, vars := batchDir(t)
	evalSuite(t, dir, false)
	return dir, vars
}

// eval writes --results, --proposal and the ledger; it reads --suite and
// the config.
func TestEval_RefusesOutputsThatAreItsInputsOrEachOther(t *testing.T) {
	eval := func(more ...string) []string {
		return append([]string{"eval", "--suite", "sums.yaml", "--targets", "p1/m", "--reps", "1"}, more...)
	}
	cases := []clobberCase{
		{"--results a hard link to the suite", func(t *testing.T, dir string) []string {
			link(t, dir, "sums.yaml", "r.jsonl", false)
			return eval("--results", "r.jsonl")
		}},
		{"--proposal the config", func(t *testing.T, dir string) []string {
			return eval("--results", "r.jsonl", "--proposal", "./detour.yaml")
		}},
		{"--proposal a hard link to the config", func(t *testing.T, dir string) []string {
			link(t, dir, "detour.yaml", "p.yaml", false)
			return eval("--results", "r.jsonl", "--proposal", "p.yaml")
		}},
		{"--proposal a symbolic link to the suite", func(t *testing.T, dir string) []string {
			link(t, dir, "sums.yaml", "p.yaml", true)
			return eval("--results", "r.jsonl", "--proposal", "p.yaml")
		}},
		{"--results the ledger", func(t *testing.T, dir string) []string {
			return eval("--results", "ledger.jsonl")
		}},
		{"--proposal the new --results", func(t *testing.T, dir string) []string {
			return eval("--results", "new.jsonl", "--proposal", "./new.jsonl")
		}},
	}
	refusesEach(t, cases, evalDir, "sums.yaml", "detour.yaml", "ledger.jsonl")
}

// ask, probe and serve append the ledger: never to the config they read.
func TestLedger_RefusedWhenItIsTheConfig(t *testing.T) {
	cases := []clobberCase{
		{"ask --ledger the config", func(t *testing.T, dir string) []string {
			return []string{"ask", "--ledger", "./detour.yaml", "hi"}
		}},
		{"probe --ledger a symbolic link to the config", func(t *testing.T, dir string) []string {
			link(t, dir, "detour.yaml", "l.jsonl", true)
			return []string{"probe", "--ledger", "l.jsonl"}
		}},
		{"serve --ledger a hard link to the config", func(t *testing.T, dir string) []string {
			link(t, dir, "detour.yaml", "l.jsonl", false)
			return []string{"serve", "--listen", "127.0.0.1:0", "--ledger", "l.jsonl"}
		}},
	}
	refusesEach(t, cases, batchDir, "detour.yaml")
}

// Two lines with one id gave two result lines with one id. The file is
// refused before any send (nothing billed), naming both lines, and no
// output is made.
func TestBatch_RefusesRepeatedIDsBeforeAnySend(t *testing.T) {
	_, sends, vars, dir := batchFixture(t)
	in := filepath.Join(dir, "in.jsonl")
	body := `{"id":"item-1","prompt":"Say hello to item-1."}
{"id":"item-2","prompt":"Say hello to item-2."}
{"id":"item-1","prompt":"Say hello again to item-1."}
`
	if err := os.WriteFile(in, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	code, errOut := runRefused(t, dir, vars, "batch", "in.jsonl", "-o", "out.jsonl")
	if code != ExitUsage || !strings.Contains(errOut, `line 3 repeats "item-1" of line 1`) || !strings.Contains(errOut, "nothing was sent") {
		t.Fatalf("exit %d, want %d naming lines 1 and 3; stderr:\n%s", code, ExitUsage, errOut)
	}
	if n := len(sends.counts()); n != 0 {
		t.Fatalf("%d item(s) reached a provider, want none: %v", n, sends.counts())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("the output was made (%v), want none", err)
	}
}
