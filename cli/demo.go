package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/config"
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
attempts per request, sends saved by parking dead targets, and time spent.`,
		Example: `  go run ./cmd/detour demo
  detour demo --requests 100 --concurrency 8 --ledger demo.jsonl`,
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
	fl.StringVar(&f.ledgerPath, "ledger", "", "also append the ledger to this JSONL file")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the summary")
	return cmd
}

// demoChain is the route of the demo: free tiers first, then credit, then
// pay-as-you-go, then prepaid; three wire dialects.
var demoChain = []struct {
	provider, model, family, pool string
	in, out                       float64
}{
	{simulate.GroqFree, simulate.GroqModel, "llama-3.3-70b", "free", 0, 0},
	{simulate.GeminiFree, simulate.GeminiModel, "gemini-2.5-flash", "free", 0, 0},
	{simulate.OpenRouter, simulate.OpenRouterExpensive, "claude-sonnet-4", "credit", 3, 15},
	{simulate.MistralPayg, simulate.MistralModel, "mistral-small", "payg", 0.1, 0.3},
	{simulate.Anthropic, simulate.AnthropicModel, "claude-haiku-4-5", "prepaid", 1, 5},
	{simulate.DeepSeek, simulate.DeepSeekModel, "deepseek-v3", "prepaid", 0.27, 1.1},
	{simulate.Together, simulate.TogetherModel, "llama-3.3-70b", "prepaid", 0.88, 0.88},
}

// demoTargets are demoChain's targets, served by srv.
func demoTargets(srv *simulate.Server) []router.Target {
	var out []router.Target
	for _, c := range demoChain {
		d := srv.Dialect(c.provider)
		out = append(out, router.Target{
			Provider: c.provider, Model: c.model, Family: c.family, Pool: c.pool, Dialect: string(d),
			PriceIn: c.in, PriceOut: c.out,
			Client: config.NewClient(config.Dialect(d), srv.BaseURL(c.provider), "demo-key", nil, nil),
		})
	}
	return out
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
	if f.ledgerPath != "" {
		file, err := ledger.OpenFile(f.ledgerPath)
		if err != nil {
			return withCode(ExitUsage, err)
		}
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
	if f.ledgerPath != "" {
		fmt.Fprintf(w, " (appended to %s)", f.ledgerPath)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "\nNext: 'detour check' to see your own chain, 'detour ask \"...\"' to use it.")
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i].Round(time.Millisecond)
}
