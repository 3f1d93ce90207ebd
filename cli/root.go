package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes of the detour command. Scripts may rely on them.
const (
	// ExitOK means the command did its job (ask: an answer was printed).
	ExitOK = 0
	// ExitFailed means every candidate failed (or was skipped); the reason
	// of each is on stderr.
	ExitFailed = 1
	// ExitUsage means the command line was wrong.
	ExitUsage = 2
	// ExitFailClosed means the request was refused in a way no other
	// provider may be asked to route around: invalid request, policy
	// refusal, context overflow.
	ExitFailClosed = 3
	// ExitConfig means the configuration could not be loaded or is invalid.
	ExitConfig = 4
	// ExitCanceled means the command was interrupted.
	ExitCanceled = 130
)

// Env is the outside world of one command line. Nil fields mean the
// process's own (os.Stdin, os.Stdout, os.Stderr, os.Getenv).
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

func (e Env) withDefaults() Env {
	if e.Stdin == nil {
		e.Stdin = os.Stdin
	}
	if e.Stdout == nil {
		e.Stdout = os.Stdout
	}
	if e.Stderr == nil {
		e.Stderr = os.Stderr
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	return e
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// Main runs the detour command line args and returns the exit code.
func Main(ctx context.Context, args []string, env Env) int {
	env = env.withDefaults()
	root := newRoot(env)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && !errors.Is(ee.err, errPrinted) {
			fmt.Fprintln(env.Stderr, "detour:", ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag, wrong arguments.
	fmt.Fprintln(env.Stderr, "detour:", err)
	fmt.Fprintln(env.Stderr, "Run 'detour --help' for usage.")
	return ExitUsage
}

// errPrinted marks an error whose text the command already printed.
var errPrinted = errors.New("already printed")

func newRoot(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "detour",
		Short: "Route LLM calls down a chain of cheap providers, safely",
		Long: `detour sends each LLM request down an ordered chain of candidates. It tells a
passing hiccup (retry) from a wall (no credit, daily quota: move on at once),
parks dead targets until their reset, never routes around an invalid request
or a policy refusal, and writes one ledger line per attempt, failures included.

Start with 'detour demo': seven fake providers on a measured bad day, no key
needed. Then 'detour sim' keeps them running, with a config that points at
them, to try ask, serve, batch, eval, probe and report without a key. With
your own keys: 'detour check', then 'detour ask'.

'detour serve' is a gateway for the OpenAI, Anthropic and Gemini SDKs:
` + surfacesText("  "),
		Example: `  go run ./cmd/detour demo
  detour sim                       # then, in another terminal: . ~/.local/state/detour/sim/env
  detour ask "Summarise RFC 9110 in one line"
  detour serve                     # OpenAI base URL http://127.0.0.1:8787/v1`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("config", "", "config file (default $DETOUR_CONFIG, else ./detour.yaml, else presets from API key variables)")
	root.AddCommand(newAsk(env), newCheck(env), newExplain(env), newDemo(env), newServe(env), newReport(env), newProbe(env), newBatch(env), newEval(env), newSim(env))
	return root
}
