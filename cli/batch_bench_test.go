//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detourhq/detour/simulate"
)

// benchEnv reads a positive number from the environment, else def.
func benchEnv(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkBatch_DayProfile runs `detour batch` as a process over
// DETOUR_BENCH_ITEMS (10,000) items against the demo's day
// (simulate.DayProfile: free tiers walled, a credit router refusing the
// expensive model, a rate-limited pay-as-you-go tier, prepaid providers),
// served by this process on loopback, with the demo's chain of seven
// targets in three dialects and budget: batch. DETOUR_BENCH_CONCURRENCY
// (64) items in flight; DETOUR_BENCH_SCALE (1: as measured; negative:
// none) scales the providers' latencies; DETOUR_BENCH_ARGS adds flags; DETOUR_BENCH_LOG
// names a file that gets the run's stderr as it comes. It reports items/s,
// the batch process's peak RSS and upstream sends per item.
//
//	go test -run '^$' -bench Batch_DayProfile -benchtime 1x ./cli
func BenchmarkBatch_DayProfile(b *testing.B) {
	items := int(benchEnv("DETOUR_BENCH_ITEMS", 10000))
	conc := int(benchEnv("DETOUR_BENCH_CONCURRENCY", 64))
	srv, err := simulate.Start(simulate.DayProfile(1)...)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	srv.LatencyScale = 1
	if v, err := strconv.ParseFloat(os.Getenv("DETOUR_BENCH_SCALE"), 64); err == nil {
		srv.LatencyScale = v // negative: no latency
	}

	dir := b.TempDir()
	var cfg strings.Builder
	cfg.WriteString("providers:\n")
	for _, c := range demoChain {
		fmt.Fprintf(&cfg, "  %s: {dialect: %s, base_url: %s, key_env: BENCH_KEY, pool: %s}\n",
			c.provider, srv.Dialect(c.provider), srv.BaseURL(c.provider), c.pool)
	}
	cfg.WriteString("targets:\n")
	chain := make([]string, 0, len(demoChain))
	for _, c := range demoChain {
		id := c.provider + "/" + c.model
		chain = append(chain, id)
		fmt.Fprintf(&cfg, "  %s: {family: %s, price: {in: %g, out: %g}}\n", id, c.family, c.in, c.out)
	}
	fmt.Fprintf(&cfg, "routes:\n  default:\n    chain: [%s]\n    budget: batch\n", strings.Join(chain, ", "))
	cfgPath := filepath.Join(dir, "detour.yaml")
	in := filepath.Join(dir, "in.jsonl")
	var lines strings.Builder
	for i := range items {
		fmt.Fprintf(&lines, `{"id":"req-%05d","prompt":"Request %d: name one prime number.","max_tokens":256}`+"\n", i, i)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(in, []byte(lines.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	vars := map[string]string{"DETOUR_CONFIG": cfgPath, "BENCH_KEY": "bench-key-123456"}
	summary := regexp.MustCompile(`(\d+) answered.*?(\d+) failed, (\d+) pending`)
	b.ResetTimer()
	for i := range b.N {
		state := filepath.Join(dir, fmt.Sprint("run", i))
		if err := os.MkdirAll(state, 0o700); err != nil {
			b.Fatal(err)
		}
		vars["DETOUR_LEDGER"] = filepath.Join(state, "ledger.jsonl")
		before := srv.Stats().Total()
		args := append([]string{"batch", in, "-o", filepath.Join(state, "out.jsonl"), "--concurrency", fmt.Sprint(conc)},
			strings.Fields(os.Getenv("DETOUR_BENCH_ARGS"))...)
		argv, _ := json.Marshal(args)
		cmd := exec.Command(os.Args[0]) // this test binary, run as detour (TestMain)
		cmd.Env = []string{childEnv + "=" + string(argv), "PATH=" + os.Getenv("PATH"), "HOME=" + state}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the benchmark
		for k, v := range vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var errb strings.Builder
		cmd.Stderr = &errb
		if log := os.Getenv("DETOUR_BENCH_LOG"); log != "" { // the run's stderr too, as it comes
			f, err := os.Create(log)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			cmd.Stderr = io.MultiWriter(&errb, f)
		}
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		if cmd.ProcessState == nil || (err != nil && cmd.ProcessState.ExitCode() > 1) {
			b.Fatalf("batch: %v\n%s", err, errb.String())
		}
		m := summary.FindStringSubmatch(errb.String())
		if m == nil {
			b.Fatalf("no summary:\n%s", errb.String())
		}
		sends := srv.Stats().Total() - before
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
		b.ReportMetric(float64(items)/took.Seconds(), "items/s")
		b.ReportMetric(float64(rss)/1024, "peak-RSS-MiB")
		b.ReportMetric(float64(sends)/float64(items), "sends/item")
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(items), "CPU-ms/item")
		b.Logf("%d items, concurrency %d, latency scale %g: %s in %s; %d sends; answered by %s\n%s", items, conc, srv.LatencyScale,
			m[0], took.Round(time.Millisecond), sends, answeredBy(b, filepath.Join(state, "out.jsonl")), lastLine(errb.String()))
	}
}

// lastLine is s's last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// answeredBy counts the answers of a native results file per target.
func answeredBy(b *testing.B, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct{ Target string }
		if json.Unmarshal([]byte(l), &r) == nil {
			n[r.Target]++
		}
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}
