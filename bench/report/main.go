// Command report measures `detour report` on a large ledger, `make
// bench-report`: it writes a ledger of -mb megabytes with -targets one-off
// targets (bench/ledgergen), then runs the real binary once per output
// format under /usr/bin/time -v and prints, per format, the wall time and
// the peak resident memory (max RSS) as a markdown table. Issue 30 found
// 1.2 GB (text), 2.2 GB (--json) and 4.5 GB in 82 s (--html) for 91 MB and
// 200,000 targets; the bound is 10 s and 200 MB for every format.
//
//	go run ./bench/report                          # 100 MB, 200,000 targets
//	go run ./bench/report -bin /tmp/old/detour     # an earlier build, for before/after
//	go run ./bench/report -mb 20 -formats text,json
//
// The binary is built into a temporary directory (unless -bin names one),
// which is removed at the end with the ledger (-keep keeps both).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/bench/ledgergen"
)

// formats are the outputs of detour report, by name: the arguments that
// select each, before the ledger's path. "stdin" reads the ledger from a
// pipe rather than by name.
var formats = []struct{ name, args string }{
	{"text", ""},
	{"json", "--json"},
	{"csv", "--csv"},
	{"by-hour", "--by hour"},
	{"by-hour-json", "--by hour --json"},
	{"by-day-csv", "--by day --csv"},
	{"html", "--html OUT -q"},
	{"stdin", "-"},
}

func main() {
	mb := flag.Int("mb", 100, "ledger size in megabytes (10^6 bytes)")
	targets := flag.Int("targets", 200_000, "one-off targets in the ledger (each on a line of its own)")
	bin := flag.String("bin", "", "the detour binary to measure; empty builds this checkout's")
	only := flag.String("formats", "", "comma-separated formats to run (default all: "+names()+")")
	keep := flag.Bool("keep", false, "keep the temporary directory (binary, ledger, outputs)")
	flag.Parse()
	if err := run(*mb, *targets, *bin, *only, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench/report:", err)
		os.Exit(1)
	}
}

func names() string {
	var n []string
	for _, f := range formats {
		n = append(n, f.name)
	}
	return strings.Join(n, ",")
}

func run(mb, targets int, bin, only string, keep bool) error {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		return errors.New("/usr/bin/time is missing: install GNU time (Debian's package time)")
	}
	dir, err := os.MkdirTemp("", "bench-report-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if bin == "" {
		bin = filepath.Join(dir, "detour")
		build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/detour")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build (run from the module's root): %w", err)
		}
	}
	ledgerPath := filepath.Join(dir, "ledger.jsonl")
	size, lines, err := writeLedger(ledgerPath, int64(mb)*1_000_000, targets)
	if err != nil {
		return err
	}
	fmt.Printf("ledger: %.1f MB, %d lines, %d one-off targets; binary %s\n\n", float64(size)/1e6, lines, targets, bin)
	fmt.Println("| format | arguments | wall s | max RSS MB | exit |")
	fmt.Println("|---|---|---:|---:|---:|")
	for _, f := range formats {
		if only != "" && !strings.Contains(","+only+",", ","+f.name+",") {
			continue
		}
		args := strings.Fields(strings.ReplaceAll(f.args, "OUT", filepath.Join(dir, "report.html")))
		wall, rss, code, err := measure(bin, args, ledgerPath, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		fmt.Printf("| %s | `%s` | %.2f | %.0f | %d |\n", f.name, strings.TrimSpace("report "+f.args), wall.Seconds(), rss/1e6, code)
	}
	return nil
}

// writeLedger writes about size bytes of ledger with targets one-off
// targets, sizing the line count from a sample.
func writeLedger(path string, size int64, targets int) (int64, int, error) {
	const sample = 20_000
	n, err := ledgergen.Write(io.Discard, ledgergen.Options{Lines: sample, OneOff: sample * targets / 300_000})
	if err != nil {
		return 0, 0, err
	}
	lines := int(size * sample / n)
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	written, err := ledgergen.Write(f, ledgergen.Options{Lines: lines, OneOff: targets})
	if err != nil {
		return 0, 0, err
	}
	return written, lines, f.Close()
}

// measure runs bin report args ledger under /usr/bin/time -v (the ledger on
// standard input when args is "-"), its standard output discarded, and
// returns its wall time, its max RSS in bytes and its exit code.
func measure(bin string, args []string, ledgerPath, dir string) (time.Duration, float64, int, error) {
	timeLog := filepath.Join(dir, "time.log")
	cmdArgs := append([]string{"-v", "-o", timeLog, bin, "report"}, args...)
	var stdin *os.File
	if len(args) == 1 && args[0] == "-" {
		f, err := os.Open(ledgerPath)
		if err != nil {
			return 0, 0, 0, err
		}
		defer f.Close()
		stdin = f
	} else {
		cmdArgs = append(cmdArgs, ledgerPath)
	}
	cmd := exec.Command("/usr/bin/time", cmdArgs...)
	if stdin != nil {
		// Through a pipe, as `zcat | detour report -`: not a file it could
		// seek back in.
		pr, pw := io.Pipe()
		go func() { _, err := io.Copy(pw, stdin); pw.CloseWithError(err) }()
		cmd.Stdin = pr
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		return 0, 0, 0, err
	}
	rss, err := maxRSS(timeLog)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w (stderr: %s)", err, stderr.String())
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "%s exited %d: %s\n", strings.Join(args, " "), code, stderr.String())
	}
	return wall, rss, code, nil
}

// maxRSS reads "Maximum resident set size (kbytes)" from GNU time's -v
// report.
func maxRSS(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "Maximum resident set size (kbytes): "); ok {
			kb, err := strconv.ParseFloat(v, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no max RSS in /usr/bin/time's report")
}
