package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/eval"
	"github.com/detourhq/detour/eval/suites"
	"github.com/detourhq/detour/evalresults"
	"github.com/detourhq/detour/grade"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/durable"
	"github.com/detourhq/detour/internal/samefile"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
)

type evalFlags struct {
	targets         []string
	route           string
	suite           string
	reps            int
	results         string
	concurrency     int
	rpm             []string
	asJSON          bool
	proposal        string
	minReachability float64
	minAccuracy     float64
	tie             float64
	checkOnly       bool
	ledgerPath      string
	writeRoute      string
	// minAccuracySet is whether --min-accuracy was given: else the
	// route's eval_gate, or eval's default, sets the bar.
	minAccuracySet bool
}

func newEval(env Env) *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval --targets A,B,... [flags]",
		Short: "Measure targets on a task suite and propose a chain order",
		Long: `eval measures each target on the tasks of a suite, every task --reps times,
each target as itself (through the router, no fallback; the router's retries
on the target stay; every call is in the ledger), and proposes the order of a
chain from what it measured rather than from price lists.

Before any call, every grader runs on its task's known-good and known-bad
answers; eval refuses to start while one passes a bad answer or fails a good
one, and names them.

Each call is graded correct, wrong, truncated (cut at its output limit) or
error (no answer), and appended to the results file (--results) as it comes.
A rerun measures only what the file does not hold yet, so an interrupted run
goes on where it stopped, and a finished one prints its report again.

The report, per target: reachability (answered / attempted) apart from
accuracy (correct / answered), truncation rate, p50/p95 latency, mean tokens,
and effective cost per task and per correct answer from the real token
counts at the config's prices. It warns when the top targets tie on every
task (the suite cannot tell them apart).

The proposal leaves out a target with no correct answer, one with fewer
answers than the bar needs (5, or the route's eval_gate.min_answers), one
below the accuracy bar (--min-accuracy, else the route's
eval_gate.min_accuracy, else 50%; the proposal says which), and a paid one
below the reachability gate (--min-reachability, 90%; a free tier is not
held to it: dry, it is parked and skipped at no cost). When nothing passes
(every target at 0%, say), it proposes nothing and says why. Of the rest,
free tiers go first (they spend nothing while they last), then bands of
accuracy within --tie of each other (5 points), best band first; within a
band the cheapest per correct answer goes first, billing pools alternating.
The chain holds at most the route's budget max_attempts, two billing pools
kept when the measured targets allow, so that check accepts it without a
warning (or the proposal says why it cannot). Each line says why the target
is there: its place, accuracy, reachability, cost, latency and pool. The
report warns when the two best are closer than the margin their sample
sizes allow. It is printed as a routes: snippet for detour.yaml, or written
to --proposal FILE: for --route, or else for each route of the config whose
chain holds a measured target (or "default" when none does).

--write-route NAME writes the proposal for route NAME into the config file
itself: routes.NAME.chain is replaced (the route is added after the others
when it is new; with no --targets and no --route, NAME's chain is what is
measured). Every other byte of the file stays: comments, order, the route's
other settings, the other routes. The result must load and change nothing
else, or nothing is written; the file is replaced at once (a temporary file
renamed over it, its mode kept), so a serve that reloads never reads half
of it. Nothing is written when the proposal is empty.

Suites: "builtin" (arithmetic, date constraints, tax normalisation, relative
dates, negative constraints and nuance, in English and Japanese) or a YAML
file (see README "Task suites").

Exit codes: 0 measured (or nothing left to measure); 1 a call could not be
written, the run stopped, or --write-route wrote nothing; 2 wrong command
line; 4 configuration error or a grader that disagrees with its known
answers; 130 interrupted.`,
		Example: `  detour eval --targets groq/llama-3.3-70b-versatile,deepseek/deepseek-chat --reps 3
  detour eval --route default --results eval.jsonl --proposal proposed.yaml
  detour eval --write-route default --reps 3          # measure route default, rewrite its chain
  detour eval --suite mytasks.yaml --targets openai/gpt-4o-mini --check`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.minAccuracySet = cmd.Flags().Changed("min-accuracy")
			return runEval(cmd, env, f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVarP(&f.targets, "targets", "t", nil, "targets to measure, provider/model (repeat or comma-separate)")
	fl.StringVarP(&f.route, "route", "r", "", "measure this route's chain (or, with --targets, propose a chain for it from them)")
	fl.StringVar(&f.suite, "suite", "builtin", "task suite: builtin, or a YAML file")
	fl.IntVar(&f.reps, "reps", 3, "repetitions of each task per target")
	fl.StringVar(&f.results, "results", "detour-eval.jsonl", "results file, one line per call; a rerun resumes it")
	fl.IntVarP(&f.concurrency, "concurrency", "c", 4, "calls in flight at once")
	fl.StringSliceVar(&f.rpm, "rpm", nil, "pace a provider: PROVIDER=N calls a minute (repeat or comma-separate)")
	fl.BoolVar(&f.asJSON, "json", false, "print the report as JSON (proposals included)")
	fl.StringVar(&f.proposal, "proposal", "", "write the proposed chain to this file (a detour.yaml routes: snippet)")
	fl.Float64Var(&f.minReachability, "min-reachability", eval.DefaultMinReachability, "reachability gate of the proposal (0 to 1; negative: none)")
	fl.Float64Var(&f.minAccuracy, "min-accuracy", 0, "accuracy bar of the proposal (0 to 1; default the route's eval_gate.min_accuracy, else 0.5)")
	fl.Float64Var(&f.tie, "tie", eval.DefaultTie, "accuracy difference (0 to 1) within which the cheaper target goes first")
	fl.BoolVar(&f.checkOnly, "check", false, "only run the graders on their known answers; no model call")
	fl.StringVar(&f.writeRoute, "write-route", "", "write the proposed chain into this route of the config file (comments and other lines kept)")
	fl.StringVar(&f.ledgerPath, "ledger", "", "ledger file (default $DETOUR_LEDGER, else $XDG_STATE_HOME/detour/ledger.jsonl; \"-\" for none)")
	return cmd
}

func runEval(cmd *cobra.Command, env Env, f evalFlags) error {
	if f.reps < 1 || f.concurrency < 1 {
		return withCode(ExitUsage, errors.New("--reps and --concurrency must be 1 or more"))
	}
	if f.tie > 1 || f.minAccuracy < 0 || f.minAccuracy > 1 || f.minReachability > 1 {
		return withCode(ExitUsage, errors.New("--tie, --min-accuracy and --min-reachability are shares from 0 to 1 (0.05 is 5 points)"))
	}
	suite, err := loadSuite(f.suite)
	if err != nil {
		return withCode(ExitConfig, err)
	}
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	if f, err = writeRouteFlags(cfg, f); err != nil {
		return err
	}
	opts := config.BuildOptions{Getenv: env.Getenv}
	routes, err := evalTargets(cfg, opts, f)
	if err != nil {
		return err
	}
	rpm, err := parseRPM(cfg, f.rpm)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := checkFiles(evalOutputs(cfg, env, f), configInput(cfg), suiteInput(f.suite)); err != nil {
		return err
	}
	rt, closeRouter, err := openRouter(cmd.Context(), cfg, env, f.ledgerPath)
	if err != nil {
		return withCode(ExitConfig, err)
	}
	defer closeRouter()
	run := &eval.Runner{Router: rt, Suite: suite, Targets: routes, Reps: f.reps, Concurrency: f.concurrency, RPM: rpm,
		Env: grade.Env{Judge: judgeVia(rt, cfg, opts)}}
	if f.checkOnly {
		if err := run.Check(cmd.Context()); err != nil {
			return withCode(ExitConfig, err)
		}
		fmt.Fprintf(env.Stdout, "suite %s: every grader passes its %d task(s)' known-good answers and fails their known-bad ones\n", suite.Name, len(suite.Tasks))
		return nil
	}
	out, err := evalresults.Open(f.results)
	if err != nil {
		if errors.Is(err, evalresults.ErrLocked) {
			return withCode(ExitFailed, err)
		}
		return withCode(ExitUsage, err)
	}
	defer out.Close()
	if out.Torn > 0 {
		fmt.Fprintf(env.Stderr, "detour: %s ended in a torn line (an interrupted write); cut it, its call runs again\n", f.results)
	}
	bar := newEvalBar(env.Stderr)
	run.Progress = bar.update
	start := time.Now()
	p, runErr := run.Run(cmd.Context(), out)
	bar.finish()
	if errors.Is(runErr, eval.ErrGraders) {
		return withCode(ExitConfig, runErr)
	}
	fmt.Fprintf(env.Stderr, "eval: %d of %d calls done in %s (%d from an earlier run), %d without an answer, results in %s\n",
		p.Done, p.Total, time.Since(start).Round(time.Millisecond), p.Skipped, p.Errors, f.results)
	if p.Ungraded > 0 {
		fmt.Fprintf(env.Stderr, "detour: %d answer(s) could not be graded and were not written (a rerun makes them again); the last: %s\n", p.Ungraded, p.Warning)
	}
	if f.writeRoute != "" && (runErr != nil || cmd.Context().Err() != nil) {
		f.writeRoute = "" // a chain from part of a run is not written
		fmt.Fprintln(env.Stderr, "detour: the run did not finish, so --write-route writes nothing; a rerun goes on where it stopped")
	}
	if err := printEvalReport(env, f, cfg, opts, suite, routes, out.Snapshot()); err != nil {
		return withCode(ExitFailed, err)
	}
	switch {
	case cmd.Context().Err() != nil:
		return withCode(ExitCanceled, errPrinted)
	case runErr != nil:
		return withCode(ExitFailed, runErr)
	}
	return nil
}

// evalOutputs are the files a run writes: the ledger and health store,
// then --results (unless --check, which writes none) and --proposal.
func evalOutputs(cfg *config.Config, env Env, f evalFlags) []samefile.File {
	out := stateFiles(cfg, env, health.StoreSQLite, f.ledgerPath)
	if !f.checkOnly {
		out = append(out, samefile.File{What: "--results", Path: f.results, Fix: "choose another --results"},
			samefile.File{What: "--proposal", Path: f.proposal, Fix: "choose another --proposal"})
	}
	return out
}

// suiteInput is --suite's file; none for the built-in suite.
func suiteInput(name string) samefile.File {
	if name == "builtin" {
		name = ""
	}
	return samefile.File{What: "the suite", Path: name}
}

// loadSuite reads --suite: the built-in suite, or a file.
func loadSuite(name string) (*grade.Suite, error) {
	if name == "builtin" {
		return suites.Builtin()
	}
	return grade.Load(name)
}

// evalTargets resolves --targets and --route to one single-target route
// per target, in order, each once.
func evalTargets(cfg *config.Config, opts config.BuildOptions, f evalFlags) ([]*router.Route, error) {
	addrs := append([]string(nil), f.targets...)
	if f.route != "" && len(addrs) == 0 {
		r, err := cfg.Lookup(f.route, opts)
		if err != nil {
			return nil, withCode(ExitConfig, err)
		}
		for _, t := range r.Chain {
			addrs = append(addrs, t.ID())
		}
	}
	if len(addrs) == 0 {
		return nil, withCode(ExitUsage, errors.New("name what to measure: --targets provider/model,... or --route NAME (its chain)"))
	}
	var out []*router.Route
	seen := map[string]bool{}
	for _, a := range addrs {
		a = strings.TrimSpace(a)
		if a == "" || seen[a] {
			continue
		}
		seen[a] = true
		r, err := cfg.TargetRoute(a, opts)
		if err != nil {
			return nil, withCode(ExitConfig, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// judgeVia sends a judge grader's prompt down the route it names, through
// the same router (and ledger) as the calls it grades.
func judgeVia(r *router.Router, cfg *config.Config, opts config.BuildOptions) grade.Judge {
	return func(ctx context.Context, route, prompt string) (string, error) {
		rt, err := cfg.Lookup(route, opts)
		if err != nil {
			return "", err
		}
		res, err := r.Complete(ctx, rt, &llm.Request{MaxTokens: 1024,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}}, router.Options{})
		if err != nil {
			return "", err
		}
		return res.Response.Message.Content, nil
	}
}

// printEvalReport summarises the records and prints the report and the
// proposal (as JSON with --json), and writes --proposal.
func printEvalReport(env Env, f evalFlags, cfg *config.Config, opts config.BuildOptions, suite *grade.Suite, routes []*router.Route, recs []evalresults.Record) error {
	var targets []router.Target
	for _, r := range routes {
		targets = append(targets, r.Chain[0])
	}
	ids := suite.IDs()
	rep := eval.Summarize(suite.Name, suite.Digest(), ids, targets, recs)
	for _, pr := range proposalRoutes(cfg, opts, f.route, targets) {
		p := eval.Propose(pr.name, rep.Only(pr.measured), proposeOptions(cfg, f, pr.name))
		p.Unmeasured = pr.unmeasured
		rep.Proposals = append(rep.Proposals, p)
	}
	day := time.Now().UTC().Format("2006-01-02")
	snippet := eval.Snippet(fmt.Sprintf("proposed by detour eval on %s: suite %s (%s), %d rep(s)\n%s",
		day, suite.Name, short12(rep.Digest), f.reps, eval.OrderRule(f.tie)), rep.Proposals)
	if f.proposal != "" {
		if err := durable.WriteFile(f.proposal, 0o644, func(w io.Writer) error {
			_, err := io.WriteString(w, snippet)
			return err
		}); err != nil {
			return fmt.Errorf("--proposal: %w", err)
		}
	}
	if f.asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		eval.WriteTable(env.Stdout, rep)
		fmt.Fprintln(env.Stdout)
		io.WriteString(env.Stdout, snippet) //nolint:errcheck // stdout
	}
	if f.writeRoute == "" {
		return nil
	}
	for _, p := range rep.Proposals {
		if p.Route == f.writeRoute {
			return writeRoute(env.Stderr, cfg.File, p, "detour eval "+day+" suite "+suite.Name)
		}
	}
	return fmt.Errorf("--write-route %s: %w: no proposal for the route", f.writeRoute, errNothingToWrite)
}

// evalBar is the progress bar of a run on a terminal; nothing elsewhere.
type evalBar struct {
	bar *progressbar.ProgressBar
}

func newEvalBar(w io.Writer) *evalBar {
	if !isTerminal(w) {
		return &evalBar{}
	}
	return &evalBar{bar: progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("eval"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish())}
}

func (b *evalBar) update(p eval.Progress) {
	if b.bar == nil {
		return
	}
	if b.bar.GetMax() != p.Total {
		b.bar.ChangeMax(p.Total)
	}
	desc := "eval"
	if p.Errors > 0 {
		desc = fmt.Sprintf("eval (%d without answer)", p.Errors)
	}
	b.bar.Describe(desc)
	b.bar.Set(p.Done) //nolint:errcheck // progress is best effort
}

func (b *evalBar) finish() {
	if b.bar != nil {
		b.bar.Finish() //nolint:errcheck // best effort
	}
}

// short12 is a digest's first 12 digits.
func short12(d string) string { return d[:min(12, len(d))] }

// proposalRoute is a route to propose a chain for: its measured targets in
// chain order, and the others.
type proposalRoute struct {
	name                 string
	measured, unmeasured []string
}

// proposalRoutes are the routes to propose for: --route, over every
// target measured; else each route of the config whose chain holds a
// measured target; else "default" over every target measured.
func proposalRoutes(cfg *config.Config, opts config.BuildOptions, only string, targets []router.Target) []proposalRoute {
	var all []string
	measured := map[string]bool{}
	for _, t := range targets {
		all = append(all, t.ID())
		measured[t.ID()] = true
	}
	if only != "" {
		return []proposalRoute{{name: only, measured: all}}
	}
	var out []proposalRoute
	for _, name := range cfg.RouteNames() {
		rt, err := cfg.Lookup(name, opts)
		if err != nil {
			continue
		}
		pr := proposalRoute{name: name}
		for _, t := range rt.Chain {
			if measured[t.ID()] {
				pr.measured = append(pr.measured, t.ID())
			} else {
				pr.unmeasured = append(pr.unmeasured, t.ID())
			}
		}
		if len(pr.measured) > 0 {
			out = append(out, pr)
		}
	}
	if len(out) == 0 {
		out = []proposalRoute{{name: "default", measured: all}}
	}
	return out
}
