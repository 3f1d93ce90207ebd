package cli

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/internal/durable"
	"github.com/detourhq/detour/internal/samefile"
	"github.com/detourhq/detour/report"
)

// reportWidth is the widest line the report table prints.
const reportWidth = 100

type reportFlags struct {
	since, until, route, provider string
	asJSON, asCSV                 bool
	by, html                      string
	quiet                         bool
	top                           int
	config                        string // the global --config: its declared quotas are measured
}

func newReport(env Env) *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report [flags] [FILE|GLOB|- ...]",
		Short: "Summarize the ledger: calls, answers, failures, latency, cost and walls per target",
		Long: `report reads ledger files (one JSON line per attempt, as ask and serve write
them) and summarizes them per target (provider/model). With no argument it
reads the ledger ask writes ($DETOUR_LEDGER, else
$XDG_STATE_HOME/detour/ledger.jsonl). Arguments may be files or globs
('ledger-*.jsonl.gz'); gzipped files are read as such; - reads standard
input (plain or gzip). Files are streamed, so any size works, and merged
by time: rotated files, or the ledgers of several gateways, may come in any
order.

Columns:
  TARGET  provider/model, whole: the column widens to fit names of up to
          40 characters; a longer name has a line of its own
  CALLS   attempts that sent something: every line but skips (skipped_*)
  OK      calls answered (status ok)
  REACH   OK / CALLS as a percent (client_stalled calls, never the
          target's fault, are left out of CALLS here)
  P50     median latency (seconds) of answered calls
  P95     95th percentile latency of answered calls; both come from a
          log-bucket histogram, within about 2% of the exact value
  SKIPS   times the router passed the target over without a send
          (parked, no key, disabled, over cost, ...)
  IN/OUT  tokens the provider reported, failures included (k = 1,000,
          M = 1,000,000)
  COST    summed cost in USD at the target's prices

The table keeps apart the 100 targets with the most lines (--top N; 0
keeps all, in memory that grows with them); the rest are folded into one
"other" row, last, whose numbers are exact and which says how many it
folds. Providers and routes are kept apart the same way. A ledger with
more of any is read three times (standard input is kept in a temporary
file for that), so that memory stays bounded by the rows printed.

Below the table: each target's most frequent failure statuses, and the
latest failure of each kind with the provider's own request id
(upstream_request_id, the one its support desk asks for). Then its walls,
in time order across every file: from the first failure of kind "wall" (no
credit, daily quota, ...), or the first quota skip when detour saw it
coming, to the target's next answer to a request sent after the wall came
back (one already in flight ends nothing), or "open" with how long it has
lasted by the report's end; with the first wall's reason and request id. Then the routes whose head stays degraded: behind a wall for a day
or more, or answering under half of 20 or more calls (a free tier dry for
days is a config problem, not an incident). A line that cannot be read
(torn by a crash, not a record) is skipped and counted at the end, never
fatal.

With a config (--config, $DETOUR_CONFIG or ./detour.yaml) that declares
quotas (limits: {rpm: ..., tpd: ...}), a last section sets each declared
limit beside the busiest window of its length in the lines read (windows
placed as the router places them: from the first send after the last
ended; tokens as billed), and the sends the router skipped at it
(skipped_quota). No config, no such section: the ledger alone cannot
know a limit never reached.

--by hour|day prints one row per hour or per day (UTC) instead of one per
target: the bucket's calls, answers (OK), reachability, skips, cost and
failures by kind (wall, transient, ...), for every target the filters keep;
hours or days without a line are left out. Probe records (probe_ok,
probe_failed) are counted apart, never as calls.

--json prints one object {"targets", "walls", "flags", "unreadable_lines",
"unreadable_at", "lines", "matched", "routes", "top", "folded"} with
snake_case keys ("folded" says, per kind, what its "other" row holds; each
target also has failures_by_scope, failovers_in, failovers_out, degraded,
probes, latest_failures, quota_skips, tokens_cache_read, tokens_cache_write,
cache_hit_pct and, for a group member, picks; each wall its upstream_request_id;
"quota_peaks" the busiest window of each declared quota);
"routes" says, per route, how many answers came at each hop and from which
target (the chain the route actually used). With --by it adds
"bucket_seconds" and "series": per bucket its totals, then "providers" and
"targets", each with calls, answers, failures, failures_by_kind, skips,
last_resort, probes, probes_failed, reachability_pct, tokens and cost_usd.
--csv prints one row per target after a header row (latest_failures as
"kind:upstream_request_id ..."); with --by, one row per bucket and target.

--html FILE also writes the summary as one self-contained HTML page: charts
(outcomes per provider over time, walls on a timeline, reachability per
provider, cost per target, the chain each route used) drawn as inline SVG,
then the tables. It loads nothing from the network and runs no script, so
it opens offline, in a mail or as a CI artefact, and prints. Its buckets
are --by's, else picked from the span: a minute (then 5 or 15) for a run
of minutes, an hour for up to three days, a day beyond.
The terminal output still prints; --quiet (-q) leaves it out, and --html -
writes the page to standard output instead of it.

Exit codes: 0 done; 1 a file could not be read through, or the HTML file
could not be written; 2 wrong command line, or a file or glob that names
nothing.`,
		Example: `  detour report
  detour report --since 24h --route default
  detour report --provider groq 'ledger-*.jsonl.gz' ledger.jsonl
  detour report --since 2025-06-01T00:00:00Z --until 2025-06-02T00:00:00Z --json
  detour report --since 7d --by day
  detour report --html report.html -q 'ledger-*.jsonl.gz'
  zcat old.jsonl.gz | detour report --by hour --csv -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.config, _ = cmd.Flags().GetString("config")
			return runReport(env, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.since, "since", "", "only lines at or after this time: RFC 3339 (2025-06-01T12:00:00Z) or a duration back from now (90m, 24h, 7d)")
	fl.StringVar(&f.until, "until", "", "only lines before this time (same forms as --since)")
	fl.StringVar(&f.route, "route", "", "only lines of this route")
	fl.StringVar(&f.provider, "provider", "", "only lines of this provider")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as one JSON object")
	fl.BoolVar(&f.asCSV, "csv", false, "print one CSV row per target, after a header row")
	fl.StringVar(&f.by, "by", "", "one row per `hour|day` (UTC) instead of per target; with --json or --csv, the series")
	fl.StringVar(&f.html, "html", "", "also write a self-contained HTML page with charts to `FILE` (- for stdout)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "with --html FILE, print nothing on standard output")
	fl.IntVar(&f.top, "top", report.DefaultTop, "keep the `N` targets, providers and routes with the most lines apart, the rest in one \"other\" row each (0: every one apart, in memory that grows with them)")
	return cmd
}

func runReport(env Env, fl reportFlags, args []string) error {
	if fl.asJSON && fl.asCSV {
		return withCode(ExitUsage, errors.New("report: --json and --csv exclude each other"))
	}
	var by time.Duration
	switch fl.by {
	case "":
	case "hour":
		by = time.Hour
	case "day":
		by = 24 * time.Hour
	default:
		return withCode(ExitUsage, fmt.Errorf("report: --by %q: want hour or day", fl.by))
	}
	if fl.top < 0 {
		return withCode(ExitUsage, fmt.Errorf("report: --top %d: want 0 (every target apart) or more", fl.top))
	}
	if fl.quiet && (fl.html == "" || fl.html == "-") {
		return withCode(ExitUsage, errors.New("report: --quiet goes with --html FILE (it leaves out the terminal output)"))
	}
	if fl.html == "-" && (fl.asJSON || fl.asCSV) {
		return withCode(ExitUsage, errors.New("report: --html - writes the page to standard output: it excludes --json and --csv"))
	}
	now := time.Now()
	filter := report.Filter{Route: fl.route, Provider: fl.provider}
	var err error
	if fl.since != "" {
		if filter.Since, err = report.ParseTime(fl.since, now); err != nil {
			return withCode(ExitUsage, fmt.Errorf("report: --since: %w", err))
		}
	}
	if fl.until != "" {
		if filter.Until, err = report.ParseTime(fl.until, now); err != nil {
			return withCode(ExitUsage, fmt.Errorf("report: --until: %w", err))
		}
	}
	paths, err := reportPaths(env, args)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := checkFiles([]samefile.File{{What: "--html", Path: fl.html, Fix: "choose another --html"}}, ledgerInputs(paths)...); err != nil {
		return err
	}
	srcs := make([]report.Source, len(paths))
	for i, p := range paths {
		srcs[i] = report.Source{Name: p, Path: p}
		if p == "-" {
			srcs[i] = report.Source{Name: "stdin", R: env.Stdin}
		}
	}
	quotas, qerr := declaredQuotas(env, fl.config)
	if qerr != nil && fl.config != "" {
		fmt.Fprintf(env.Stderr, "report: declared quotas left out: %v\n", qerr)
	}
	s, err := report.Read(srcs, report.Options{Filter: filter, Top: fl.top, Quotas: quotaWatches(quotas)})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return withCode(ExitUsage, fmt.Errorf("report: %w", err))
		}
		return withCode(ExitFailed, fmt.Errorf("report: %w", err))
	}
	if fl.html != "" {
		if err := writeReportHTML(env, s.ReportBy(by), fl.html, paths); err != nil {
			return withCode(ExitFailed, err)
		}
		if fl.html == "-" || fl.quiet {
			return nil
		}
	}
	r := s.Report()
	if by > 0 {
		r = s.ReportBy(by)
	}
	switch {
	case fl.asJSON:
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case fl.asCSV && by > 0:
		return writeSeriesCSV(env.Stdout, r)
	case fl.asCSV:
		return writeReportCSV(env.Stdout, r)
	case by > 0:
		printSeries(env.Stdout, r, paths)
		return nil
	}
	printReport(env.Stdout, r, paths)
	printQuotaUse(env.Stdout, r, quotas)
	return nil
}

// writeReportHTML writes r's HTML page to path, or to standard output for
// "-". The page is written whole or not at all: to a temporary file that
// replaces path once complete.
func writeReportHTML(env Env, r report.Report, path string, paths []string) error {
	opt := report.HTMLOptions{Sources: sourceNames(paths), Generated: time.Now()}
	if path == "-" {
		return report.WriteHTML(env.Stdout, r, opt)
	}
	if err := durable.WriteFile(path, 0o644, func(w io.Writer) error { return report.WriteHTML(w, r, opt) }); err != nil {
		return fmt.Errorf("report: --html: %w", err)
	}
	return nil
}

// ledgerInputs are the ledger files report reads ("-" is none).
func ledgerInputs(paths []string) []samefile.File {
	out := make([]samefile.File, len(paths))
	for i, p := range paths {
		out[i] = samefile.File{What: "the ledger file", Path: p}
	}
	return out
}

// sourceNames names what was read: files as given, "-" as stdin.
func sourceNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if p == "-" {
			p = "stdin"
		}
		out[i] = p
	}
	return out
}

// reportPaths expands args (files and globs) into files, or returns the
// default ledger when there are none.
func reportPaths(env Env, args []string) ([]string, error) {
	if len(args) == 0 {
		p := ledgerPath("", env)
		if p == "" {
			return nil, errors.New("report: no ledger configured (DETOUR_LEDGER is \"-\" or no home directory); name a file")
		}
		return []string{p}, nil
	}
	var paths []string
	for _, a := range args {
		if !strings.ContainsAny(a, "*?[") {
			paths = append(paths, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil {
			return nil, fmt.Errorf("report: %q: %w", a, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("report: no file matches %q", a)
		}
		paths = append(paths, m...)
	}
	return paths, nil
}

// cut returns s in at most n runes, ending in … when cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// reportSource names what was read, for the first line of the output.
func reportSource(paths []string) string {
	src := sourceNames(paths)[0]
	if len(paths) > 1 {
		src += fmt.Sprintf(" (+%d more)", len(paths)-1)
	}
	return src
}

// nameWidth is the widest target name the report's columns widen to;
// a longer name has a line of its own, never cut.
const nameWidth = 40

// nameColumn is the width of the TARGET column: the longest name up to
// nameWidth.
func nameColumn(r report.Report) int {
	n := len("TARGET")
	for _, t := range r.Targets {
		if m := utf8.RuneCountInString(t.Target); m <= nameWidth {
			n = max(n, m)
		}
	}
	return n
}

// named writes "  name  rest" with name padded to width; a longer name
// goes on a line of its own and rest under it, so no name is ever cut.
func named(w io.Writer, indent string, name string, width int, rest string) {
	if utf8.RuneCountInString(name) > width {
		fmt.Fprintln(w, indent+name)
		name = ""
	}
	fmt.Fprintln(w, strings.TrimRight(indent+name+strings.Repeat(" ", width-utf8.RuneCountInString(name))+rest, " "))
}

// wrapText writes text in lines of at most reportWidth runes, each after
// indent, broken between words; a word longer than a line is never cut.
func wrapText(w io.Writer, indent, text string) {
	line := indent
	for _, word := range strings.Fields(text) {
		if line != indent && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > reportWidth {
			fmt.Fprintln(w, line)
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += word
	}
	if line != indent {
		fmt.Fprintln(w, line)
	}
}

func printReport(w io.Writer, r report.Report, paths []string) {
	fmt.Fprintln(w, cut(fmt.Sprintf("%s: %d lines, %d selected", reportSource(paths), r.Lines, r.Matched), reportWidth))
	col := nameColumn(r)
	if len(r.Targets) == 0 {
		fmt.Fprintln(w, "no attempts in the selection")
	} else {
		fmt.Fprintln(w)
		row := " %6s %6s %6s %7s %7s %6s %7s %7s %9s"
		named(w, "", "TARGET", col, fmt.Sprintf(row, "CALLS", "OK", "REACH", "P50", "P95", "SKIPS", "IN", "OUT", "COST"))
		for _, t := range r.Targets {
			named(w, "", t.Target, col, fmt.Sprintf(row, strconv.Itoa(t.Calls), strconv.Itoa(t.Answers),
				reachPct(t.ReachabilityPct), secs(t.P50Seconds), secs(t.P95Seconds), strconv.Itoa(t.Skips),
				tokens(t.TokensIn), tokens(t.TokensOut), usd(t.CostUSD)))
		}
		if note := foldNote(r); note != "" {
			fmt.Fprint(w, note)
		}
		printFailures(w, r, col)
		printCache(w, r, col)
		printPicks(w, r, col)
	}
	if len(r.Walls) > 0 {
		fmt.Fprintln(w, "\nwalls (first wall failure, or quota skip when seen coming → next answer):")
		for _, wl := range r.Walls {
			how := "hit"
			if wl.SeenComing {
				how = "seen coming"
			}
			took := time.Duration(wl.Seconds * float64(time.Second)).Round(time.Second).String()
			span := "open (" + took + " so far)"
			if wl.End != nil {
				span = wl.End.UTC().Format("15:04:05")
				if wl.End.UTC().Format(time.DateOnly) != wl.Start.UTC().Format(time.DateOnly) {
					span = wl.End.UTC().Format("2006-01-02 15:04:05")
				}
				span += " (" + took + ")"
			}
			named(w, "  ", wl.Target, col, "  "+wl.Start.UTC().Format("2006-01-02 15:04:05")+" → "+span)
			wrapText(w, "      ", how+": "+wl.Status+" "+wl.Reason)
			if wl.UpstreamRequestID != "" {
				fmt.Fprintln(w, "      upstream_request_id "+wl.UpstreamRequestID)
			}
		}
	}
	if len(r.Flags) > 0 {
		fmt.Fprintln(w, "\nroutes that stay degraded (a config problem, not an incident):")
		for _, f := range r.Flags {
			fmt.Fprintln(w, "  "+f.Text)
		}
	}
	printUnreadable(w, r)
}

// printFailures lists each target's most frequent failure statuses, and
// the provider's request id of its latest failure of each kind.
func printFailures(w io.Writer, r report.Report, col int) {
	head := "\nfailures (most frequent first):"
	for _, t := range r.Targets {
		if len(t.LatestFailures) > 0 {
			head = "\nfailures (most frequent first; the latest of each kind with the provider's request id):"
		}
	}
	for _, t := range r.Targets {
		if len(t.FailuresByStatus) == 0 {
			continue
		}
		if head != "" {
			fmt.Fprintln(w, head)
			head = ""
		}
		parts := make([]string, 0, 3)
		for i, c := range t.FailuresByStatus {
			if i == 3 {
				parts = append(parts, fmt.Sprintf("+%d more", len(t.FailuresByStatus)-3))
				break
			}
			parts = append(parts, fmt.Sprintf("%s ×%d", c.Status, c.N))
		}
		named(w, "  ", t.Target, col, "  "+strings.Join(parts, ", "))
		for _, f := range t.LatestFailures {
			fmt.Fprintf(w, "      latest %s: %s at %s, upstream_request_id %s\n", f.Kind, f.Status,
				f.Time.UTC().Format("2006-01-02 15:04:05"), f.UpstreamRequestID)
		}
	}
}

// foldNote says, below the table, what its "other" row folds; "" when
// there is none.
func foldNote(r report.Report) string {
	if r.Folded == nil || r.Folded.Targets == nil {
		return ""
	}
	f := r.Folded.Targets
	note := fmt.Sprintf("\n%s: the targets past the %d with the most lines (--top), none with more\nthan %d lines; their walls are not listed.", f.Label("target"), r.Top, f.MaxLines)
	if f.Approx {
		note += fmt.Sprintf(" Their number is an estimate, within %d%%.", report.DistinctErrorPct)
	}
	if !f.TopExact {
		note += "\nA folded target may have more lines than a row above: a larger --top keeps more apart."
	}
	note += "\n"
	return note
}

func printUnreadable(w io.Writer, r report.Report) {
	if r.StatusAlone > 0 {
		noun := "failures were"
		if r.StatusAlone == 1 {
			noun = "failure was"
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, cut(fmt.Sprintf("%d %s %s: no code or message detour knows", r.StatusAlone, noun, classify.StatusAloneNote), reportWidth))
	}
	if r.UnreadableLines > 0 {
		noun := "lines"
		if r.UnreadableLines == 1 {
			noun = "line"
		}
		where := strings.Join(r.UnreadableAt, ", ")
		if r.UnreadableLines > len(r.UnreadableAt) {
			where += ", ..."
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, cut(fmt.Sprintf("%d %s could not be read (%s)", r.UnreadableLines, noun, where), reportWidth))
	}
}

// printSeries prints one row per bucket of r.Series: its totals over the
// targets selected.
func printSeries(w io.Writer, r report.Report, paths []string) {
	unit, layout := "HOUR", "2006-01-02 15:04"
	if r.BucketSeconds >= 86400 {
		unit, layout = "DAY", time.DateOnly
	}
	fmt.Fprintln(w, cut(fmt.Sprintf("%s: %d lines, %d selected, by the %s (UTC)", reportSource(paths), r.Lines, r.Matched,
		strings.ToLower(unit)), reportWidth))
	if len(r.Series) == 0 {
		fmt.Fprintln(w, "no attempts in the selection")
	} else {
		fmt.Fprintln(w)
		row := "%-16s %6s %6s %6s %6s %9s  %s\n"
		fmt.Fprintf(w, row, unit+" (UTC)", "CALLS", "OK", "REACH", "SKIPS", "COST", "FAILURES")
		for _, b := range r.Series {
			fails := report.KindsText(b.FailuresByKind)
			if b.Probes > 0 {
				if fails != "" {
					fails += "; "
				}
				fails += fmt.Sprintf("probes %d (%d failed)", b.Probes, b.ProbesFailed)
			}
			fmt.Fprint(w, cut(strings.TrimRight(fmt.Sprintf(row, b.Start.UTC().Format(layout), strconv.Itoa(b.Calls),
				strconv.Itoa(b.Answers), reachPct(b.ReachabilityPct), strconv.Itoa(b.Skips), usd(b.CostUSD), fails), " \n"),
				reportWidth)+"\n")
		}
	}
	printUnreadable(w, r)
}

// writeSeriesCSV writes one row per bucket and target of r.Series.
func writeSeriesCSV(w io.Writer, r report.Report) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"start", "target", "provider", "model", "calls", "answers", "failures", "reachability_pct",
		"skips", "last_resort", "probes", "probes_failed", "tokens_in", "tokens_out", "cost_usd", "failures_by_kind"})
	for _, b := range r.Series {
		for _, t := range b.Targets {
			provider, model, _ := strings.Cut(t.Name, "/")
			reach := ""
			if t.ReachabilityPct != nil {
				reach = strconv.FormatFloat(*t.ReachabilityPct, 'f', -1, 64)
			}
			cw.Write([]string{b.Start.UTC().Format(time.RFC3339), t.Name, provider, model, strconv.Itoa(t.Calls),
				strconv.Itoa(t.Answers), strconv.Itoa(t.Failures), reach, strconv.Itoa(t.Skips),
				strconv.Itoa(t.LastResort), strconv.Itoa(t.Probes), strconv.Itoa(t.ProbesFailed),
				strconv.FormatInt(t.TokensIn, 10), strconv.FormatInt(t.TokensOut, 10),
				strconv.FormatFloat(t.CostUSD, 'f', -1, 64), csvKinds(t.FailuresByKind)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvKinds writes failures by kind as "wall:3 transient:1", most first, as
// top_failures.
func csvKinds(m map[string]int) string {
	parts := strings.Split(report.KindsText(m), ", ")
	for i, p := range parts {
		if j := strings.LastIndexByte(p, ' '); j >= 0 {
			parts[i] = p[:j] + ":" + p[j+1:]
		}
	}
	return strings.Join(parts, " ")
}

func writeReportCSV(w io.Writer, r report.Report) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"target", "provider", "model", "calls", "answers", "failures", "skips",
		"reachability_pct", "p50_seconds", "p95_seconds", "tokens_in", "tokens_out", "cost_usd", "top_failures",
		"failovers_in", "failovers_out", "degraded", "probes", "probes_failed", "latest_failures",
		"tokens_cache_read", "tokens_cache_write", "cache_hit_pct"})
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
	for _, t := range r.Targets {
		var top []string
		for i, c := range t.FailuresByStatus {
			if i == 3 {
				break
			}
			top = append(top, fmt.Sprintf("%s:%d", c.Status, c.N))
		}
		ids := make([]string, len(t.LatestFailures))
		for i, f := range t.LatestFailures {
			ids[i] = f.Kind + ":" + f.UpstreamRequestID
		}
		cw.Write([]string{t.Target, t.Provider, t.Model, strconv.Itoa(t.Calls), strconv.Itoa(t.Answers),
			strconv.Itoa(t.Failures), strconv.Itoa(t.Skips), opt(t.ReachabilityPct), opt(t.P50Seconds),
			opt(t.P95Seconds), strconv.FormatInt(t.TokensIn, 10), strconv.FormatInt(t.TokensOut, 10),
			strconv.FormatFloat(t.CostUSD, 'f', -1, 64), strings.Join(top, " "),
			strconv.Itoa(t.FailoversIn), strconv.Itoa(t.FailoversOut), strconv.Itoa(t.Degraded), strconv.Itoa(t.Probes), strconv.Itoa(t.ProbesFailed),
			strings.Join(ids, " "), strconv.FormatInt(t.TokensCacheRead, 10), strconv.FormatInt(t.TokensCacheWrite, 10),
			opt(t.CacheHitPct)})
	}
	cw.Flush()
	return cw.Error()
}

func reachPct(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64) + "%"
}

func secs(p *float64) string {
	switch {
	case p == nil:
		return "-"
	case *p < 1:
		return fmt.Sprintf("%.0fms", *p*1000)
	case *p < 100:
		return fmt.Sprintf("%.2fs", *p)
	}
	return fmt.Sprintf("%.0fs", *p)
}

func tokens(n int64) string {
	switch {
	case n < 100_000:
		return strconv.FormatInt(n, 10)
	case n < 10_000_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 0, 64) + "k"
	case n < 10_000_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 0, 64) + "M"
	}
	return strconv.FormatFloat(float64(n)/1e9, 'f', 0, 64) + "G"
}

func usd(v float64) string {
	switch {
	case v < 100:
		return fmt.Sprintf("$%.4f", v)
	case v < 1e6:
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.0f", v)
}

// printCache says, for each target whose provider reported its prompt
// cache, how much of the input the cache served and how much was written
// to it.
func printCache(w io.Writer, r report.Report, col int) {
	head := "\nprompt cache (input tokens the provider's cache served, of all input):"
	for _, t := range r.Targets {
		if t.TokensCacheRead == 0 && t.TokensCacheWrite == 0 || t.CacheHitPct == nil {
			continue
		}
		if head != "" {
			fmt.Fprintln(w, head)
			head = ""
		}
		named(w, "  ", t.Target, col, fmt.Sprintf("  %.1f%% read from the cache (%s of %s), %s written",
			*t.CacheHitPct, tokens(t.TokensCacheRead), tokens(t.TokensIn), tokens(t.TokensCacheWrite)))
	}
}

// printPicks says, for each member of a group of equals, how its answers
// came to it (the ledger's pick).
func printPicks(w io.Writer, r report.Report, col int) {
	head := "\ngroup members (answers by why the group put the member where it was: the ledger's pick):"
	for _, t := range r.Targets {
		if len(t.Picks) == 0 {
			continue
		}
		if head != "" {
			fmt.Fprintln(w, head)
			head = ""
		}
		parts := make([]string, len(t.Picks))
		for i, c := range t.Picks {
			parts[i] = fmt.Sprintf("%s ×%d", c.Status, c.N)
		}
		named(w, "  ", t.Target, col, "  "+strings.Join(parts, ", "))
	}
}
