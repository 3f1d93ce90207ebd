package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/eval"
	"github.com/detourhq/detour/evalresults"
	"github.com/detourhq/detour/grade"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

type demoEvalFlags struct {
	reps        int
	seed        uint64
	scale       float64
	concurrency int
}

func newDemoEval(env Env) *cobra.Command {
	var f demoEvalFlags
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Watch detour eval measure the demo's providers on the built-in suite (no keys needed)",
		Long: `demo eval runs detour eval, the built-in suite in English and Japanese, against
the demo's seven fake providers: their faults of the measured day, and a
scripted skill each (invented for the demo: one strong in English only, one
that thinks out loud and is cut at its output limit, ...). The run is the
morning of that day: the free tiers' daily quotas are not spent yet (an eval
that meets a dry free tier has nothing to judge it on: run it after the
reset). It prints the report a real run prints, and the chain it proposes
for route default, which detour check accepts without a warning: the free
tiers that pass first, then quality, then cost, billing pools alternating;
the unreachable, and those under the accuracy bar (50%), left out, each
line saying why.`,
		Example: `  go run ./cmd/detour demo eval
  detour demo eval --reps 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.reps < 1 || f.concurrency < 1 {
				return withCode(ExitUsage, errors.New("--reps and --concurrency must be at least 1"))
			}
			return runDemoEval(cmd.Context(), env, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.reps, "reps", 2, "repetitions of each task per target")
	fl.IntVarP(&f.concurrency, "concurrency", "c", 8, "calls in flight at once")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the fake providers' faults")
	fl.Float64Var(&f.scale, "latency-scale", 0.05, "multiply the providers' measured latencies")
	return cmd
}

func runDemoEval(ctx context.Context, env Env, f demoEvalFlags) error {
	provs, suite, err := skilledDay(f.seed, false)
	if err != nil {
		return err
	}
	morning(provs)
	srv, err := simulate.Start(provs...)
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.LatencyScale = f.scale
	targets := demoTargets(srv)
	var routes []*router.Route
	for _, t := range targets {
		routes = append(routes, &router.Route{Name: t.ID(), Chain: []router.Target{t}, Budget: policy.Interactive()})
	}
	dir, err := os.MkdirTemp("", "detour-demo-eval")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out, err := evalresults.Open(filepath.Join(dir, "eval.jsonl"))
	if err != nil {
		return err
	}
	defer out.Close()
	fmt.Fprintf(env.Stdout, "detour demo eval: the built-in suite (%d tasks, English and Japanese) x %d rep(s) on %d fake providers; skills scripted, faults of the measured day\n\n",
		len(suite.Tasks), f.reps, len(routes))
	bar := newEvalBar(env.Stderr)
	run := &eval.Runner{Router: &router.Router{}, Suite: suite, Targets: routes, Reps: f.reps, Concurrency: f.concurrency,
		Progress: bar.update, Env: grade.Env{}}
	_, err = run.Run(ctx, out)
	bar.finish()
	if err != nil {
		return err
	}
	ids := suite.IDs()
	rep := eval.Summarize(suite.Name, suite.Digest(), ids, targets, out.Snapshot())
	eval.WriteTable(env.Stdout, rep)
	fmt.Fprintln(env.Stdout)
	prop := eval.Propose("default", rep, eval.ProposeOptions{MaxLen: policy.Interactive().MaxAttempts, MaxLenFrom: "the default budget's max_attempts"})
	fmt.Fprint(env.Stdout, eval.Snippet("proposed by detour demo eval (scripted skills: the figures show the shape of a real run, not real models)\n"+
		eval.OrderRule(0), []eval.Proposal{prop}))
	return nil
}

// morning leaves out the daily quota walls of the measured day: the free
// tiers' quotas are not spent yet when the demo's eval runs. Their other
// faults (overload, rate limits) stay.
func morning(provs []simulate.Provider) {
	for i := range provs {
		if provs[i].Profile == nil {
			continue
		}
		for j := range provs[i].Profile.Rules {
			r := &provs[i].Profile.Rules[j]
			r.Chances = slices.DeleteFunc(r.Chances, func(c simulate.Chance) bool { return c.Fault.Kind == simulate.DailyQuota })
		}
	}
}
