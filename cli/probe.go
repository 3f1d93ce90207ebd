package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/probe"
	"github.com/detourhq/detour/router"
)

// defaultWatch is how often probe --watch checks when neither the flag
// nor probe.every says.
const defaultWatch = 5 * time.Minute

type probeFlags struct {
	routes     []string
	targets    []string
	watch      bool
	every      time.Duration
	asJSON     bool
	ledgerPath string
}

func newProbe(env Env) *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:   "probe [flags]",
		Short: "Check targets off the billing path; a parked one that answers returns to service",
		Long: `probe checks each target of the config's routes with the cheapest honest
request its dialect has: the model list (OpenAI-compatible) or the model's
metadata (Anthropic, Gemini). These cost nothing and generate nothing.

A target parked for something such a read can vouch for (an outage, a run of
5xx or timeouts, a refused key, an unknown model) is released when the read
succeeds: the next request goes to it first again. A quota or credit wall
cannot be seen in a model list: it waits for its reset, unless the route says
probe: generate, which allows one one-token generation per target at most
every probe.generate_every (default 1h).

--target checks a target as its routes would: when a route that lists it
says probe: generate, a wall may be checked with one token.

Each check is one ledger line (status probe_ok or probe_failed, action probe).
BEFORE and AFTER are what the health store reads, and the last line names
that store: probe sees no process, only the store. A target with a probe
already out in the store (a half-open request's, or another probe's lease)
is left alone, and the note says until when that lease holds. The health
store is the one ask and check use (health.db beside the ledger, or
health.store), so a probe releases what the next 'detour ask' sees; 'detour
serve' runs the same checks in the background with probe: {every: 5m}.

Exit codes: 0 every check passed or was not needed, 1 some check failed,
4 configuration error.`,
		Example: `  detour probe
  detour probe --route cheap --json
  detour probe --target groq/llama-3.3-70b-versatile
  detour probe --watch --every 2m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProbe(cmd, env, f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVarP(&f.routes, "route", "r", nil, "probe only the targets of this route (repeat or comma-separate)")
	fl.StringSliceVarP(&f.targets, "target", "t", nil, "probe this provider/model (repeat or comma-separate)")
	fl.BoolVarP(&f.watch, "watch", "w", false, "probe again every --every until interrupted")
	fl.DurationVar(&f.every, "every", 0, "time between rounds with --watch (default probe.every, else 5m; at least 30s)")
	fl.BoolVar(&f.asJSON, "json", false, "print each round as one JSON object (one line per round with --watch)")
	fl.StringVar(&f.ledgerPath, "ledger", "", "ledger file (default $DETOUR_LEDGER, else $XDG_STATE_HOME/detour/ledger.jsonl; \"-\" for none)")
	return cmd
}

func runProbe(cmd *cobra.Command, env Env, f probeFlags) error {
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	opts := config.BuildOptions{Getenv: env.Getenv}
	routes, err := cfg.Build(opts)
	if err != nil {
		return withCode(ExitConfig, err)
	}
	checks, err := probeChecks(cfg, routes, f.routes, f.targets, opts)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := checkFiles(stateFiles(cfg, env, health.StoreSQLite, f.ledgerPath), configInput(cfg)); err != nil {
		return err
	}
	sink, closeSink, err := openLedger(f.ledgerPath, env)
	if err != nil {
		return withCode(ExitConfig, err)
	}
	defer closeSink()
	hb, closeHealth, err := openHealth(cfg, env, health.StoreSQLite, f.ledgerPath, warnLogger(env.Stderr))
	if err != nil {
		return withCode(ExitConfig, err)
	}
	defer closeHealth()
	pc := cfg.Probe.WithDefaults()
	p := &probe.Prober{Health: hb, Ledger: sink, Timeout: pc.Timeout, GenerateEvery: pc.GenerateEvery}
	every := time.Duration(0)
	if f.watch {
		every = f.every
		if every == 0 {
			every = cfg.Probe.Every
		}
		if every <= 0 {
			every = defaultWatch
		}
		if every < config.MinProbeEvery {
			return withCode(ExitUsage, fmt.Errorf("--every %s is too often: probes are free of cost but not of rate limits; use %s or more", every, config.MinProbeEvery))
		}
	} else if f.every != 0 {
		return withCode(ExitUsage, errors.New("--every needs --watch"))
	}
	ctx := cmd.Context()
	failed := false
	store := hb.StoreStatus()
	for {
		res := p.Run(ctx, checks)
		failed = printProbe(env, f.asJSON, every > 0, res, store, time.Now()) || failed
		if every <= 0 {
			break
		}
		if !(clock.Real{}).Sleep(ctx, every) {
			return nil // interrupted: --watch ends cleanly
		}
	}
	if ctx.Err() != nil {
		return withCode(130, errors.New("interrupted"))
	}
	if failed {
		return withCode(ExitFailed, errors.New("some probes failed (see above)"))
	}
	return nil
}

// probeChecks lists the targets to probe: those of the named routes (all
// routes when none) and the named targets, each once, with Generate set
// when some route of the target says probe: generate (for a named
// target: some route that lists it, whether or not it is probed).
func probeChecks(cfg *config.Config, routes map[string]*router.Route, only, targets []string, opts config.BuildOptions) ([]probe.Check, error) {
	names := make([]string, 0, len(routes))
	for n := range routes {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(only) > 0 {
		for _, n := range only {
			if routes[n] == nil {
				return nil, fmt.Errorf("--route %s: no such route (routes: %s)", n, strings.Join(names, ", "))
			}
		}
		names = only
	}
	if len(targets) > 0 && len(only) == 0 {
		names = nil
	}
	var out []probe.Check
	at := map[string]int{}
	add := func(t *router.Target, generate bool) {
		if i, ok := at[t.ID()]; ok {
			out[i].Generate = out[i].Generate || generate
			return
		}
		at[t.ID()] = len(out)
		out = append(out, probe.Check{Target: t, Generate: generate})
	}
	for _, n := range names {
		r := routes[n]
		for i := range r.Chain {
			add(&r.Chain[i], cfg.Routes[n].ProbeGenerate)
		}
	}
	for _, addr := range targets {
		r, err := cfg.TargetRoute(addr, opts)
		if err != nil {
			return nil, fmt.Errorf("--target %s: %w", addr, err)
		}
		add(&r.Chain[0], generates(cfg, routes, r.Chain[0].ID()))
	}
	return out, nil
}

// generates reports whether some route whose chain lists target (an ID)
// says probe: generate.
func generates(cfg *config.Config, routes map[string]*router.Route, target string) bool {
	for n, r := range routes {
		if rc, ok := cfg.Routes[n]; !ok || !rc.ProbeGenerate {
			continue
		}
		for i := range r.Chain {
			if r.Chain[i].ID() == target {
				return true
			}
		}
	}
	return false
}

// probeRound is one round of checks as --json prints it.
type probeRound struct {
	Time   time.Time      `json:"time"`
	Checks []probe.Result `json:"checks"`
	// Store is the health store the checks read (before, after) and wrote.
	Store health.Status `json:"store"`
}

// printProbe prints one round of results, read from and written to the
// health store store, and reports whether a check failed.
func printProbe(env Env, asJSON, watching bool, res []probe.Result, store health.Status, now time.Time) bool {
	failed := false
	for _, r := range res {
		failed = failed || r.Status == ledger.StatusProbeFailed
	}
	if asJSON {
		_ = writeJSON(env, probeRound{Time: now.UTC(), Checks: res, Store: store})
		return failed
	}
	if watching {
		fmt.Fprintf(env.Stdout, "%s\n", now.UTC().Format(time.RFC3339))
	}
	writeProbeTable(env.Stdout, res, now)
	if len(res) > 0 {
		fmt.Fprintln(env.Stdout, storeLine(store))
	}
	return failed
}

// storeLine names the health store whose states the table shows.
func storeLine(st health.Status) string {
	line := "health store: " + st.Kind
	if st.Where != "" {
		line += " " + st.Where
	}
	switch {
	case st.Kind == "memory":
		line += " (this process's own: it sees no park another process keeps)"
	case !st.Up:
		line += " (down: " + st.Detail + "; states read from this process's memory)"
	}
	return line
}

// writeProbeTable writes one line per check: the target, its health before
// and after, what was sent and what came of it.
func writeProbeTable(w io.Writer, res []probe.Result, now time.Time) {
	if len(res) == 0 {
		fmt.Fprintln(w, "nothing to probe: no route lists a target")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tBEFORE\tCHECK\tRESULT\tAFTER")
	var notes []string
	for _, r := range res {
		result := "-"
		switch r.Status {
		case ledger.StatusProbeOK:
			result = fmt.Sprintf("ok %.2fs", r.Seconds)
		case ledger.StatusProbeFailed:
			result = "failed: " + r.Kind
		}
		after := r.After
		if !r.Until.IsZero() {
			after += " until " + untilText(r.Until, now)
		}
		if len(r.Released) > 0 {
			after += " (released)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Target, r.Before, r.Method, result, after)
		switch {
		case r.Status == ledger.StatusProbeFailed:
			notes = append(notes, r.Target+": "+r.Reason)
		case r.Note != "":
			notes = append(notes, r.Target+": "+r.Note)
		}
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
}

// untilText is t as a short local reading: a clock time today, else a date.
func untilText(t, now time.Time) string {
	t = t.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04")
}

// probeLoop runs the background probes of serve: every probe.every (read
// again each round, so a reload can change it; 0 pauses them), on the
// routes the gateway serves now, until ctx ends.
func probeLoop(ctx context.Context, p *probe.Prober, every time.Duration, current func() (*config.Config, map[string]*router.Route), log *slog.Logger) {
	for {
		if !(clock.Real{}).Sleep(ctx, every) {
			return
		}
		cfg, routes := current()
		if e := cfg.Probe.Every; e > 0 {
			every = e
		} else {
			every = time.Minute // paused by a reload; look again soon
			continue
		}
		checks, _ := probeChecks(cfg, routes, nil, nil, config.BuildOptions{})
		for _, r := range p.Run(ctx, checks) {
			switch {
			case len(r.Released) > 0:
				log.Info("probe: target back in service", "target", r.Target, "was", r.Before, "released", strings.Join(r.Released, ","))
			case r.Status == ledger.StatusProbeFailed:
				log.Warn("probe failed", "target", r.Target, "kind", r.Kind, "reason", r.Reason, "state", r.After)
			}
		}
	}
}
