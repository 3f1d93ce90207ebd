package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

type askFlags struct {
	route      string
	start      string
	noFallback bool
	probe      bool
	idemKey    string
	asJSON     bool
	maxTokens  int
	system     string
	ledgerPath string
	quiet      bool
}

func newAsk(env Env) *cobra.Command {
	var f askFlags
	cmd := &cobra.Command{
		Use:   `ask [flags] "prompt"`,
		Short: "Send one prompt down a route and print the answer",
		Long: `ask sends one prompt down a route's chain and prints the answer on stdout.
Each failed attempt, skip and hop is printed on stderr as it happens, and every
attempt is appended to the ledger (one JSON line each, failures included).

With no argument (or "-") the prompt is read from stdin.

--no-fallback --probe asks "has it recovered?": the start target gets the
prompt even when it is parked, under the health store's probe lease (as
'detour probe' takes it), and the attempt is recorded as a probe (ledger
status probe_ok or probe_failed, action probe). If it answers, its parks
end at once; if not, they stand (or park anew). A last line on stderr says
what came of it, from what the health store reads. A target with a probe
already out in the store is not sent to.

Exit codes:
  0  answered
  1  every candidate failed or was skipped (each reason is printed)
  2  wrong command line
  3  failed closed: invalid request, policy refusal or context overflow
     (detour never routes these around to another provider)
  4  configuration error
  130 interrupted`,
		Example: `  detour ask "Summarise RFC 9110 in one line"
  echo "Translate to French: good morning" | detour ask --route cheap
  detour ask --start groq --no-fallback --json "ping"
  detour ask --start groq --no-fallback --probe "ping"`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAsk(cmd, env, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.route, "route", "r", "default", "route to use, or a provider/model target")
	fl.StringVar(&f.start, "start", "", "provider (or provider/model) of the route to try first")
	fl.BoolVar(&f.noFallback, "no-fallback", false, "send only to the start target; never swap, fail if it fails")
	fl.BoolVar(&f.probe, "probe", false, "with --no-fallback: send to the start target even when it is parked, as a probe (an answer ends its parks)")
	fl.StringVar(&f.idemKey, "idempotency-key", "", "one answer per KEY: a repeat with the same prompt gets the kept answer with no send, for a day (kept in the health store)")
	fl.BoolVar(&f.asJSON, "json", false, "print the answer and who gave it as one JSON object")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "cap on output tokens (0: the provider's default)")
	fl.StringVar(&f.system, "system", "", "system prompt")
	fl.StringVar(&f.ledgerPath, "ledger", "", "ledger file (default $DETOUR_LEDGER, else $XDG_STATE_HOME/detour/ledger.jsonl; \"-\" for none)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "do not print hops on stderr")
	return cmd
}

func runAsk(cmd *cobra.Command, env Env, f askFlags, args []string) error {
	if f.maxTokens < 0 {
		return withCode(ExitUsage, errors.New("--max-tokens must be 0 or more"))
	}
	if f.probe && !f.noFallback {
		return withCode(ExitUsage, errors.New("--probe sends to one target, parked or not: add --no-fallback (and --start to name the target)"))
	}
	prompt, err := readPrompt(env, args)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	route, err := cfg.Lookup(f.route, config.BuildOptions{Getenv: env.Getenv})
	if err != nil {
		return withCode(ExitConfig, err)
	}
	if err := checkStart(route, f.start); err != nil {
		return withCode(ExitUsage, err)
	}
	if err := checkFiles(stateFiles(cfg, env, health.StoreSQLite, f.ledgerPath), configInput(cfg)); err != nil {
		return err
	}
	r, closeRouter, err := openRouter(cmd.Context(), cfg, env, f.ledgerPath)
	if err != nil {
		return withCode(ExitConfig, err)
	}
	defer closeRouter()

	req := &llm.Request{MaxTokens: f.maxTokens}
	if f.system != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: f.system})
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: prompt})

	var probe *askProbe
	if f.probe {
		probe = newAskProbe(r.Health, route, f.start)
	}
	r.OnAttempt = func(a router.Attempt) {
		if probe != nil {
			probe.seen(a)
		}
		if !f.quiet {
			printAttempt(env.Stderr, "  ", a)
		}
	}
	start := time.Now()
	res, err := r.Complete(cmd.Context(), route, req, router.Options{Start: f.start, NoFallback: f.noFallback,
		Probe: f.probe, IdempotencyKey: f.idemKey})
	if errors.Is(err, router.ErrIdempotencyReused) {
		return withCode(ExitUsage, err) // a command-line mistake: a new key for a new prompt
	}
	if probe != nil && (!f.quiet || err != nil) {
		probe.say(env.Stderr, err == nil)
	}
	if err != nil {
		return reportFailure(env, f.asJSON, err)
	}
	if f.asJSON {
		return json.NewEncoder(env.Stdout).Encode(answerJSON(res, route.Name, time.Since(start)))
	}
	fmt.Fprintln(env.Stdout, answerText(res.Response))
	if !f.quiet {
		deg := ""
		switch {
		case res.Replayed:
			deg = " (replayed: the answer kept for --idempotency-key " + f.idemKey + "; nothing was sent)"
		case res.Degraded:
			deg = " (degraded: another model than the route's first)"
		}
		fmt.Fprintf(env.Stderr, "answered by %s in %s after %d attempt(s)%s\n",
			res.Target.ID(), time.Since(start).Round(time.Millisecond), sends(res.Attempts), deg)
	}
	return nil
}

// checkStart returns why --start names no candidate of route: a command
// line mistake, told before any request is sent. Nil when start is empty
// or names a provider or provider/model of the chain.
func checkStart(route *router.Route, start string) error {
	if start == "" {
		return nil
	}
	if _, ok := route.Candidate(start); ok {
		return nil
	}
	names := make([]string, 0, len(route.Chain))
	for i := range route.Chain {
		names = append(names, route.Chain[i].ID())
	}
	return fmt.Errorf("--start %q: route %q has no such candidate; name a provider or provider/model of its chain: %s",
		start, route.Name, strings.Join(names, ", "))
}

// readPrompt takes the prompt from the arguments, or stdin when there are
// none or the only one is "-".
func readPrompt(env Env, args []string) (string, error) {
	if len(args) > 0 && !(len(args) == 1 && args[0] == "-") {
		return strings.Join(args, " "), nil
	}
	if f, ok := env.Stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return "", errors.New(`no prompt: write it as an argument (detour ask "...") or pipe it on stdin`)
		}
	}
	b, err := io.ReadAll(io.LimitReader(env.Stdin, 16<<20))
	if err != nil {
		return "", fmt.Errorf("reading the prompt from stdin: %w", err)
	}
	p := strings.TrimSpace(string(b))
	if p == "" {
		return "", errors.New(`empty prompt: write it as an argument (detour ask "...") or pipe it on stdin`)
	}
	return p, nil
}

func loadConfig(cmd *cobra.Command, env Env) (*config.Config, error) {
	flag, _ := cmd.Flags().GetString("config")
	cfg, err := config.Open(flag, env.Getenv)
	if err != nil {
		return nil, withCode(ExitConfig, err)
	}
	return cfg, nil
}

// ledgerPath returns where the ledger goes: flag, $DETOUR_LEDGER, else the
// XDG state directory. "" means none.
func ledgerPath(flag string, env Env) string {
	if flag == "-" {
		return ""
	}
	if flag != "" {
		return flag
	}
	if p := env.Getenv("DETOUR_LEDGER"); p != "" {
		if p == "-" {
			return ""
		}
		return p
	}
	dir := stateDir(env)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "ledger.jsonl")
}

func openLedger(flag string, env Env) (ledger.Sink, func(), error) {
	p := ledgerPath(flag, env)
	if p == "" {
		return ledger.Discard, func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, nil, fmt.Errorf("ledger: %w (set --ledger or DETOUR_LEDGER to a writable file, or \"-\" for none)", err)
	}
	f, err := ledger.OpenFile(p)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: %w (set --ledger or DETOUR_LEDGER to a writable file, or \"-\" for none)", err)
	}
	if n := f.Recovered(); n > 0 {
		fmt.Fprintf(env.Stderr, "detour: ledger %s: %d attempt(s) a stopped detour process left in flight written as %q\n",
			p, n, ledger.StatusInterrupted)
	}
	return f, func() { f.Close() }, nil
}

// printAttempt writes one line for a failed attempt or a skip (nothing for
// an answer), after prefix: the target, its status, its reason, what the
// router did next, and the provider's own request id when it named one
// (for its support desk). ask and demo print hops with it.
func printAttempt(w io.Writer, prefix string, a router.Attempt) {
	if a.Status == ledger.StatusOK {
		if a.Probe {
			fmt.Fprintf(w, "%s%-42s %-15s %s\n", prefix, a.Target.ID(), ledger.StatusProbeOK, "answered the probe")
		}
		return
	}
	line := fmt.Sprintf("%s%-42s %-15s %s", prefix, a.Target.ID(), a.Status, a.Reason)
	switch {
	case a.Probe:
		line += "  -> probe failed"
	default:
		line = attemptAction(line, a)
	}
	if a.ProviderRequestID != "" {
		line += "  (provider request id " + a.ProviderRequestID + ")"
	}
	fmt.Fprintln(w, line)
}

// attemptAction is line with what the router did after a, for printAttempt.
func attemptAction(line string, a router.Attempt) string {
	switch a.Action {
	case policy.Retry:
		line += fmt.Sprintf("  -> retry in %s", a.Wait.Round(time.Millisecond))
	case policy.Skip:
		line += "  -> skipped, no send"
	case "":
	default:
		line += "  -> " + string(a.Action)
	}
	return line
}

func sends(as []router.Attempt) int {
	n := 0
	for _, a := range as {
		if a.Action != policy.Skip {
			n++
		}
	}
	return n
}

func answerText(r *llm.Response) string {
	if r.Message.Content != "" || len(r.Message.ToolCalls) == 0 {
		return r.Message.Content
	}
	b, _ := json.Marshal(r.Message.ToolCalls)
	return string(b)
}

// askJSON is what ask --json prints for an answer.
type askJSON struct {
	RequestID    string         `json:"request_id"`
	Route        string         `json:"route"`
	Provider     string         `json:"provider"`
	Model        string         `json:"model"`
	Answer       string         `json:"answer"`
	ToolCalls    []llm.ToolCall `json:"tool_calls,omitempty"`
	FinishReason string         `json:"finish_reason"`
	Usage        llm.Usage      `json:"usage"`
	Attempts     int            `json:"attempts"`
	Degraded     bool           `json:"degraded"`
	// Replayed is set when the answer is the one kept for
	// --idempotency-key: nothing was sent.
	Replayed bool `json:"replayed,omitempty"`
	// Phase is how far the answering attempt got: "committed".
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

func answerJSON(res *router.Result, route string, took time.Duration) askJSON {
	return askJSON{
		RequestID: res.RequestID, Route: route,
		Provider: res.Target.Provider, Model: res.Response.Model,
		Answer: res.Response.Message.Content, ToolCalls: res.Response.Message.ToolCalls,
		FinishReason: string(res.Response.FinishReason), Usage: res.Response.Usage,
		Attempts: sends(res.Attempts), Degraded: res.Degraded, Replayed: res.Replayed, Phase: string(res.Phase),
		Seconds: ledger.Seconds(took),
	}
}

// failJSON is what ask --json prints when no answer came.
type failJSON struct {
	Error string `json:"error"`
	Kind  string `json:"kind,omitempty"`
	// Phase is how far the last attempt sent got ("sent", "unknown", ...);
	// omitted when none was sent.
	Phase      string          `json:"phase,omitempty"`
	RequestID  string          `json:"request_id,omitempty"`
	Candidates []candidateJSON `json:"candidates,omitempty"`
}

// candidateJSON is one candidate of a failed request, in the snake_case
// keys of the rest of ask's JSON.
type candidateJSON struct {
	Target string `json:"target"`
	Status string `json:"status,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Scope  string `json:"scope,omitempty"`
	Sends  int    `json:"sends"`
	Reason string `json:"reason,omitempty"`
}

// candidatesJSON returns cs for failJSON.
func candidatesJSON(cs []router.Candidate) []candidateJSON {
	out := make([]candidateJSON, len(cs))
	for i, c := range cs {
		out[i] = candidateJSON{Target: c.Target, Status: c.Status, Kind: string(c.Kind), Scope: string(c.Scope),
			Sends: c.Sends, Reason: c.Reason}
	}
	return out
}

// reportFailure prints err and maps it to the exit code.
func reportFailure(env Env, asJSON bool, err error) error {
	code := ExitFailed
	switch {
	case errors.Is(err, router.ErrFailClosed):
		code = ExitFailClosed
	case errors.Is(err, router.ErrCanceled):
		code = ExitCanceled
	}
	if asJSON {
		out := failJSON{Error: err.Error()}
		var re *router.Error
		if errors.As(err, &re) {
			out.Kind, out.Phase, out.RequestID, out.Candidates = string(re.Kind), string(re.Phase), re.RequestID,
				candidatesJSON(re.Candidates)
		}
		_ = json.NewEncoder(env.Stdout).Encode(out)
	}
	return withCode(code, err)
}
