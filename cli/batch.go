package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/batch"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/samefile"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

type batchFlags struct {
	output       string
	route        string
	forceRoute   bool
	concurrency  int
	rpm          []string
	adaptive     bool
	budget       string
	wait         bool
	maxWait      time.Duration
	jsonProgress bool
	ledgerPath   string
}

func newBatch(env Env) *cobra.Command {
	var f batchFlags
	cmd := &cobra.Command{
		Use:   "batch IN.jsonl -o OUT.jsonl [flags]",
		Short: "Run a file of requests, one per line, resumably",
		Long: `batch sends every request of IN (one JSON object a line) down its route and
writes one result line per request to OUT, as each comes.

Lines are detour's own ({"id", "route" or "target", "messages" or "prompt",
"system", "max_tokens", "temperature", "response_format", "tools",
"tool_choice"}) or OpenAI Batch API lines ({"custom_id", "method": "POST",
"url": "/v1/chat/completions", "body": {...}}, where body.model names the
route or a provider/model target); the file's first valid line decides, and
OUT gets lines of the same kind (OpenAI's output lines for an OpenAI file).

A rerun with the same IN and OUT skips the items OUT already holds (ok or
error), sends again the ones left pending, and cuts a torn last line left by a
crash. An item answered before a crash but never written is answered again
from the health store's idempotency records, with no send. Two runs cannot
write one OUT at once.

Items blocked only by walls and rate limits (every candidate parked or
refusing for now) are written pending with retry_at, the earliest reset;
--wait waits for it instead, up to --max-wait. Bad input lines are reported
on stderr with their line number and written as errors (kind invalid_input);
they never stop the run. Ctrl-C stops taking items, cancels those in flight
(not written: a rerun sends them) and prints the summary.

--rpm PROVIDER=N paces the sends to a provider (N a minute). A rate-limit
429 from a provider halves its pace, and each answer adds one a minute back
(--adaptive=false keeps the paces fixed). The route's budget applies; use
budget: batch in the route (or --budget batch) for nightly patience.

Exit codes: 0 every item answered; 1 some item failed, is pending or was
invalid (the summary says how many); 2 wrong command line; 4 configuration
error; 130 interrupted.`,
		Example: `  detour batch in.jsonl -o out.jsonl
  detour batch openai-batch.jsonl -o results.jsonl --concurrency 16 --rpm groq=30
  detour batch in.jsonl -o out.jsonl --wait --max-wait 2h --json-progress`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBatch(cmd, env, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "", "results file (required); a rerun resumes it")
	fl.StringVarP(&f.route, "route", "r", "default", "route (or provider/model target) of the items that name none")
	fl.BoolVar(&f.forceRoute, "force-route", false, "send every item down --route, whatever it names")
	fl.IntVarP(&f.concurrency, "concurrency", "c", 4, "items in flight at once")
	fl.StringSliceVar(&f.rpm, "rpm", nil, "pace a provider: PROVIDER=N requests a minute (repeat or comma-separate)")
	fl.BoolVar(&f.adaptive, "adaptive", true, "halve a provider's pace on its rate-limit 429s, and recover slowly")
	fl.StringVar(&f.budget, "budget", "", "budget profile for every route: interactive or batch (default: each route's own)")
	fl.BoolVar(&f.wait, "wait", false, "wait for the earliest reset when every candidate is walled, instead of writing the item pending")
	fl.DurationVar(&f.maxWait, "max-wait", time.Hour, "with --wait, the longest an item waits for resets in all")
	fl.BoolVar(&f.jsonProgress, "json-progress", false, "write progress as one JSON object a second on stderr")
	fl.StringVar(&f.ledgerPath, "ledger", "", "ledger file (default $DETOUR_LEDGER, else $XDG_STATE_HOME/detour/ledger.jsonl; \"-\" for none)")
	return cmd
}

func runBatch(cmd *cobra.Command, env Env, f batchFlags, inPath string) error {
	if f.output == "" {
		return withCode(ExitUsage, errors.New("-o OUT.jsonl is required: the results file (a rerun resumes it)"))
	}
	if f.concurrency < 1 {
		return withCode(ExitUsage, errors.New("--concurrency must be 1 or more"))
	}
	var budget *policy.Budget
	if f.budget != "" {
		b, ok := policy.Profile(f.budget)
		if !ok {
			return withCode(ExitUsage, fmt.Errorf("--budget %q: use interactive or batch", f.budget))
		}
		budget = &b
	}
	absOut, err := filepath.Abs(f.output)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	outputs := append(stateFiles(cfg, env, health.StoreSQLite, f.ledgerPath),
		samefile.File{What: "-o", Path: f.output, Fix: "choose another -o"})
	if err := checkFiles(outputs, samefile.File{What: "the input", Path: inPath}, configInput(cfg)); err != nil {
		return err
	}
	rpm, err := parseRPM(cfg, f.rpm)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	opts := config.BuildOptions{Getenv: env.Getenv}
	if _, err := cfg.Lookup(f.route, opts); err != nil && (f.forceRoute || cmd.Flags().Changed("route")) {
		return withCode(ExitConfig, err)
	}

	in, err := batch.OpenInput(inPath)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	defer in.Close()
	out, err := batch.OpenOutput(f.output, in.Format)
	if err != nil {
		if errors.Is(err, batch.ErrLocked) {
			return withCode(ExitFailed, err)
		}
		return withCode(ExitUsage, err)
	}
	defer out.Close()
	rt, closeRouter, err := openRouter(cmd.Context(), cfg, env, f.ledgerPath)
	if err != nil {
		return withCode(ExitConfig, err)
	}
	defer closeRouter()

	host, _ := os.Hostname()
	pr := newProgressPrinter(env.Stderr, f.jsonProgress)
	r := &batch.Runner{
		Router: rt,
		Route: func(name string) (*router.Route, error) {
			rt, err := cfg.Lookup(name, opts)
			if err == nil && budget != nil {
				rt.Budget = *budget
			}
			return rt, err
		},
		DefaultRoute: f.route, ForceRoute: f.forceRoute, Concurrency: f.concurrency,
		Limits: batch.NewLimits(rpm, f.adaptive, nil),
		Scope:  batch.Key(in.Digest, absOut, host),
		Wait:   f.wait, MaxWait: f.maxWait,
		OnInvalid: func(e *batch.InputError) {
			pr.note(fmt.Sprintf("detour: %s %s", inPath, e.Error()))
		},
		OnProgress: pr.progress,
	}
	sum, err := r.Run(cmd.Context(), in, out)
	pr.note(summaryLine(sum, f.output))
	switch {
	case cmd.Context().Err() != nil:
		return withCode(ExitCanceled, errPrinted)
	case err != nil:
		return withCode(ExitFailed, err)
	case sum.Failed+sum.Pending+sum.Invalid > 0:
		return withCode(ExitFailed, errPrinted)
	}
	return nil
}

// parseRPM reads --rpm's PROVIDER=N pairs; each provider must be one the
// config knows.
func parseRPM(cfg *config.Config, pairs []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, p := range pairs {
		name, v, ok := strings.Cut(p, "=")
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !ok || err != nil || n <= 0 {
			return nil, fmt.Errorf("--rpm %q: write PROVIDER=N, N requests a minute above 0 (--rpm groq=30)", p)
		}
		name = strings.TrimSpace(name)
		if _, known := cfg.Provider(name); !known {
			return nil, fmt.Errorf("--rpm %q: no provider %q in the config", p, name)
		}
		out[name] = n
	}
	return out, nil
}

// progressPrinter shows a run's progress on stderr: one line redrawn in
// place on a terminal, nothing elsewhere, or with --json-progress one JSON
// object per snapshot. Notes (input errors, the summary) go between.
type progressPrinter struct {
	mu     sync.Mutex // guards w and drawn
	w      io.Writer
	asJSON bool
	tty    bool
	drawn  bool // a progress line is on the screen, unterminated
}

func newProgressPrinter(w io.Writer, asJSON bool) *progressPrinter {
	return &progressPrinter{w: w, asJSON: asJSON, tty: isTerminal(w)}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progressPrinter) progress(s batch.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.asJSON:
		b, _ := json.Marshal(s)
		p.w.Write(append(b, '\n')) //nolint:errcheck // progress is best effort
	case p.tty:
		fmt.Fprintf(p.w, "\r\x1b[K%s", s.Line())
		p.drawn = true
	}
}

// note prints line on a line of its own.
func (p *progressPrinter) note(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		io.WriteString(p.w, "\r\x1b[K") //nolint:errcheck // best effort
		p.drawn = false
	}
	fmt.Fprintln(p.w, line)
}

// summaryLine is the line batch always ends with.
func summaryLine(s batch.Summary, out string) string {
	var b strings.Builder
	ran := s.Done - s.Skipped
	fmt.Fprintf(&b, "batch: %d of %d items done in %s (%.1f items/s): %d answered", s.Done, s.Total,
		s.Elapsed.Round(time.Millisecond), s.ItemsPerSec, s.Answered)
	if s.Replayed > 0 {
		fmt.Fprintf(&b, " (%d kept from an earlier run, no send)", s.Replayed)
	}
	fmt.Fprintf(&b, ", %d failed, %d pending", s.Failed, s.Pending)
	if !s.RetryAt.IsZero() {
		fmt.Fprintf(&b, " (earliest reset %s)", s.RetryAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, ", %d invalid, %d already in %s", s.Invalid, s.Skipped, out)
	per := 0.0
	if ran > 0 {
		per = float64(s.Sends) / float64(ran)
	}
	fmt.Fprintf(&b, "; %d sends (%.2f an item), %d failovers, $%.4f", s.Sends, per, s.Failovers, s.CostUSD)
	if s.Torn > 0 {
		b.WriteString("; cut a torn last line")
	}
	if s.Dropped > 0 {
		fmt.Fprintf(&b, "; %d pending line(s) of an earlier run run again", s.Dropped)
	}
	if s.Unreadable > 0 {
		fmt.Fprintf(&b, "; %d unreadable line(s) in %s left alone", s.Unreadable, out)
	}
	if s.Canceled > 0 {
		fmt.Fprintf(&b, "; interrupted: %d in flight not written (a rerun sends them)", s.Canceled)
	}
	return b.String()
}
