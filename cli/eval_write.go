package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/eval"
	"github.com/detourhq/detour/internal/durable"
	"github.com/detourhq/detour/internal/yamledit"
	"github.com/detourhq/detour/policy"
)

// writeRouteFlags checks --write-route against the other flags and the
// config before anything is measured, and returns f with --route set to
// the route written: the proposal is for it, over every target measured
// (its chain, when no --targets are named).
func writeRouteFlags(cfg *config.Config, f evalFlags) (evalFlags, error) {
	name := f.writeRoute
	switch {
	case name == "":
		return f, nil
	case f.checkOnly:
		return f, withCode(ExitUsage, errors.New("--write-route writes what a run measured; --check measures nothing"))
	case cfg.File == "":
		return f, withCode(ExitUsage, errors.New("--write-route needs a config file (--config FILE or $DETOUR_CONFIG): with none, "+
			"detour runs on the presets of the keys set; write the proposal with --proposal FILE and make it your detour.yaml"))
	case f.route != "" && f.route != name:
		return f, withCode(ExitUsage, fmt.Errorf("--route %s and --write-route %s name two routes: the chain written is the one proposed for the route measured; name one", f.route, name))
	}
	if _, ok := cfg.Routes[name]; !ok && len(f.targets) == 0 {
		return f, withCode(ExitUsage, fmt.Errorf("--write-route %s: %s has no route %s yet: name the targets to measure for it with --targets", name, cfg.File, name))
	}
	f.route = name
	return f, nil
}

// proposeOptions are the gates of the proposal for route: the accuracy
// bar of --min-accuracy, else of the route's eval_gate, else eval's
// default; the eval_gate's min_answers; the route's budget max_attempts
// (the defaults' budget for a new route) as the longest chain.
func proposeOptions(cfg *config.Config, f evalFlags, route string) eval.ProposeOptions {
	o := eval.ProposeOptions{MinReachability: f.minReachability, Tie: f.tie}
	r, ok := cfg.Routes[route]
	switch {
	case f.minAccuracySet:
		o.MinAccuracy, o.BarFrom = f.minAccuracy, "--min-accuracy"
	case ok && r.EvalGate != nil:
		o.MinAccuracy, o.BarFrom = r.EvalGate.MinAccuracy, "routes."+route+".eval_gate.min_accuracy"
		o.MinAnswers = r.EvalGate.MinAnswers
	}
	if o.BarFrom != "" && o.MinAccuracy == 0 {
		o.MinAccuracy = -1 // a bar of 0, written: none
	}
	budget, from := cfg.Defaults.Budget, "the default budget's max_attempts"
	if ok {
		budget, from = r.Budget, "routes."+route+" budget max_attempts"
	}
	if budget == (policy.Budget{}) {
		budget = policy.Interactive()
	}
	o.MaxLen, o.MaxLenFrom = budget.WithDefaults().MaxAttempts, from
	return o
}

// errNothingToWrite means --write-route had no chain to write: the
// proposal for the route is empty.
var errNothingToWrite = errors.New("no chain to write")

// writeRoute writes p's chain as routes.<p.Route>.chain of the config
// file at path (a symbolic link is followed, so the file it names is
// written), through yamledit: every other byte of the file stays, the
// route is added after the others when it is new. The result must load,
// hold the chain, and leave every other route and section as it was, or
// nothing is written. The file is replaced at once (durable.WriteFile: a
// temporary file beside it, synced, then renamed) with its mode, so a
// reload never reads half of it. stamp goes in each entry's comment.
func writeRoute(w io.Writer, path string, p eval.Proposal, stamp string) error {
	if len(p.Chain) == 0 {
		why := "no target passed"
		if len(p.Notes) > 0 {
			why = p.Notes[0]
		}
		return fmt.Errorf("--write-route %s: %w: %s; %s is left as it was", p.Route, errNothingToWrite, why, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("--write-route: %w", err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("--write-route: %w", err)
	}
	src, err := os.ReadFile(real)
	if err != nil {
		return fmt.Errorf("--write-route: %w", err)
	}
	before, err := config.Parse(path, src)
	if err != nil {
		return fmt.Errorf("--write-route: %s does not load as it is, so it is left alone: %w", path, err)
	}
	chain := make([]string, len(p.Chain))
	items := make([]yamledit.Item, len(p.Chain))
	for i, e := range p.Chain {
		chain[i] = e.Target
		items[i] = yamledit.Item{Value: e.Target, Comment: fmt.Sprintf("%d. %s: %s", i+1, stamp, e.Figures)}
	}
	out, err := yamledit.SetList(src, []string{"routes", p.Route, "chain"}, items)
	if err != nil {
		return fmt.Errorf("--write-route %s: %w; paste the proposal by hand", p.Route, err)
	}
	after, err := config.Parse(path, out)
	if err != nil {
		return fmt.Errorf("--write-route %s: the edited file would not load, so nothing was written: %w", p.Route, err)
	}
	if err := sameButRoute(before, after, p.Route, chain); err != nil {
		return fmt.Errorf("--write-route %s: nothing was written (please report it): %w", p.Route, err)
	}
	if err := durable.WriteFile(real, st.Mode().Perm(), func(w io.Writer) error {
		_, err := w.Write(out)
		return err
	}); err != nil {
		return fmt.Errorf("--write-route: %w", err)
	}
	was := "a new route"
	if r, ok := before.Routes[p.Route]; ok {
		was = "was [" + strings.Join(r.Chain, ", ") + "]"
		var dropped []string
		for _, id := range r.Chain {
			if !slices.Contains(chain, id) {
				dropped = append(dropped, id)
			}
		}
		if len(dropped) > 0 {
			was += "; no longer in it: " + strings.Join(dropped, ", ") + " (see the proposal's comments for why)"
		}
	}
	fmt.Fprintf(w, "wrote routes.%s.chain in %s: [%s], %s; every other line is as it was: run detour check\n",
		p.Route, path, strings.Join(chain, ", "), was)
	return nil
}

// sameButRoute checks that after is before with only route's chain set
// to chain: every other route and every other section alike.
func sameButRoute(before, after *config.Config, route string, chain []string) error {
	got, ok := after.Routes[route]
	if !ok || !slices.Equal(got.Chain, chain) {
		return fmt.Errorf("the edited file's routes.%s.chain is %q, not %q", route, got.Chain, chain)
	}
	if old, ok := before.Routes[route]; ok {
		old.Chain = chain
		if !reflect.DeepEqual(old, got) {
			return fmt.Errorf("the edit changed more of routes.%s than its chain", route)
		}
	}
	for name, r := range before.Routes {
		if name != route && !reflect.DeepEqual(r, after.Routes[name]) {
			return fmt.Errorf("the edit changed route %s", name)
		}
	}
	want := len(before.Routes)
	if _, ok := before.Routes[route]; !ok {
		want++
	}
	if n := len(after.Routes); n != want {
		return fmt.Errorf("the edit made %d routes, not %d", n, want)
	}
	b, a := reflect.ValueOf(*before), reflect.ValueOf(*after)
	for i := range b.NumField() {
		f := b.Type().Field(i)
		if !f.IsExported() || f.Name == "Routes" || f.Name == "File" {
			continue
		}
		if !reflect.DeepEqual(b.Field(i).Interface(), a.Field(i).Interface()) {
			return fmt.Errorf("the edit changed the config's %s", f.Name)
		}
	}
	return nil
}
