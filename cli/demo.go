package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

type demoFlags struct {
	requests    int
	concurrency int
	seed        uint64
	scale       float64
	ledgerPath  string
	quiet       bool
}

func newDemo(env Env) *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch detour route a measured bad day of free and cheap providers (no keys needed)",
		Long: `demo starts seven fake providers on loopback that speak the real wire formats
(OpenAI-compatible, Anthropic Messages, Gemini generateContent) and fail the
way real ones did on one measured day:

  groq-free      free LPU-class tier     39% 429 tokens-per-day (a wall)
  gemini-free    free large-context tier 86% 503 overloaded, then 429
  openrouter     credit router           402 for the expensive model
  mistral-payg   pay-as-you-go           42% 429 rate limit (Retry-After 1-2 s)
  anthropic      prepaid balance         ~5% 529 overloaded
  deepseek       prepaid balance         fine
  together       prepaid balance         fine

gemini-free speaks Gemini's native generateContent and anthropic the
Messages API: the chain crosses wire formats as well as billing pools.

It sends requests through the real router over real HTTP, prints every failed
attempt, skip and hop as it happens, and ends with a summary: who answered,
attempts per request, sends saved by parking dead targets, and time spent.

The ledger, one JSON line per attempt or skip, is written to
$XDG_STATE_HOME/detour/demo-ledger.jsonl (else ~/.local/state/detour/), anew
each run; --ledger FILE appends to FILE instead, --ledger - writes none. The
demo ends with the commands to run next: 'detour report' on that ledger, and
'detour sim', which keeps these providers running so that ask, serve, batch,
eval and probe can be tried on them without a key.`,
		Example: `  go run ./cmd/detour demo
  detour demo --requests 12 --ledger -          # quick, no file written
  detour demo --requests 100 --concurrency 8 --ledger demo.jsonl && detour report demo.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.requests < 1 || f.concurrency < 1 {
				return withCode(ExitUsage, errors.New("--requests and --concurrency must be at least 1"))
			}
			return runDemo(cmd.Context(), env, f)
		},
	}
	cmd.AddCommand(newDemoEval(env))
	fl := cmd.Flags()
	fl.IntVarP(&f.requests, "requests", "n", 36, "requests to send (the measured day had 36)")
	fl.IntVarP(&f.concurrency, "concurrency", "c", 4, "requests in flight at once")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the fake providers' faults (same seed, same day)")
	fl.Float64Var(&f.scale, "latency-scale", 0.5, "multiply the providers' measured latencies (1 = as measured)")
	fl.StringVar(&f.ledgerPath, "ledger", "", "append the ledger to this JSONL file (default $XDG_STATE_HOME/detour/demo-ledger.jsonl, written anew; \"-\" for none)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the summary")
	return cmd
}

func runDemo(ctx context.Context, env Env, f demoFlags) error {
	srv, err := simulate.Start(simulate.DayProfile(f.seed)...)
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.LatencyScale = f.scale

	route := &router.Route{Name: "default", Budget: policy.Interactive(), Chain: demoTargets(srv)}

	mem := &ledger.Memory{}
	var sink ledger.Sink = mem
	file, err := openDemoLedger(&f, env)
	if err != nil {
		return err
	}
	if file != nil {
		defer file.Close()
		sink = ledger.Multi(mem, file)
	}
	var mu sync.Mutex // serialises lines on stdout
	out := env.Stdout
	r := (&router.Router{Ledger: sink}).Init()
	if !f.quiet {
		r.OnAttempt = func(a router.Attempt) {
			if a.Status == ledger.StatusOK {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			printAttempt(out, a.RequestID+"   ", a)
		}
	}

	fmt.Fprintf(out, "detour demo: %d requests, %d at a time, through %d fake providers on %s\n", f.requests, f.concurrency, len(route.Chain), srv.URL)
	fmt.Fprintln(out, "chain (route \"default\"):")
	for i, t := range route.Chain {
		fmt.Fprintf(out, "  %d. %-48s %-9s pool %s\n", i+1, t.ID(), t.Dialect, t.Pool)
	}
	fmt.Fprintln(out)

	type outcome struct {
		res  *router.Result
		err  error
		took time.Duration
	}
	results := make([]outcome, f.requests)
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range f.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				id := fmt.Sprintf("req-%02d", i+1)
				req := &llm.Request{MaxTokens: 256, Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf("Request %d: name one prime number.", i+1)}}}
				t0 := time.Now()
				res, err := r.Complete(ctx, route, req, router.Options{RequestID: id})
				results[i] = outcome{res, err, time.Since(t0)}
				if !f.quiet {
					mu.Lock()
					if err != nil {
						fmt.Fprintf(out, "%s = FAILED: %s\n", id, firstLine(err.Error()))
					} else {
						fmt.Fprintf(out, "%s = answered by %s (%d send(s), %s)\n", id, res.Target.ID(), sends(res.Attempts), time.Since(t0).Round(time.Millisecond))
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < f.requests && ctx.Err() == nil; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		return withCode(ExitCanceled, ctx.Err())
	}

	s := demoSummary{chain: route.Chain, records: mem.Records(), stats: srv.Stats(), elapsed: elapsed}
	for _, o := range results {
		s.took = append(s.took, o.took)
		if o.err != nil {
			s.failed++
			continue
		}
		s.answered = append(s.answered, o.res.Target.ID())
		s.sendsPer = append(s.sendsPer, sends(o.res.Attempts))
	}
	s.print(out, f)
	if s.failed > 0 {
		return withCode(ExitFailed, fmt.Errorf("%d of %d requests failed", s.failed, f.requests))
	}
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

type demoSummary struct {
	chain    []router.Target
	records  []ledger.Record
	stats    simulate.Stats
	elapsed  time.Duration
	answered []string
	sendsPer []int
	took     []time.Duration
	failed   int
}

func (s demoSummary) print(w io.Writer, f demoFlags) {
	n := len(s.took)
	fmt.Fprintf(w, "\n== summary ==\n%d requests: %d answered, %d failed, in %s\n\n", n, len(s.answered), s.failed, s.elapsed.Round(time.Millisecond))

	by := map[string]int{}
	for _, id := range s.answered {
		by[id]++
	}
	sent, failedSends, parked := map[string]int{}, map[string]int{}, map[string]int{}
	for _, r := range s.records {
		id := r.Provider + "/" + r.Model
		switch r.Status {
		case ledger.StatusSkippedParked:
			parked[id]++
		case ledger.StatusSkippedNoKey, "skipped_tried":
		default:
			sent[id]++
			if r.Status != ledger.StatusOK {
				failedSends[id]++
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tpool\tanswered\tsends\tfailed sends\tskipped (parked)")
	for _, t := range s.chain {
		id := t.ID()
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", id, t.Pool, by[id], sent[id], failedSends[id], parked[id])
	}
	tw.Flush()

	totalSends, totalParked := 0, 0
	for _, v := range sent {
		totalSends += v
	}
	for _, v := range parked {
		totalParked += v
	}
	maxSends, sum := 0, 0
	for _, v := range s.sendsPer {
		sum += v
		maxSends = max(maxSends, v)
	}
	mean := 0.0
	if len(s.sendsPer) > 0 {
		mean = float64(sum) / float64(len(s.sendsPer))
	}
	var waited float64
	for _, r := range s.records {
		waited += r.WaitSeconds
	}
	slices.Sort(s.took)
	fmt.Fprintf(w, "\nsends per answered request: mean %.2f, max %d (budget: %d)\n", mean, maxSends, policy.Interactive().MaxAttempts)
	fmt.Fprintf(w, "upstream sends: %d (the fake providers counted %d requests)\n", totalSends, s.stats.Total())
	fmt.Fprintf(w, "sends saved by parking: %d (dead targets skipped without a network call)\n", totalParked)
	fmt.Fprintf(w, "time per request: p50 %s, p95 %s, max %s; %.1fs spent waiting on server-asked retries\n",
		pct(s.took, 0.50), pct(s.took, 0.95), pct(s.took, 1), waited)
	fmt.Fprintf(w, "ledger: %d lines, one per attempt or skip, failures included", len(s.records))
	if f.ledgerPath != "" && f.ledgerPath != "-" {
		fmt.Fprintf(w, ", in %s", f.ledgerPath)
	}
	fmt.Fprintln(w, "\n\nNext:")
	var next [][2]string
	if f.ledgerPath != "" && f.ledgerPath != "-" {
		next = append(next, [2]string{selfName() + " report " + shellQuote(f.ledgerPath), "what each target did, read back from the ledger"})
	}
	next = append(next, [2]string{selfName() + " sim", "these fake providers kept running, to try ask, serve, batch, eval and probe with no key"})
	printCommands(w, next)
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i].Round(time.Millisecond)
}

// demoLedgerFile is the default ledger of the demo, in detour's state
// directory: written anew each run, so that it holds that run alone.
const demoLedgerFile = "demo-ledger.jsonl"

// openDemoLedger opens the file the demo's ledger goes to and sets
// f.ledgerPath to its path: --ledger FILE appended to, "-" none (nil),
// else demoLedgerFile in the state directory (a temporary file when there
// is none), emptied first. A default file that cannot be written is no
// reason to stop a demo: it says so on stderr and writes none.
func openDemoLedger(f *demoFlags, env Env) (*ledger.File, error) {
	switch f.ledgerPath {
	case "-":
		return nil, nil
	case "":
	default:
		file, err := ledger.OpenFile(f.ledgerPath)
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
		return file, nil
	}
	file, path, err := freshDemoLedger(env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "detour demo: the ledger is not written: %v (--ledger FILE to choose one)\n", err)
		f.ledgerPath = "-"
		return nil, nil
	}
	f.ledgerPath = path
	return file, nil
}

// freshDemoLedger creates the demo's default ledger, empty.
func freshDemoLedger(env Env) (*ledger.File, string, error) {
	dir := stateDir(env)
	if dir == "" {
		tmp, err := os.CreateTemp("", "detour-demo-*.jsonl")
		if err != nil {
			return nil, "", err
		}
		tmp.Close()
		file, err := ledger.OpenFile(tmp.Name())
		return file, tmp.Name(), err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	path := filepath.Join(dir, demoLedgerFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	file, err := ledger.OpenFile(path)
	return file, path, err
}
