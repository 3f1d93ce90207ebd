package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/residency"
	"github.com/detourhq/detour/probe"
)

type serveFlags struct {
	listen     string
	ledgerPath string
	logLevel   string
	logFormat  string
	pprof      string
}

func newServe(env Env) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Run the OpenAI-, Anthropic- and Gemini-compatible gateway",
		Long: `serve runs detour as an HTTP gateway. Point any OpenAI SDK at http://ADDR/v1,
any Anthropic SDK and any Google Gen AI (Gemini) SDK at http://ADDR: each
request's model names a route of the config (or a provider/model target) and
goes down its chain with detour's fallback rules. Every attempt is appended
to the ledger. It serves:

` + surfacesText("  ") + `
Chat surfaces answer streamed (SSE) or not, as the client asks. The /admin/
endpoints take the key of gateway.admin_key_env; without one they answer
loopback clients only.

The first line on stdout is the base URL it listens on (useful with
--listen 127.0.0.1:0, which picks a free port). Client keys, limits and the
listen address come from the config's gateway: section; with no client key the
gateway only listens on loopback. With client keys, /metrics asks for the
admin key of gateway.metrics_key_env (else answers 403), or moves to an address
of its own, gateway.metrics_listen (loopback, unless it has that key).

SIGHUP (or POST /admin/reload) reads the config again and swaps it in, all
or nothing: a file with any problem is refused and serve goes on with the
config it has (why: on stderr, and at ERROR in the log). So is a file that
removes a client key, a key's routes: list or limits, gateway.admin_key_env
or metrics_key_env, or every route: what a file cut short or emptied by a
write that is not atomic removes. To remove on purpose (a key revoked),
create the file CONFIG.allow-removals beside the config (touch
detour.yaml.allow-removals) before the SIGHUP: serve deletes it and lets
that one reload remove; or POST /admin/reload?allow_removals=true. No
reload leaves a gateway listening beyond loopback without client keys. The
config must be a regular file (a FIFO is refused, not waited on), read
within 5s.

SIGINT or SIGTERM drains: /readyz answers 503 for gateway.drain_delay (5s)
while requests are still served, so load balancers stop sending; then the
listener closes and requests in flight get gateway.drain_timeout (30s) to
finish. What is still running then is cancelled (and recorded in the
ledger), and serve exits 0. A second signal cancels it all at once.

Per-request headers: x-detour-no-fallback: true, x-detour-start: PROVIDER,
x-detour-non-idempotent: true (side effects: an attempt whose outcome is
unknown after the send is never sent again), idempotency-key, traceparent
(continued when tracing is on: telemetry.otlp or OTEL_EXPORTER_OTLP_ENDPOINT;
see detour check). Answers carry x-detour-route,
-provider, -model, -attempts, -degraded and x-request-id (request-id for
Anthropic clients).`,
		Example: `  detour serve --config detour.yaml
  OPENAI_BASE_URL=http://127.0.0.1:8787/v1 python app.py
  curl -s http://127.0.0.1:8787/v1/chat/completions -H 'content-type: application/json' \
    -d '{"model": "default", "messages": [{"role": "user", "content": "hi"}]}'
  detour serve --listen 127.0.0.1:0 --ledger - --log-level warn   # benchmark: prints its URL`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd, env, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "", "host:port to listen on (default gateway.listen, else 127.0.0.1:8787; port 0 picks a free one)")
	fl.StringVar(&f.ledgerPath, "ledger", "", "ledger file (default $DETOUR_LEDGER, else $XDG_STATE_HOME/detour/ledger.jsonl; \"-\" for none)")
	fl.StringVar(&f.logLevel, "log-level", "info", "request log level: debug, info (one line per request), warn (failures only), error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format on stderr: text or json")
	fl.StringVar(&f.pprof, "pprof", "", "serve Go's profiles (net/http/pprof, /debug/pprof/) on this loopback host:port, apart from the gateway (default off; needs a build with -tags pprof)")
	return cmd
}

func runServe(cmd *cobra.Command, env Env, f serveFlags) error {
	if f.pprof != "" && !pprofBuilt {
		return withCode(ExitUsage, errors.New("--pprof: this detour was built without the profiler; build one with it: go build -tags pprof ./cmd/detour"))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--log-level %q: use debug, info, warn or error", f.logLevel))
	}
	opts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler
	switch f.logFormat {
	case "text":
		handler = slog.NewTextHandler(env.Stderr, opts)
	case "json":
		handler = slog.NewJSONHandler(env.Stderr, opts)
	default:
		return withCode(ExitUsage, fmt.Errorf("--log-format %q: use text or json", f.logFormat))
	}
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	if err := checkFiles(stateFiles(cfg, env, health.StoreMemory, f.ledgerPath), configInput(cfg)); err != nil {
		return err
	}
	sink, closeSink, err := openLedger(f.ledgerPath, env)
	if err != nil {
		return withCode(ExitConfig, err)
	}
	defer closeSink()
	log := slog.New(handler)
	hb, closeHealth, err := openHealth(cfg, env, health.StoreMemory, f.ledgerPath, log)
	if err != nil {
		return withCode(ExitConfig, err)
	}
	defer closeHealth()
	tr, tracing, stopTracing, err := openTracing(cmd.Context(), cfg, env)
	if err != nil {
		return withCode(ExitConfig, err)
	}
	defer stopTracing() // after the drain: the last requests' spans go too
	configFlag, _ := cmd.Flags().GetString("config")
	gw, err := gateway.New(gateway.Config{File: cfg, Getenv: env.Getenv, Ledger: sink, Logger: log, Health: hb,
		Reread: func() (*config.Config, error) { return config.Reopen(configFlag, env.Getenv, 0) }, Trace: tr})
	if err != nil {
		return withCode(ExitConfig, err)
	}
	addr := f.listen
	if addr == "" {
		addr = gw.Addr()
	}
	if f.pprof != "" && !config.LoopbackAddr(f.pprof) {
		return withCode(ExitUsage, fmt.Errorf("--pprof %s: profiles are served on loopback only (e.g. 127.0.0.1:6060)", f.pprof))
	}
	if err := config.ListenError(addr, cfg.Gateway); err != nil {
		return withCode(ExitConfig, err) // the words of detour check
	}
	// Signals counted here too: main's signal.NotifyContext ends ctx at
	// the first and drops the next, the one that stops at once.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)
	go reloadOnHangup(cmd.Context(), env, gw, hups, removalMarker(config.Path(configFlag, env.Getenv)))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return withCode(ExitConfig, fmt.Errorf("listen: %w", err))
	}
	var mln net.Listener
	if maddr := gw.MetricsAddr(); maddr != "" {
		if mln, err = net.Listen("tcp", maddr); err != nil {
			ln.Close()
			return withCode(ExitConfig, fmt.Errorf("gateway.metrics_listen: %w", err))
		}
	}
	if f.pprof != "" {
		stop, err := servePprof(f.pprof, env)
		if err != nil {
			ln.Close()
			if mln != nil {
				mln.Close()
			}
			return withCode(ExitConfig, err)
		}
		defer stop()
	}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(env.Stderr, "detour serve: listening on %s (OpenAI base URL %s/v1, Anthropic and Gemini base URL %s), serving:\n", url, url, url)
	writeSurfaces(env.Stderr, "  ")
	errc := make(chan error, 2)
	go func() { errc <- gw.Serve(ln) }()
	switch {
	case mln != nil:
		fmt.Fprintf(env.Stderr, "detour serve: metrics on http://%s/metrics\n", mln.Addr())
		go func() { errc <- gw.ServeMetrics(mln) }()
	case !gw.Keyless() && cfg.Gateway.MetricsKeyEnv == "":
		fmt.Fprintln(env.Stderr, "detour serve: /metrics answers 403 on a gateway with client keys: set gateway.metrics_key_env "+
			"(an admin key) or gateway.metrics_listen (a loopback address of its own) to scrape it")
	}
	// Background probes (probe.every), on the routes served now; a reload
	// may start, change or pause them.
	pc := cfg.Probe.WithDefaults()
	prober := &probe.Prober{Health: hb, Ledger: sink, Timeout: pc.Timeout, GenerateEvery: pc.GenerateEvery}
	firstProbe := cfg.Probe.Every
	if firstProbe > 0 {
		fmt.Fprintf(env.Stderr, "detour serve: probing targets every %s (probe.every)\n", firstProbe)
	} else {
		firstProbe = time.Minute
	}
	go probeLoop(cmd.Context(), prober, firstProbe, gw.Routes, log)
	if gw.Keyless() {
		fmt.Fprintln(env.Stderr, "detour serve: no client keys configured: any local client may use it")
	}
	if tracing.On() {
		fmt.Fprintf(env.Stderr, "detour serve: tracing: %s\n", tracing)
	}
	// Start-up touched code and data of every package linked; serving
	// needs a fraction of them (an idle serve: 16 MiB resident, 5-8 MiB
	// after this). Done before the URL is out, so the first requests see
	// the process as it will be.
	if n, err := residency.DropUntouched(); err != nil {
		log.Debug("start-up pages kept", "err", err)
	} else {
		log.Debug("start-up pages dropped", "bytes", n)
	}
	fmt.Fprintln(env.Stdout, url)
	select {
	case err := <-errc:
		return withCode(ExitFailed, fmt.Errorf("serve: %w", err))
	case <-cmd.Context().Done():
	}
	servers := 1
	if mln != nil {
		servers++
	}
	return drain(cmd.Context(), env, gw, cfg.Gateway.WithDefaults(), sigs, errc, servers)
}

// drain stops gw after the first signal (ctx ended): /readyz 503 for
// gateway.drain_delay, then the drain within gateway.drain_timeout; the
// next signal on sigs cuts both short. Requests still running at the end
// are cancelled and counted in one line on stderr: serve still exits 0.
// gc is gw's gateway: section with defaults; errc gets the errors of
// servers servers (Serve's, ServeMetrics's).
func drain(ctx context.Context, env Env, gw *gateway.Server, gc config.Gateway, sigs <-chan os.Signal, errc <-chan error, servers int) error {
	delay := gc.DrainDelay
	if delay < 0 {
		delay = 0
	}
	fmt.Fprintf(env.Stderr, "detour serve: shutting down: /readyz answers 503 for %s while requests are still served, "+
		"then draining requests in flight for up to %s (a second signal stops at once)\n", delay, gc.DrainTimeout)
	hurry, stop := secondSignal(ctx, sigs)
	defer stop()
	derr := gw.Drain(hurry)
	for range servers {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return withCode(ExitFailed, fmt.Errorf("serve: %w", err))
		}
	}
	var de *gateway.DrainError
	switch {
	case errors.As(derr, &de) && hurry.Err() != nil:
		fmt.Fprintf(env.Stderr, "detour serve: second signal: cancelled %d request(s) in flight\n", de.Cut)
	case errors.As(derr, &de):
		fmt.Fprintf(env.Stderr, "detour serve: drain timeout (%s): cancelled %d request(s) still in flight\n", gc.DrainTimeout, de.Cut)
	case derr != nil:
		return withCode(ExitFailed, derr)
	}
	fmt.Fprintln(env.Stderr, "detour serve: stopped")
	return nil
}

// secondSignal returns a context that ends at the stop signal that follows
// the one that ended ctx. When a signal ended ctx (main's
// signal.NotifyContext, whose cause names it), sigs got that signal too,
// and the next one is the second; when ctx was ended otherwise (a caller's
// cancel), the first signal on sigs is.
func secondSignal(ctx context.Context, sigs <-chan os.Signal) (context.Context, context.CancelFunc) {
	hurry, cancel := context.WithCancel(context.Background())
	need := 1
	if endedBySignal(ctx) {
		need = 2
	}
	go func() {
		for range need {
			select {
			case <-sigs:
			case <-hurry.Done():
				return
			}
		}
		cancel()
	}()
	return hurry, cancel
}

// endedBySignal reports whether ctx ended with a cause of its own, as
// signal.NotifyContext's does ("terminated signal received"), rather than
// by a plain cancel or a deadline. The cause is compared by identity:
// since Go 1.26 a signal's cause also matches context.Canceled under
// errors.Is, and reading it so took the first SIGTERM for the second.
func endedBySignal(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return cause != nil && cause != context.Canceled && cause != context.DeadlineExceeded //nolint:errorlint // identity is the point
}

// removalMarkerSuffix makes the name of the file beside the config whose
// presence lets the next SIGHUP reload remove keys, limits or routes.
const removalMarkerSuffix = ".allow-removals"

// removalMarker returns the removal marker of the config file at path, or
// "" when there is no file (the config comes from the environment).
func removalMarker(path string) string {
	if path == "" {
		return ""
	}
	return path + removalMarkerSuffix
}

// reloadOnHangup reloads gw's config on each SIGHUP until ctx ends, and
// says on stderr what came of it: a config with problems, or one that
// removes keys, limits or routes (gateway.ErrReloadRemoves), is not
// loaded, and the gateway goes on with the one it has. When the file
// marker exists, serve deletes it and lets that one reload remove: a
// marker it cannot delete lets nothing through, so it never stays on.
func reloadOnHangup(ctx context.Context, env Env, gw *gateway.Server, hups <-chan os.Signal, marker string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hups:
		}
		var o gateway.ReloadOptions
		if marker != "" {
			switch err := os.Remove(marker); {
			case err == nil:
				o.AllowRemovals = true
			case !errors.Is(err, fs.ErrNotExist):
				fmt.Fprintf(env.Stderr, "detour serve: SIGHUP: %s lets no removal through, since serve cannot delete it: %v\n", marker, err)
			}
		}
		notes, err := gw.ReloadFile(o)
		if err != nil {
			fmt.Fprintf(env.Stderr, "detour serve: SIGHUP: the config was not reloaded; serving on the one loaded before:\n%v\n", err)
			if errors.Is(err, gateway.ErrReloadRemoves) && marker != "" {
				fmt.Fprintf(env.Stderr, "  if that is meant (a key revoked): touch %s and reload again (it lets one reload remove)\n", marker)
			}
			continue
		}
		msg := "config reloaded"
		if o.AllowRemovals {
			msg += " (" + marker + " let it remove)"
		}
		fmt.Fprintln(env.Stderr, "detour serve: SIGHUP: "+msg)
		for _, n := range notes {
			fmt.Fprintf(env.Stderr, "  note: %s\n", n)
		}
	}
}
