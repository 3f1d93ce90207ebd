package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/simulate"
)

// simListen is the sim's default address: beside serve's 127.0.0.1:8787,
// so that the control URLs printed in docs stay the same from run to run.
const simListen = "127.0.0.1:8788"

// The files detour sim writes in its directory, and the ones of the
// commands it proposes, which it empties at start.
const (
	simConfigFile = "detour.yaml"
	simEnvFile    = "env"
	simBatchFile  = "batch.jsonl"
	simLedgerFile = "ledger.jsonl"
	simBatchOut   = "batch-out.jsonl"
	simEvalFile   = "eval.jsonl"
)

type simFlags struct {
	listen string
	day    string
	dir    string
	seed   uint64
	scale  float64
	set    []string
	quiet  bool
}

func newSim(env Env) *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim [flags]",
		Short: "Run the demo's fake providers until Ctrl-C, and a config for them: try every command with no key",
		Long:  simLong(),
		Example: `  detour sim                                   # the measured bad day, on 127.0.0.1:8788
  detour sim --day good --set groq-free=dry    # all healthy but the free tier, walled
  curl -X POST http://127.0.0.1:8788/control/groq-free/dry   # while it runs: turn the free tier dry`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSim(cmd.Context(), env, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", simListen, "loopback host:port of the providers and /control (port 0 picks a free one)")
	fl.StringVar(&f.day, "day", "bad", "the providers' day at start: bad (the measured day of detour demo) or good (every request answered)")
	fl.StringVar(&f.dir, "dir", "", "directory of the files it writes (default $XDG_STATE_HOME/detour/sim, else ~/.local/state/detour/sim)")
	fl.StringSliceVar(&f.set, "set", nil, "start PROVIDER in MODE, after --day: PROVIDER=MODE (repeat or comma-separate; PROVIDER all: every one)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the bad day's faults (same seed, same day)")
	fl.Float64Var(&f.scale, "latency-scale", 1, "multiply the providers' measured latencies (1: as measured, 0.1 ten times faster; negative: none)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "log no line per request served")
	return cmd
}

// simLong is sim's help: the day, the files, the control endpoint, its modes.
func simLong() string {
	var b strings.Builder
	b.WriteString(`sim runs the seven fake providers of 'detour demo' on loopback until Ctrl-C
(or SIGTERM), and writes a config that points at them, so that every command
can be tried with no key: ask, serve (with any OpenAI, Anthropic or Gemini
SDK, or curl), batch, eval, probe, report. The providers speak the real wire
formats (OpenAI chat completions, embeddings and model list; Anthropic
Messages; Gemini generateContent, streamGenerateContent and embeddings) and
take any key, or none.

--day bad (the default) is the measured day of the demo:
`)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, d := range demoChain {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.provider, d.pool, d.bad)
	}
	tw.Flush()
	b.WriteString(`--day good answers every request. Built-in suite prompts (detour eval) get
each model's scripted skill, as in 'detour demo eval'; any other prompt gets
"Hello from PROVIDER/MODEL.".

At start it writes, in --dir (default $XDG_STATE_HOME/detour/sim):
  detour.yaml   the config: the seven providers (key_env "": no key needed),
                their prices, route "default" chaining them free tiers first,
                and health.store sqlite:DIR/health.db
  env           export DETOUR_CONFIG=DIR/detour.yaml and
                DETOUR_LEDGER=DIR/ledger.jsonl: source it (. DIR/env) and
                every command uses the sim, its own ledger and health store,
                apart from your real ones
  batch.jsonl   six requests for 'detour batch'
and empties what the proposed commands wrote in DIR before (ledger.jsonl,
health.db, batch-out.jsonl, eval.jsonl), so that each session starts afresh.
Then it prints the commands to try and logs one line per request served.

While it runs, faults switch on its own address (default 127.0.0.1:8788):
  GET  /control                  each provider's base URL, requests, failures, mode
  POST /control/PROVIDER/MODE    switch one provider (PROVIDER all: every one)
MODE is one of:
`)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, m := range simModes {
		fmt.Fprintf(tw, "  %s\t%s\n", m[0], m[1])
	}
	tw.Flush()
	b.WriteString(wrapWords("or a fault kind of package simulate, served on every request: "+kindNames()+".", 78))
	b.WriteString(`
A switch applies to the next request; what detour already parked stays
parked until its time is up (or detour probe, or serve's POST /admin/release).
--set PROVIDER=MODE switches at start.`)
	return b.String()
}

func runSim(ctx context.Context, env Env, f simFlags) error {
	start := modeBadDay
	switch f.day {
	case "bad":
	case "good":
		start = modeHealthy
	default:
		return withCode(ExitUsage, fmt.Errorf("--day %q: want bad or good", f.day))
	}
	if !config.LoopbackAddr(f.listen) {
		return withCode(ExitUsage, fmt.Errorf("--listen %s: the sim and its /control answer anyone who reaches them, so they listen on loopback only (127.0.0.1:PORT)", f.listen))
	}
	dir := f.dir
	if dir == "" {
		if dir = stateDir(env); dir == "" {
			return withCode(ExitUsage, errors.New("no state directory (neither $XDG_STATE_HOME nor a home is known): choose one with --dir"))
		}
		dir = filepath.Join(dir, "sim")
	}
	provs, _, err := skilledDay(f.seed, true)
	if err != nil {
		return err
	}
	srv, err := simulate.NewServer(provs...)
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.LatencyScale = f.scale

	var logMu sync.Mutex // serialises the log lines on stderr
	log := func(line string) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(env.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), line)
	}
	var onRecord func(simulate.Record)
	if !f.quiet {
		onRecord = func(r simulate.Record) { log(requestLine(r)) }
	}
	ctl := newSimControl(srv, provs, f.seed, onRecord)
	if _, err := ctl.set(allProviders, start); err != nil {
		return err
	}
	for _, s := range f.set {
		name, mode, ok := strings.Cut(s, "=")
		if !ok {
			return withCode(ExitUsage, fmt.Errorf("--set %q: write PROVIDER=MODE, e.g. groq-free=dry", s))
		}
		if _, err := ctl.set(name, mode); err != nil {
			return withCode(ExitUsage, fmt.Errorf("--set %s: %w", s, err))
		}
	}

	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("listen: %w (is a sim already running? --listen 127.0.0.1:0 picks a free port)", err))
	}
	srv.URL = "http://" + ln.Addr().String()
	if err := writeSimFiles(dir, srv); err != nil {
		ln.Close()
		return withCode(ExitFailed, err)
	}
	hs := &http.Server{Handler: ctl.handler(log), ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	printSimGuide(env.Stdout, ctl, dir, f.day)

	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	srv.Close() // ends the providers' waits (hang, latencies) first
	hs.Close()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return withCode(ExitFailed, fmt.Errorf("sim: %w", err))
	}
	fmt.Fprintf(env.Stderr, "detour sim: stopped; the files stay in %s\n", dir)
	return nil
}

// requestLine is the log line of one request a provider served.
func requestLine(r simulate.Record) string {
	what := "chat"
	switch {
	case r.Embed:
		what = "embeddings"
	case r.Stream:
		what = "chat, streamed"
	}
	return fmt.Sprintf("%-48s %-18s %s", r.Provider+"/"+r.Model, r.Kind, what)
}

// writeSimFiles writes the sim's config, env file and batch input in dir,
// and removes the files its proposed commands wrote there before.
func writeSimFiles(dir string, srv *simulate.Server) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{simLedgerFile, healthFile, healthFile + "-wal", healthFile + "-shm", simBatchOut, simEvalFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	files := map[string]string{
		simConfigFile: simConfig(srv, dir),
		simEnvFile:    simEnv(dir),
		simBatchFile:  simBatch,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// simConfig is the config of the sim's providers on srv: no key, the
// demo's prices and families, route "default" in the demo's order, and a
// health store in dir.
func simConfig(srv *simulate.Server, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# The config of detour sim: its fake providers on %s.
# Written anew each time the sim starts; it works while the sim runs.
# The fake providers take any key, so none is named (key_env: "").
providers:
`, srv.URL)
	chain := make([]string, 0, len(demoChain))
	for _, c := range demoChain {
		fmt.Fprintf(&b, "  %s: {dialect: %s, base_url: %s, key_env: \"\", pool: %s}\n",
			c.provider, srv.Dialect(c.provider), srv.BaseURL(c.provider), c.pool)
	}
	b.WriteString("targets:\n")
	for _, c := range demoChain {
		id := c.provider + "/" + c.model
		chain = append(chain, id)
		fmt.Fprintf(&b, "  %s: {family: %s, price: {in: %g, out: %g}}\n", id, c.family, c.in, c.out)
	}
	store, _ := json.Marshal("sqlite:" + filepath.Join(dir, healthFile))
	fmt.Fprintf(&b, "routes:\n  default:\n    chain:\n")
	for _, id := range chain {
		fmt.Fprintf(&b, "      - %s\n", id)
	}
	fmt.Fprintf(&b, "    budget: {max_attempts: %d}   # one send for each target at least\n", len(chain))
	fmt.Fprintf(&b, "# What ask, batch, probe and serve learn (parked targets) is kept apart\n# from your real health store.\nhealth:\n  store: %s\n", store)
	return b.String()
}

// simEnv is the env file: the variables that point detour at the sim.
func simEnv(dir string) string {
	return fmt.Sprintf(`# Source this file (. %s) to point detour's commands at detour sim:
# its config, and a ledger and health store apart from your real ones.
export DETOUR_CONFIG=%s
export DETOUR_LEDGER=%s
`, shellQuote(filepath.Join(dir, simEnvFile)), shellQuote(filepath.Join(dir, simConfigFile)), shellQuote(filepath.Join(dir, simLedgerFile)))
}

// simBatch is the batch input the sim writes: detour's own lines.
const simBatch = `{"id": "q1", "prompt": "Name one prime number."}
{"id": "q2", "prompt": "Translate to French: good morning."}
{"id": "q3", "system": "Answer in one word.", "prompt": "What colour is a clear sky?"}
{"id": "q4", "prompt": "Name a river in Japan.", "max_tokens": 64}
{"id": "q5", "target": "deepseek/deepseek-chat", "prompt": "Say hello."}
{"id": "q6", "messages": [{"role": "user", "content": "Count to three."}]}
`

// printSimGuide prints what runs where, the files written and the
// commands to try next.
func printSimGuide(w io.Writer, ctl *simControl, dir, day string) {
	url := ctl.srv.URL
	what := "the measured bad day of detour demo (--day bad)"
	if day == "good" {
		what = "a good day: every request answered (--day good)"
	}
	fmt.Fprintf(w, "detour sim: %d fake providers on %s, %s\n\n", len(ctl.names), url, what)
	ctl.writeStatus(w)
	path := func(name string) string { return shellQuote(filepath.Join(dir, name)) }
	fmt.Fprintf(w, "\nWrote, in %s:\n", dir)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\tthe config: these providers (no key needed), route \"default\" chaining them\n", simConfigFile)
	fmt.Fprintf(tw, "  %s\tDETOUR_CONFIG and DETOUR_LEDGER for the commands below: a ledger and health store of their own\n", simEnvFile)
	fmt.Fprintf(tw, "  %s\tsix requests for detour batch\n", simBatchFile)
	tw.Flush()
	self := selfName()
	fmt.Fprintln(w, "\nTry, in another terminal:")
	printCommands(w, [][2]string{
		{". " + path(simEnvFile), "or give each command --config and --ledger"},
		{self + " check", "the chain, its pools and keys (none needed)"},
		{self + ` ask "Name one prime number."`, "the answer; failed attempts and hops on stderr"},
		{self + " batch " + path(simBatchFile) + " -o " + path(simBatchOut), "a file of requests"},
		{self + " report", "what each target did, from the ledger"},
		{self + " probe", "cheap checks that put parked targets back in service"},
		{self + " eval --route default --reps 1 --results " + path(simEvalFile), "measure the targets, propose an order"},
		{self + " serve", "the gateway on http://127.0.0.1:8787 (OpenAI, Anthropic, Gemini surfaces), then:"},
		{`curl -s http://127.0.0.1:8787/v1/chat/completions -H 'content-type: application/json' -d '{"model": "default", "messages": [{"role": "user", "content": "Name one prime number."}]}'`, ""},
	})
	fmt.Fprintln(w, "\nSwitch faults while it runs, and watch detour react:")
	printCommands(w, [][2]string{
		{"curl -X POST " + url + "/control/groq-free/dry", "the free tier's daily quota spent: a wall"},
		{"curl -X POST " + url + "/control/all/healthy", "every provider answers"},
		{"curl -X POST " + url + "/control/all/bad-day", "back to the measured day"},
		{"curl " + url + "/control", "each provider's mode and requests"},
	})
	fmt.Fprintf(w, "Modes: %s, or a fault kind (%s sim --help).\n", strings.Join(modeNames(), ", "), self)
	fmt.Fprintln(w, "\nOne line per request served follows on stderr (-q: none). Ctrl-C stops the sim.")
}
