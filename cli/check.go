package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/config"
)

type checkRoute struct {
	Name       string        `json:"name"`
	Budget     string        `json:"budget"`
	FailClosed []string      `json:"fail_closed_on"`
	Fallback   bool          `json:"fallback"`
	Chain      []checkTarget `json:"chain"`
}

type checkTarget struct {
	Target string `json:"target"`
	Pool   string `json:"pool"`
	Key    string `json:"key"`
	KeyEnv string `json:"key_env,omitempty"`
}

type checkReport struct {
	Config   string       `json:"config"`
	Routes   []checkRoute `json:"routes"`
	Warnings []string     `json:"warnings"`
}

func newCheck(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Validate the config and show each route's chain, pools and keys",
		Long: `check loads the config (or, with no file, the presets whose API key variables
are set), validates it, and prints each route's chain with each target's
billing pool and whether its key is set. Key values are never printed.

It warns when a route's candidates all share one billing pool (one dry
account takes the whole route down), when a paid target comes before a free
one, and when no key of a route is set. Warnings do not change the exit code;
an invalid config exits 4 with every problem's file:line:column.`,
		Example: `  detour check
  detour check --config ./detour.yaml --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd, env)
			if err != nil {
				return err
			}
			routes, err := cfg.Build(config.BuildOptions{Getenv: env.Getenv})
			if err != nil {
				return withCode(ExitConfig, err)
			}
			rep := checkReport{Config: cfg.File, Warnings: cfg.Warnings(env.Getenv)}
			if rep.Config == "" {
				rep.Config = "(no file: presets of the API key variables that are set)"
			}
			keys := map[string]config.KeyStatus{}
			for _, k := range cfg.Keys(env.Getenv) {
				keys[k.Target] = k
			}
			for _, name := range cfg.RouteNames() {
				r, cr := routes[name], cfg.Routes[name]
				out := checkRoute{Name: name, Budget: cr.BudgetName, Fallback: !r.NoFallback}
				if out.Budget == "" {
					out.Budget = "custom"
				}
				for _, k := range r.FailClosed {
					out.FailClosed = append(out.FailClosed, string(k))
				}
				if r.FailClosed == nil {
					out.FailClosed = []string{"invalid", "policy"}
				}
				for i := range r.Chain {
					t := &r.Chain[i]
					k := keys[t.ID()]
					out.Chain = append(out.Chain, checkTarget{Target: t.ID(), Pool: t.Pool, Key: k.String(), KeyEnv: k.KeyEnv})
				}
				rep.Routes = append(rep.Routes, out)
			}
			if asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printCheck(env, rep)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func printCheck(env Env, rep checkReport) {
	w := env.Stdout
	fmt.Fprintf(w, "config: %s\n", rep.Config)
	for _, r := range rep.Routes {
		fb := ""
		if !r.Fallback {
			fb = ", failover only (fallback: false)"
		}
		fmt.Fprintf(w, "\nroute %s  (budget %s, fail closed on %s%s)\n", r.Name, r.Budget, strings.Join(r.FailClosed, ", "), fb)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for i, t := range r.Chain {
			fmt.Fprintf(tw, "  %d.\t%s\tpool %s\tkey %s\n", i+1, t.Target, t.Pool, t.Key)
		}
		tw.Flush()
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, s := range rep.Warnings {
			fmt.Fprintf(w, "  - %s\n", s)
		}
	} else {
		fmt.Fprintln(w, "\nno warnings")
	}
}
