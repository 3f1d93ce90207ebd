package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/report"
	"github.com/detourhq/detour/router"
)

type checkRoute struct {
	Name         string        `json:"name"`
	Budget       string        `json:"budget"`
	FailClosedOn []string      `json:"fail_closed_on"`
	Fallback     bool          `json:"fallback"`
	Timeouts     checkTimeouts `json:"timeouts"`
	Chain        []checkTarget `json:"chain"`
}

// checkTimeouts are a route's limits with the router's defaults applied:
// a duration ("30s") or "none".
type checkTimeouts struct {
	Deadline     string `json:"deadline"`
	Reserve      string `json:"reserve"`
	MaxRetryWait string `json:"max_retry_wait"`
	Header       string `json:"header_timeout"`
	FirstToken   string `json:"first_token"`
	Idle         string `json:"idle_timeout"`
	MaxDuration  string `json:"max_duration"`
	Buffered     bool   `json:"buffered"`
	// MaxBuffer and OverBuffer are set when Buffered: what a stream may
	// hold, and what it does past that ("stream" or "fail_over").
	MaxBuffer  string `json:"max_buffer,omitempty"`
	OverBuffer string `json:"over_buffer,omitempty"`
}

// checkBreaker is the breaker's settings with their defaults applied.
type checkBreaker struct {
	FailureThreshold int    `json:"failure_threshold"`
	OpenFor          string `json:"open_for"`
	WallCooldown     string `json:"wall_cooldown"`
	MaxPark          string `json:"max_park"`
	ProbeTimeout     string `json:"probe_timeout"`
}

type checkTarget struct {
	Target string `json:"target"`
	Pool   string `json:"pool"`
	Key    string `json:"key"`
	KeyEnv string `json:"key_env,omitempty"`
	// Group says, for a member of a group of equals, which group (counted
	// from 1 in the chain) and how it picks: "group 1, least_busy".
	Group string `json:"group,omitempty"`
}

type checkReport struct {
	Config  string       `json:"config"`
	Breaker checkBreaker `json:"breaker"`
	Health  checkHealth  `json:"health"`
	Tracing checkTracing `json:"tracing"`
	Probe   checkProbe   `json:"probe"`
	Routes  []checkRoute `json:"routes"`
	// Stale lists routes whose head has been parked past report.StaleAfter: a
	// free tier dry for days is a config problem, not an incident. Each
	// is also a warning.
	Stale    []staleRoute `json:"stale_routes"`
	Warnings []string     `json:"warnings"`
	// Errors is empty in a report: a config with errors gets a
	// checkFailure instead.
	Errors []checkError `json:"errors"`
}

// checkHealth is the health store ask would use (serve's, when the file
// names one) and what it holds parked now: shared state, when the store is
// shared, so one command shows what every process learned.
type checkHealth struct {
	Store  health.Status `json:"store"`
	Parked []health.Park `json:"parked"`
	// Quotas are the declared limits of the routes' targets, each once,
	// with what is used of each window now.
	Quotas []checkQuota `json:"quotas"`
}

// checkQuota is one declared quota (router.Quota) and its use.
type checkQuota struct {
	Key     string        `json:"key"`
	Source  string        `json:"source"`
	Windows []checkWindow `json:"windows"`
}

// checkWindow is what is used of one window of a quota: Frees is when
// the running window ends, absent when none runs.
type checkWindow struct {
	Window string    `json:"window"`
	Used   int       `json:"used"`
	Limit  int       `json:"limit"`
	Frees  time.Time `json:"frees,omitzero"`
}

// quotaReport reads, from rec (nil: nothing counted yet), what is used
// of each quota the routes' targets declare, each quota once, in route
// and chain order.
func quotaReport(names []string, routes map[string]*router.Route, rec health.Records, now time.Time) []checkQuota {
	out := []checkQuota{}
	seen := map[string]bool{}
	for _, name := range names {
		for _, t := range routes[name].Chain {
			for _, q := range t.Quotas {
				if seen[q.Key+"\x00"+q.Source] {
					continue
				}
				seen[q.Key+"\x00"+q.Source] = true
				cq := checkQuota{Key: q.Key, Source: q.Source, Windows: []checkWindow{}}
				var uses []router.Use
				if rec != nil {
					uses = router.QuotaUse(rec, q, now)
				} else {
					uses = router.QuotaUse(&health.MemoryRecords{}, q, now)
				}
				for _, u := range uses {
					cq.Windows = append(cq.Windows, checkWindow{Window: u.Window, Used: u.Used, Limit: u.Limit, Frees: u.Frees.UTC()})
				}
				out = append(out, cq)
			}
		}
	}
	return out
}

// checkProbe is the probe: section with its defaults applied.
type checkProbe struct {
	// Every is serve's background probe interval, "off" when none.
	Every         string `json:"every"`
	Timeout       string `json:"timeout"`
	GenerateEvery string `json:"generate_every"`
	// GenerateRoutes are the routes that allow a one-token generation
	// probe (probe: generate).
	GenerateRoutes []string `json:"generate_routes"`
}

// staleRoute is a route whose head has been parked for report.StaleAfter or more.
type staleRoute struct {
	Route string `json:"route"`
	// Head is the route's first target; Key the health key parked (the
	// target, its account or its endpoint).
	Head   string    `json:"head"`
	Key    string    `json:"key"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until,omitzero"`
	Reason string    `json:"reason,omitempty"`
}

// staleRoutes returns the routes whose head has a key parked since
// report.StaleAfter before now or earlier.
func staleRoutes(names []string, routes map[string]*router.Route, parked []health.Park, now time.Time) []staleRoute {
	out := []staleRoute{}
	by := map[string]health.Park{}
	for _, p := range parked {
		by[p.Key] = p
	}
	for _, name := range names {
		r := routes[name]
		if r == nil || len(r.Chain) == 0 {
			continue
		}
		head := &r.Chain[0]
		for _, k := range head.HealthKeys() {
			p, ok := by[k]
			if !ok || p.Since.IsZero() || now.Sub(p.Since) < report.StaleAfter {
				continue
			}
			out = append(out, staleRoute{Route: name, Head: head.ID(), Key: k, Since: p.Since, Until: p.Until, Reason: p.Reason})
			break
		}
	}
	return out
}

// staleWarning is the warning check prints for s.
func staleWarning(s staleRoute, now time.Time) string {
	what := s.Head
	if s.Key != s.Head {
		what += " (" + s.Key + ")"
	}
	return fmt.Sprintf("route %s: its head %s has been parked since %s (%s): %s; a target dry this long is a config problem, "+
		"not an incident: move it down the chain, or fix its account", s.Route, what, s.Since.Local().Format("2006-01-02 15:04"),
		report.Age(now.Sub(s.Since)), s.Reason)
}

// checkTracing says whether serve and ask trace requests, and where the
// spans go (config.Tracing): the URL without a password.
type checkTracing struct {
	On   bool   `json:"on"`
	URL  string `json:"url,omitempty"`
	From string `json:"from,omitempty"`
	// Text is the line check prints.
	Text string `json:"text"`
}

// checkFailure is what check --json prints for a config that cannot be
// used: every problem found.
type checkFailure struct {
	Config string       `json:"config"`
	Errors []checkError `json:"errors"`
}

// checkError is one problem of a config. Line, column and field are left
// out when unknown (a file that cannot be read, a config built from the
// environment).
type checkError struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// Text is the problem as check prints it: file:line:column: field: message.
	Text string `json:"text"`
}

// checkErrors returns err's problems for check --json: each config.Error
// it holds, else err as one problem.
func checkErrors(err error) []checkError {
	var out []checkError
	var errs config.Errors
	var one *config.Error
	switch {
	case errors.As(err, &errs):
	case errors.As(err, &one):
		errs = config.Errors{one}
	default:
		return []checkError{{Message: err.Error(), Text: err.Error()}}
	}
	for _, e := range errs {
		out = append(out, checkError{File: e.File, Line: e.Line, Column: e.Column, Field: e.Field, Message: e.Msg, Text: e.Error()})
	}
	return out
}

func newCheck(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Validate the config and show each route's chain, pools and keys",
		Long: `check loads the config (or, with no file, the presets whose API key variables
are set), validates it, and prints each route's chain with each target's
billing pool and whether its key is set, each route's time limits (the
router's defaults filled in; "none" for no limit), the breaker's settings
(the health: section) and whether requests are traced, and where the spans
go (telemetry.otlp, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
OTEL_EXPORTER_OTLP_ENDPOINT). Key values are never printed.

It warns when a route's candidates all share one billing pool (one dry
account takes the whole route down), when a paid target comes before a free
one, when no key of a route is set, when a target sits past the budget's
max_attempts or past fallback: false (so it is rarely or never reached), and
when the first attempt's header_timeout or first_token can eat the time the
budget keeps for the next candidates. Warnings do not change the exit code.

A config that cannot be used exits 4 with every problem's file:line:column:
an invalid file, a file past the input limits (1 MiB, 64 levels of nesting),
a provider key shorter than 8 characters (unless the provider is local), and
whatever 'detour serve' would refuse: a client key variable (gateway.keys
key_env) that is unset, or a listen address beyond loopback with no client
keys. With --json the problems are printed as JSON too:
{"config": FILE, "errors": [{"file", "line", "column", "field", "message", "text"}]}.`,
		Example: `  detour check
  detour check --config ./detour.yaml --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := runCheck(cmd, env)
			if err != nil {
				if !asJSON {
					return withCode(ExitConfig, err)
				}
				flag, _ := cmd.Flags().GetString("config")
				out := checkFailure{Config: config.Path(flag, env.Getenv), Errors: checkErrors(err)}
				if out.Config == "" {
					out.Config = noFile
				}
				if werr := writeJSON(env, out); werr != nil {
					return withCode(ExitConfig, werr)
				}
				return withCode(ExitConfig, errPrinted)
			}
			if asJSON {
				return writeJSON(env, rep)
			}
			printCheck(env, rep)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report (or the config's errors) as JSON")
	return cmd
}

// noFile is what check shows for the config file when there is none.
const noFile = "(no file: presets of the API key variables that are set)"

// writeJSON writes v to stdout, indented.
func writeJSON(env Env, v any) error {
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runCheck loads, validates and builds the config, checks what serve
// would refuse (CheckServe), then reports on it. An error means the config
// cannot be used.
func runCheck(cmd *cobra.Command, env Env) (checkReport, error) {
	flag, _ := cmd.Flags().GetString("config")
	cfg, err := config.Open(flag, env.Getenv)
	if err != nil {
		return checkReport{}, err
	}
	if err := cfg.CheckServe(env.Getenv); err != nil {
		return checkReport{}, err
	}
	routes, err := cfg.Build(config.BuildOptions{Getenv: env.Getenv})
	if err != nil {
		return checkReport{}, err
	}
	rep := checkReport{Config: cfg.File, Warnings: cfg.Warnings(env.Getenv), Breaker: breakerReport(health.New(cfg.Health.Settings).Settings()),
		Errors: []checkError{}}
	if rep.Config == "" {
		rep.Config = noFile
	}
	keys := map[string]config.KeyStatus{}
	for _, k := range cfg.Keys(env.Getenv) {
		keys[k.Target] = k
	}
	for _, name := range cfg.RouteNames() {
		rep.Routes = append(rep.Routes, routeReport(name, routes[name], cfg.Routes[name], keys))
	}
	now := time.Now()
	if rep.Health, err = healthReport(cfg, env, routes, now); err != nil {
		return checkReport{}, err
	}
	rep.Stale = staleRoutes(cfg.RouteNames(), routes, rep.Health.Parked, now)
	for _, s := range rep.Stale {
		rep.Warnings = append(rep.Warnings, staleWarning(s, now))
	}
	rep.Probe = probeReport(cfg)
	tr, err := cfg.Tracing(env.Getenv)
	if err != nil {
		return checkReport{}, err
	}
	rep.Tracing = checkTracing{On: tr.On(), From: tr.From, Text: tr.String()}
	if tr.On() {
		rep.Tracing.URL = config.RedactURL(tr.URL)
	}
	return rep, nil
}

// healthReport opens the store ask would use and lists what it holds
// parked or on trial at now, and what is used of each quota the routes
// declare.
func healthReport(cfg *config.Config, env Env, routes map[string]*router.Route, now time.Time) (checkHealth, error) {
	spec, err := healthSpec(cfg, env, health.StoreSQLite, "")
	if err != nil {
		return checkHealth{}, err
	}
	if spec.Kind == health.StoreSQLite {
		if _, err := os.Stat(spec.Path); errors.Is(err, fs.ErrNotExist) {
			// check makes no file: the first ask does.
			return checkHealth{Store: health.Status{Kind: string(spec.Kind), Where: spec.Path, Up: true,
				Detail: "no file yet: the first ask makes it"}, Parked: []health.Park{},
				Quotas: quotaReport(cfg.RouteNames(), routes, nil, now)}, nil
		}
	}
	hb, closeHealth, err := openHealth(cfg, env, health.StoreSQLite, "", warnLogger(env.Stderr))
	if err != nil {
		return checkHealth{}, err
	}
	defer closeHealth()
	return checkHealth{Store: hb.StoreStatus(), Parked: hb.Parks(now),
		Quotas: quotaReport(cfg.RouteNames(), routes, hb.RecordsOf(), now)}, nil
}

// printHealth writes the health store and its parks.
func printHealth(w io.Writer, h checkHealth, now time.Time) {
	st := h.Store
	where := st.Kind
	if st.Where != "" {
		where += " " + st.Where
	}
	state := "up"
	switch {
	case !st.Up:
		state = "down: " + st.Detail
	case st.Detail != "":
		state += "; " + st.Detail
	}
	fmt.Fprintf(w, "health store: %s (%s)\n", where, state)
	defer printQuotas(w, h.Quotas, now)
	if len(h.Parked) == 0 {
		fmt.Fprintln(w, "  nothing parked")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range h.Parked {
		when := "on trial: the next request probes it"
		if p.State == string(health.Open) {
			when = "parked until " + parkTime(p.Until, now)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Key, when, p.Reason)
	}
	tw.Flush()
}

// printQuotas writes each declared quota's use against its limits, one
// line each: "rpm 3/30 (frees 12:01:00 UTC)".
func printQuotas(w io.Writer, qs []checkQuota, now time.Time) {
	if len(qs) == 0 {
		return
	}
	fmt.Fprintln(w, "quotas (limits:), used of each window:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, q := range qs {
		var ws []string
		for _, x := range q.Windows {
			s := fmt.Sprintf("%s %d/%d", x.Window, x.Used, x.Limit)
			if !x.Frees.IsZero() {
				s += " (frees " + parkTime(x.Frees, now) + ")"
			}
			ws = append(ws, s)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", q.Key, strings.Join(ws, ", "), q.Source)
	}
	tw.Flush()
}

// routeReport returns the report of the route called name, r as built and
// cr as the config has it, with the key status of each target.
func routeReport(name string, r *router.Route, cr config.Route, keys map[string]config.KeyStatus) checkRoute {
	out := checkRoute{Name: name, Budget: cr.BudgetName, Fallback: !r.NoFallback, Timeouts: timeoutsReport(r)}
	if out.Budget == "" {
		out.Budget = "custom"
	}
	for _, k := range r.FailClosedOn {
		out.FailClosedOn = append(out.FailClosedOn, string(k))
	}
	if r.FailClosedOn == nil {
		out.FailClosedOn = []string{"invalid", "policy"}
	}
	groups := map[*router.Group]int{}
	for i := range r.Chain {
		t := &r.Chain[i]
		k := keys[t.ID()]
		ct := checkTarget{Target: t.ID(), Pool: t.Pool, Key: k.String(), KeyEnv: k.KeyEnv}
		if g := t.Group; g != nil {
			if groups[g] == 0 {
				groups[g] = len(groups) + 1
			}
			ct.Group = fmt.Sprintf("group %d, %s", groups[g], g.Pick)
		}
		out.Chain = append(out.Chain, ct)
	}
	return out
}

// timeoutsReport returns r's limits, defaults applied.
func timeoutsReport(r *router.Route) checkTimeouts {
	b := r.Budget.WithDefaults()
	header, first, idle := r.Timeouts()
	t := checkTimeouts{Deadline: limitText(b.Deadline), Reserve: limitText(b.Reserve), MaxRetryWait: limitText(b.MaxRetryWait),
		Header: limitText(header), FirstToken: limitText(first), Idle: limitText(idle),
		MaxDuration: limitText(r.MaxDuration), Buffered: r.Buffered}
	if r.FirstToken == 0 && slices.ContainsFunc(r.Chain, func(t router.Target) bool { return t.Reasons() }) {
		// The default goes by target: say the long one where it applies.
		t.FirstToken += " (" + limitText(router.DefaultReasoningFirstToken) + " for reasoning models)"
	}
	if r.Buffered {
		size := r.MaxBuffer
		if size <= 0 {
			size = router.DefaultMaxBuffer
		}
		t.MaxBuffer, t.OverBuffer = config.SizeText(int64(size)), "stream"
		if r.FailOverPastBuffer {
			t.OverBuffer = "fail_over"
		}
	}
	return t
}

// breakerReport returns s (defaults applied) for the report.
func breakerReport(s health.Settings) checkBreaker {
	return checkBreaker{FailureThreshold: s.FailureThreshold, OpenFor: limitText(s.OpenFor),
		WallCooldown: limitText(s.WallCooldown), MaxPark: limitText(s.MaxPark), ProbeTimeout: limitText(s.ProbeTimeout)}
}

// limitText formats a limit: "none" when it is not above zero, else the
// duration without trailing zero units ("5m", not "5m0s").
func limitText(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return config.ShortDuration(d)
}

func printCheck(env Env, rep checkReport) {
	w := env.Stdout
	fmt.Fprintf(w, "config: %s\n", rep.Config)
	b := rep.Breaker
	fmt.Fprintf(w, "breaker (health:): parks a target %s after %d failures in a row, %s after a wall with no reset named (at most %s); probe timeout %s\n",
		b.OpenFor, b.FailureThreshold, b.WallCooldown, b.MaxPark, b.ProbeTimeout)
	printHealth(w, rep.Health, time.Now())
	fmt.Fprintf(w, "tracing: %s\n", rep.Tracing.Text)
	pr := rep.Probe
	gen := "no route allows a generation probe"
	if len(pr.GenerateRoutes) > 0 {
		gen = "generation probes (one token) at most every " + pr.GenerateEvery + " for routes " + strings.Join(pr.GenerateRoutes, ", ")
	}
	fmt.Fprintf(w, "probes (probe:): serve every %s, timeout %s; %s\n", pr.Every, pr.Timeout, gen)
	for _, r := range rep.Routes {
		fb := ""
		if !r.Fallback {
			fb = ", failover only (fallback: false)"
		}
		fmt.Fprintf(w, "\nroute %s  (budget %s, fail closed on %s%s)\n", r.Name, r.Budget, strings.Join(r.FailClosedOn, ", "), fb)
		t := r.Timeouts
		buf := ""
		if t.Buffered {
			buf = fmt.Sprintf(", buffered (max_buffer %s, then %s)", t.MaxBuffer, t.OverBuffer)
		}
		fmt.Fprintf(w, "  limits: deadline %s (reserve %s), max_retry_wait %s, header_timeout %s, first_token %s, idle_timeout %s, max_duration %s%s\n",
			t.Deadline, t.Reserve, t.MaxRetryWait, t.Header, t.FirstToken, t.Idle, t.MaxDuration, buf)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for i, t := range r.Chain {
			group := ""
			if t.Group != "" {
				group = "\t" + t.Group
			}
			fmt.Fprintf(tw, "  %d.\t%s\tpool %s\tkey %s%s\n", i+1, t.Target, t.Pool, t.Key, group)
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

// probeReport is the probe: section as check shows it.
func probeReport(cfg *config.Config) checkProbe {
	p := cfg.Probe.WithDefaults()
	out := checkProbe{Every: "off", Timeout: p.Timeout.String(), GenerateEvery: p.GenerateEvery.String(), GenerateRoutes: []string{}}
	if p.Every > 0 {
		out.Every = p.Every.String()
	}
	for _, n := range cfg.RouteNames() {
		if cfg.Routes[n].ProbeGenerate {
			out.GenerateRoutes = append(out.GenerateRoutes, n)
		}
	}
	return out
}
