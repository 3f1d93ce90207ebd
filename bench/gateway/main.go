// Command gateway is detour's gateway load benchmark, `make bench-gateway`:
// a simulate upstream on loopback, a load generator of its own, and three
// systems measured in one run, interleaved so that drift hits them alike:
//
//	direct   the upstream itself
//	proxy    a plain httputil.ReverseProxy with a pooled transport
//	         (bench/revproxy): the floor any Go proxy reaches on this machine
//	detour   `detour serve` with a one-target route, ledger off
//
// With -baseline, a second detour binary (a build of an earlier commit)
// runs as a fourth system, baseline, in the same rounds and in the
// slow-stream scenario: what a change costs, measured beside it rather
// than against figures of another day.
//
// For each cell (connections x streaming or not) it runs the three back to
// back, each system in a fresh process of its own (so its CPU time and peak
// RSS belong to that cell alone), and repeats the rounds, rotating the
// order; the report gives the median of the rounds. A fourth system,
// detour+ledger, runs in the -ledger-conns cells with the ledger written to
// a temporary file. Then a failover scenario: a route whose first target
// always answers 429 with a Retry-After of -park, measuring the latency a
// failover adds and counting the requests that reach the failing target
// while it is parked. Then the slow-stream scenario (-slow-streams, see
// slow.go): thousands of 10-second streams open at once through the proxy,
// then through detour, measuring memory per stream and CPU per chunk. Last,
// time to answer under faults (-faults, see faults.go): a chain whose head
// is sick in one way at a time and whose next target answers, requests one
// after another; -faults-only runs it alone.
//
// With -quiet (on by default) each measurement waits for the rest of the
// machine to be idle and is run again when other processes took more than
// their share of the CPUs meanwhile; the report shows how busy everything
// was. -perf adds a perf(1) profile of detour serve under load.
//
// Every process listens on 127.0.0.1 only; the binaries are built once into
// a temporary directory, which is removed at the end (-keep keeps it, with
// the configs, logs and ledgers). Children are stopped on exit and on
// Ctrl-C, and killed by the kernel if the harness dies. CPU time and RSS
// come from /proc (Linux); the load generator shares the machine's CPUs
// with the system under test and the upstream, and the report says how busy
// each was.
//
//	go run ./bench/gateway                                # the full run, about 8 minutes
//	go run ./bench/gateway -duration 2s -rounds 1         # a quick look
//	go run ./bench/gateway -conns 32 -stream=false -failover=false -perf
//	go run ./bench/gateway -systems proxy,detour -upstream-per-chunk 20ms
//	go run ./bench/gateway -matrix=false -failover=false -slow-streams 500
//	go run ./bench/gateway -bin DIR -baseline OLD/detour -conns 32 -failover=false -slow-streams 1000
//	go run ./bench/gateway -faults-only                   # time to answer under faults, about a minute
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The systems under test.
const (
	sysDirect = "direct"
	sysProxy  = "proxy"
	sysDetour = "detour"
	sysLedger = "detour+ledger"
	// sysBaseline is the -baseline binary: detour as an earlier commit
	// built it.
	sysBaseline = "baseline"
)

// options are the command's flags.
type options struct {
	healthStore      string
	duration, warmup time.Duration
	rounds           int
	conns            []int
	streams          []bool
	ledgerConns      []int
	systems          []string
	failover         bool
	failoverDur      time.Duration
	park             time.Duration
	promptBytes      int
	latency          time.Duration
	perChunk         time.Duration
	quiet            float64
	out              string
	bin              string
	baseline         string
	detourArgs       string
	keep             bool
	perf             bool
	perfConns        int
	cgo              bool
	paired           bool
	surface          string
	matrix           bool
	slowStreams      int
	slowPieces       int
	slowGap          time.Duration
	slowRamp         time.Duration
	soak             soakOptions
	faults           faultsOptions
}

func main() {
	var o options
	var conns, streams, ledgerConns, systems string
	flag.StringVar(&o.healthStore, "health-store", "", "detour's health.store (\"\": memory; e.g. redis://127.0.0.1:6379/0 to measure the shared store)")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "measured time per system and cell")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "load before each measured window (not counted)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of the whole matrix; the report gives their median")
	flag.StringVar(&conns, "conns", "1,32,128", "connection counts, comma-separated")
	flag.StringVar(&streams, "stream", "false,true", "streaming modes to run, comma-separated booleans")
	flag.StringVar(&ledgerConns, "ledger-conns", "32", "cells where detour also runs with its ledger on (\"\" for none)")
	flag.StringVar(&systems, "systems", "direct,proxy,detour", "systems to measure, comma-separated: direct, proxy, detour")
	flag.BoolVar(&o.failover, "failover", true, "run the failover scenario")
	flag.BoolVar(&o.paired, "paired", true, "measure the 1-connection latency of proxy and detour paired: both running, requests alternating (rounds x duration)")
	flag.DurationVar(&o.failoverDur, "failover-duration", 4*time.Second, "measured time of each failover run")
	flag.DurationVar(&o.park, "park", 200*time.Millisecond, "Retry-After of the failing target's 429s: how long detour parks it")
	flag.IntVar(&o.promptBytes, "prompt-bytes", 1024, "size of the user message of each request")
	flag.DurationVar(&o.latency, "upstream-latency", 0, "upstream time to first token (0: answers at once, which measures pure overhead)")
	flag.DurationVar(&o.perChunk, "upstream-per-chunk", 0, "upstream time between streamed events (0: all at once); a non-streamed answer waits as long in all")
	flag.Float64Var(&o.quiet, "quiet", 25, "percent of the machine's CPU other processes may use during a measurement: wait up to 3s for it "+
		"before each one, and run it once more (keeping the quieter) when exceeded; 0 turns this off")
	flag.StringVar(&o.out, "out", "", "also write the markdown report to this file")
	flag.StringVar(&o.bin, "bin", "", "directory holding prebuilt detour, upstream and revproxy binaries (default: build them)")
	flag.StringVar(&o.baseline, "baseline", "", "path of another detour binary (a build of an earlier commit) to measure beside detour as the system `baseline`: "+
		"in every round of the matrix and in the slow-stream scenario, with detour / baseline ratios in the report")
	flag.StringVar(&o.detourArgs, "detour-args", "", "extra arguments for every `detour serve`, space-separated (with -bin holding a `make build-pprof` detour: \"--pprof 127.0.0.1:6060\")")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binaries, config, logs, ledgers, profiles)")
	flag.BoolVar(&o.perf, "perf", false, "after the matrix, profile detour serve under load with perf(1), if installed")
	flag.IntVar(&o.perfConns, "perf-conns", 32, "connections of the -perf runs")
	flag.StringVar(&o.surface, "surface", surfaceOpenAI, "the API the load speaks: openai (POST /v1/chat/completions) or anthropic (POST /v1/messages; "+
		"the upstream answers in Anthropic's dialect too, so detour translates nothing but decodes and encodes both ways) "+
		"or responses (POST /v1/responses, translated to chat completions for the OpenAI upstream; -systems detour only)")
	flag.BoolVar(&o.matrix, "matrix", true, "run the matrix of systems x conns x stream (and the paired latency); false runs only the scenarios")
	flag.IntVar(&o.slowStreams, "slow-streams", 5000, "streams open at once in the slow-stream scenario, proxy then detour (0: skip it)")
	flag.IntVar(&o.slowPieces, "slow-pieces", 200, "content chunks of each slow stream")
	flag.DurationVar(&o.slowGap, "slow-gap", 50*time.Millisecond, "time between the chunks of a slow stream")
	flag.DurationVar(&o.slowRamp, "slow-ramp", 2*time.Second, "time over which the slow streams' connections open, evenly spread")
	flag.BoolVar(&o.cgo, "cgo", false, "build the three binaries with cgo (Go's default where a C compiler is found) instead of as `make build` builds detour: static, CGO_ENABLED=0")
	soakFlags(&o.soak)
	faultsFlags(&o.faults)
	flag.Parse()
	var err error
	if o.conns, err = parseInts(conns); err != nil || len(o.conns) == 0 {
		fatalf("-conns %q: want positive integers like 1,32,128", conns)
	}
	if o.ledgerConns, err = parseInts(ledgerConns); err != nil {
		fatalf("-ledger-conns %q: want positive integers like 32, or \"\"", ledgerConns)
	}
	if o.streams, err = parseBools(streams); err != nil || len(o.streams) == 0 {
		fatalf("-stream %q: want false, true or false,true", streams)
	}
	for _, f := range strings.Split(systems, ",") {
		switch f = strings.TrimSpace(f); f {
		case sysDirect, sysProxy, sysDetour:
			o.systems = append(o.systems, f)
		case "":
		default:
			fatalf("-systems: unknown system %q: use direct, proxy or detour", f)
		}
	}
	switch o.surface {
	case surfaceOpenAI, surfaceAnthropic:
	case surfaceResponses:
		for _, sys := range o.systems {
			if sys != sysDetour {
				fatalf("-surface responses: the upstream speaks chat completions, so only detour serves the Responses API: use -systems detour")
			}
		}
		o.paired = false // it pairs detour with the proxy
	default:
		fatalf("-surface %q: use openai, anthropic or responses", o.surface)
	}
	if o.rounds < 1 || o.duration <= 0 || o.warmup < 0 || o.park <= 0 || o.failoverDur <= 0 || o.promptBytes < 0 || o.latency < 0 || o.perChunk < 0 {
		fatalf("-rounds must be at least 1, -duration, -park and -failover-duration positive, -warmup and -prompt-bytes not negative")
	}
	if o.slowStreams < 0 || o.slowPieces < 1 || o.slowGap < 0 || o.slowRamp < 0 {
		fatalf("-slow-streams must not be negative, -slow-pieces at least 1, -slow-gap and -slow-ramp not negative")
	}
	if o.baseline != "" {
		if st, err := os.Stat(o.baseline); err != nil || st.IsDir() {
			fatalf("-baseline %q: want the path of a detour binary (e.g. built by `git worktree add /tmp/old HEAD~1 && cd /tmp/old && make build`)", o.baseline)
		}
		if slices.Contains(o.systems, sysDetour) {
			o.systems = append(o.systems, sysBaseline)
		}
	}

	b := &bench{opt: o, started: time.Now()}
	// Thousands of slow streams need as many sockets in this process and in
	// each child, which inherits the raised limit.
	if b.nofile, err = raiseOpenFiles(); err != nil {
		fatalf("raising the open-files limit: %v", err)
	}
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigc
		fmt.Fprintln(os.Stderr, "\nbench: interrupted: stopping every process")
		stopAll()
		b.cleanup()
		os.Exit(130)
	}()
	err = b.run()
	stopAll()
	b.cleanup()
	if err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseBools(s string) ([]bool, error) {
	var out []bool
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseBool(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// run builds the binaries, starts the upstream, runs the matrix, the
// failover scenario and the profiles, and prints the report.
func (b *bench) run() error {
	dir, err := os.MkdirTemp("", "detour-bench-")
	if err != nil {
		return err
	}
	b.dir = dir
	b.loadStart = loadAvg()
	if err := b.build(); err != nil {
		return err
	}
	if b.opt.soak.duration > 0 {
		return b.runSoak()
	}
	if b.opt.faults.only {
		return b.runFaultsOnly()
	}
	b.up, err = startProc("upstream", filepath.Join(dir, "upstream.log"), b.bins["upstream"],
		"-fail-retry-after", b.opt.park.String(), "-latency", b.opt.latency.String(), "-per-chunk", b.opt.perChunk.String(),
		"-slow-pieces", strconv.Itoa(b.opt.slowPieces), "-slow-gap", b.opt.slowGap.String())
	if err != nil {
		return err
	}
	if b.upAddr, err = hostPort(b.up.url); err != nil {
		return err
	}
	if err := b.writeConfig(); err != nil {
		return err
	}
	b.logf("upstream %s (pid %d); detour config %s; open files %d", b.up.url, b.up.pid, b.cfgPath, b.nofile)

	systems := b.opt.systems
	if !b.opt.matrix {
		systems = nil
	}
	for round := range b.opt.rounds {
		for _, conns := range b.opt.conns {
			for _, stream := range b.opt.streams {
				order := rotate(systems, round)
				if contains(b.opt.ledgerConns, conns) && slices.Contains(systems, sysDetour) {
					order = append(order, sysLedger)
				}
				for _, sys := range order {
					c, err := b.measure(sys, conns, stream, round)
					if err != nil {
						return err
					}
					b.cells = append(b.cells, c)
					b.logf("round %d/%d  %-13s %3d conns  stream=%-5v  %8.0f req/s  p50 %s  p99 %s  cpu %.3f ms/req  rss %.1f MiB  others %.0f%%%s",
						round+1, b.opt.rounds, sys, conns, stream, c.rps, ms(c.p50), ms(c.p99), c.cpuPerReq(c.sutCPU),
						mib(c.rss), c.others(), errNote(c))
				}
			}
		}
	}
	if b.opt.paired && slices.Contains(systems, sysProxy) && slices.Contains(systems, sysDetour) {
		if err := b.runPaired(); err != nil {
			return err
		}
	}
	if b.opt.failover {
		if err := b.runFailover(); err != nil {
			return err
		}
	}
	if b.opt.slowStreams > 0 {
		if err := b.runSlow(); err != nil {
			return err
		}
	}
	if b.opt.faults.on {
		if err := b.runFaults(); err != nil {
			return err
		}
	}
	if b.opt.perf {
		if err := b.runPerf(); err != nil {
			b.logf("perf: %v", err)
		}
	}
	if b.up.exited() {
		return fmt.Errorf("the upstream exited during the run; its stderr:\n%s", tail(b.up.log))
	}
	b.loadEnd = loadAvg()
	report := b.report()
	fmt.Print(report)
	if b.opt.out != "" {
		if err := os.WriteFile(b.opt.out, []byte(report), 0o644); err != nil {
			return err
		}
		b.logf("report written to %s", b.opt.out)
	}
	return nil
}

// cleanup removes the temporary directory unless -keep.
func (b *bench) cleanup() {
	if b.dir == "" {
		return
	}
	if b.opt.keep {
		fmt.Fprintf(os.Stderr, "bench: kept %s\n", b.dir)
		return
	}
	os.RemoveAll(b.dir)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%5.1fs] %s\n", time.Since(b.started).Seconds(), fmt.Sprintf(format, args...))
}

// build compiles detour, the upstream and the reverse proxy into the
// temporary directory (or takes them from -bin).
func (b *bench) build() error {
	b.bins = map[string]string{}
	names := []string{"detour", "upstream", "revproxy"}
	if b.opt.bin != "" {
		for _, n := range names {
			p := filepath.Join(b.opt.bin, n)
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("-bin: %w", err)
			}
			b.bins[n] = p
		}
		return nil
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		return errors.New("run from inside the detour module (go env GOMOD names no go.mod), or pass -bin")
	}
	root := filepath.Dir(mod)
	start := time.Now()
	cmd := exec.Command("go", "build", "-trimpath", "-o", b.dir+string(filepath.Separator),
		"./cmd/detour", "./bench/upstream", "./bench/revproxy")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+buildCgo(b.opt.cgo))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	for _, n := range names {
		b.bins[n] = filepath.Join(b.dir, n)
	}
	b.logf("built detour, upstream and revproxy in %.1fs", time.Since(start).Seconds())
	return nil
}

// buildCgo is the CGO_ENABLED of the binaries' build.
func buildCgo(cgo bool) string {
	if cgo {
		return "1"
	}
	return "0"
}

// writeConfig writes the detour config: a one-target route bench-model,
// the failover route whose first target always answers 429 (its
// max_server_wait is under the 429's Retry-After, so detour parks that
// target instead of waiting), and failover-tail, whose first target
// answers 429 with Retry-After: 1 under the default budget (a wait detour
// obeys until the target's breaker opens).
func (b *bench) writeConfig() error {
	b.cfgPath = filepath.Join(b.dir, "detour.yaml")
	cfg := fmt.Sprintf(`# generated by bench/gateway
providers:
  up:   {dialect: openai, base_url: %[1]s/up/v1, key_env: "", pool: local}
  upa:  {dialect: anthropic, base_url: %[1]s/upa, key_env: "", pool: local}
  fail: {dialect: openai, base_url: %[1]s/fail/v1, key_env: "", pool: free}
  slow429: {dialect: openai, base_url: %[1]s/slow429/v1, key_env: "", pool: free}
routes:
  bench-model:
    chain: [%[3]s/bench-model]
  failover:
    chain: [fail/bench-model, up/bench-model]
    budget: {max_server_wait: %[2]s}
  failover-tail:
    chain: [slow429/bench-model, %[3]s/bench-model]
health:
  open_for: 1s   # a breaker opened by slow429 probes it every second, so the tail run sees probes fail
`, b.up.url, durationYAML(b.opt.park/4), b.upstreamProvider())
	if b.opt.healthStore != "" {
		cfg += fmt.Sprintf("  store: %q\n  namespace: bench-%d\n", b.opt.healthStore, os.Getpid())
	}
	return os.WriteFile(b.cfgPath, []byte(cfg), 0o600)
}

// durationYAML writes d with a unit detour's config accepts, at least 1ms.
func durationYAML(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10) + "ms"
}

// The APIs the load can speak (-surface).
const (
	surfaceOpenAI    = "openai"
	surfaceAnthropic = "anthropic"
	// surfaceResponses is OpenAI's Responses API, which no upstream speaks:
	// detour translates it to chat completions for the OpenAI upstream, so
	// only detour is measured, against its own openai-surface figures.
	surfaceResponses = "responses"
)

// surfacePath is the path of the -surface API on detour and the proxy.
func (b *bench) surfacePath() string {
	switch b.opt.surface {
	case surfaceAnthropic:
		return "/v1/messages"
	case surfaceResponses:
		return "/v1/responses"
	}
	return "/v1/chat/completions"
}

// upstreamProvider is the upstream provider that answers in the -surface
// dialect: up (OpenAI) or upa (Anthropic).
func (b *bench) upstreamProvider() string {
	if b.opt.surface == surfaceAnthropic {
		return "upa"
	}
	return "up"
}

// benchRequest is the measured request of the -surface API to path on
// addr, asking for the route (or upstream model) bench-model.
func (b *bench) benchRequest(name, addr, path string, stream bool) request {
	switch b.opt.surface {
	case surfaceAnthropic:
		return newAnthropicRequest(name, addr, path, messagesBody("bench-model", stream, b.opt.promptBytes), stream)
	case surfaceResponses:
		return newResponsesRequest(name, addr, path, responsesBody("bench-model", stream, b.opt.promptBytes), stream)
	}
	return newRequest(name, addr, path, chatBody("bench-model", stream, b.opt.promptBytes), stream)
}

// responsesBody returns a Responses API request for model with a user
// input of about n bytes, the twin of chatBody.
func responsesBody(model string, stream bool, n int) []byte {
	req := map[string]any{
		"model":             model,
		"instructions":      "You are a terse assistant.",
		"input":             prompt(n),
		"max_output_tokens": 64,
		"temperature":       0,
		"store":             false,
	}
	if stream {
		req["stream"] = true
	}
	return marshalBody(req)
}

// messagesBody returns an Anthropic Messages request for model with a user
// message of about n bytes, the twin of chatBody.
func messagesBody(model string, stream bool, n int) []byte {
	req := map[string]any{
		"model":       model,
		"system":      "You are a terse assistant.",
		"messages":    []map[string]string{{"role": "user", "content": prompt(n)}},
		"max_tokens":  64,
		"temperature": 0,
	}
	if stream {
		req["stream"] = true
	}
	return marshalBody(req)
}

// prompt is a user message of about n bytes (at least 11).
func prompt(n int) string {
	const words = "lorem ipsum dolor sit amet consectetur adipiscing elit "
	var b strings.Builder
	b.WriteString("Say hello. ")
	for b.Len() < n {
		b.WriteString(words)
	}
	return b.String()[:max(n, 11)]
}

// chatBody returns an OpenAI chat request for model with a user message of
// about n bytes.
func chatBody(model string, stream bool, n int) []byte {
	req := map[string]any{
		"model": model,
		"messages": []map[string]string{
			{"role": "system", "content": "You are a terse assistant."},
			{"role": "user", "content": prompt(n)},
		},
		"max_tokens":  64,
		"temperature": 0,
	}
	if stream {
		req["stream"] = true
		req["stream_options"] = map[string]bool{"include_usage": true}
	}
	return marshalBody(req)
}

// marshalBody encodes a request body the benchmark builds; its maps of
// plain values always encode.
func marshalBody(req map[string]any) []byte {
	out, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return out
}

// startDetour starts `detour serve` on a free loopback port; ledger "-"
// means none.
func (b *bench) startDetour(tag, ledger string) (*proc, error) {
	return startProc("detour serve", filepath.Join(b.dir, tag+".log"), b.bins["detour"],
		b.serveArgs(b.cfgPath, ledger)...)
}

// detourBin returns the detour binary that runs as sys: the -baseline
// one for the baseline, else this checkout's.
func (b *bench) detourBin(sys string) string {
	if sys == sysBaseline {
		return b.opt.baseline
	}
	return b.bins["detour"]
}

// serveArgs returns the arguments of `detour serve` with config cfg and
// ledger ("-": none), listening on a free loopback port.
func (b *bench) serveArgs(cfg, ledger string) []string {
	return append([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--ledger", ledger, "--log-level", "warn"},
		strings.Fields(b.opt.detourArgs)...)
}

// resetUpstream makes the upstream forget the requests it has seen.
func (b *bench) resetUpstream() error {
	resp, err := http.Post(b.up.url+"/_bench/reset", "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("upstream reset: %s", resp.Status)
	}
	return nil
}

// upstreamStats fetches the upstream's counts since its last reset.
func (b *bench) upstreamStats() (upstreamStats, error) {
	var st upstreamStats
	resp, err := http.Get(b.up.url + "/_bench/stats")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("upstream stats: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// upstreamStats mirrors the upstream's GET /_bench/stats.
type upstreamStats struct {
	Requests     map[string]int `json:"requests"`
	FailArrivals []int64        `json:"fail_arrivals"`
}

// measure runs one system at one cell. With -quiet it first waits (at
// most 3 s) for the other processes of the machine to calm down, and runs
// the cell once more when they still took more than their share, keeping
// the quieter of the two.
func (b *bench) measure(sys string, conns int, stream bool, round int) (cell, error) {
	var best cell
	for try := 1; try <= 2; try++ {
		if b.opt.quiet > 0 {
			waitQuiet(b.opt.quiet, 3*time.Second)
		}
		c, err := b.runCell(sys, conns, stream, round)
		if err != nil {
			return c, err
		}
		if try == 1 || c.others() < best.others() {
			best = c
		}
		best.tries = try
		if b.opt.quiet <= 0 || best.others() <= b.opt.quiet {
			break
		}
		b.logf("round %d/%d  %-13s %3d conns  stream=%-5v  other processes took %.0f%% of the machine: once more",
			round+1, b.opt.rounds, sys, conns, stream, c.others())
	}
	return best, nil
}

// waitQuiet returns once the machine was busy less than pct percent over
// a quarter of a second, or after max.
func waitQuiet(pct float64, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		a, err := machineCPU()
		if err != nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
		z, err := machineCPU()
		if err != nil || z.total <= a.total {
			return
		}
		if float64(z.busy-a.busy)/float64(z.total-a.total)*100 < pct {
			return
		}
	}
}

// runCell measures one system at one cell in a fresh process.
func (b *bench) runCell(sys string, conns int, stream bool, round int) (cell, error) {
	c := cell{system: sys, conns: conns, stream: stream, round: round}
	sut, addr, path := b.up, b.upAddr, "/"+b.upstreamProvider()+b.surfacePath()
	tag := fmt.Sprintf("r%d-%s-c%d-s%v", round+1, strings.ReplaceAll(sys, "+", "-"), conns, stream)
	var err error
	switch sys {
	case sysProxy:
		sut, err = startProc("revproxy", filepath.Join(b.dir, tag+".log"), b.bins["revproxy"], "-upstream", b.up.url+"/"+b.upstreamProvider())
	case sysDetour:
		sut, err = b.startDetour(tag, "-")
	case sysBaseline:
		sut, err = startProc("detour serve", filepath.Join(b.dir, tag+".log"), b.detourBin(sys), b.serveArgs(b.cfgPath, "-")...)
	case sysLedger:
		c.ledgerPath = filepath.Join(b.dir, tag+".jsonl")
		sut, err = b.startDetour(tag, c.ledgerPath)
	}
	if err != nil {
		return c, err
	}
	if sut != b.up {
		defer sut.stop()
		if addr, err = hostPort(sut.url); err != nil {
			return c, err
		}
		path = b.surfacePath()
	}
	pid := strconv.Itoa(sut.pid)
	upPid := strconv.Itoa(b.up.pid)
	var sampler *rssSampler
	var sut0, up0, self0, sut1, up1, self1 time.Duration
	var mc0, mc1 cpuStat
	var resetErr error
	res := runLoad(loadSpec{
		addr: addr, conns: conns, warmup: b.opt.warmup, duration: b.opt.duration,
		requests: []request{b.benchRequest("", addr, path, stream)},
		onStart: func() {
			resetErr = b.resetUpstream() // keeps the upstream's request log short
			sut0, _ = cpuTime(pid)
			up0, _ = cpuTime(upPid)
			self0, _ = cpuTime("self")
			mc0, _ = machineCPU()
			sampler = sampleRSS(pid)
		},
		onEnd: func() {
			sut1, _ = cpuTime(pid)
			up1, _ = cpuTime(upPid)
			self1, _ = cpuTime("self")
			mc1, _ = machineCPU()
			c.rss = sampler.end()
			c.anon, c.file = rssSplit(pid)
		},
	})
	if resetErr != nil {
		return c, resetErr
	}
	if sut.exited() {
		return c, fmt.Errorf("%s exited during the run; its stderr:\n%s", sys, tail(sut.log))
	}
	_, c.hwm, _ = memory(pid)
	all := res.all()
	c.reqs, c.fails, c.errText = res.ok, res.fail, res.errSummary()
	c.rps, c.p50, c.p99 = res.rps(), all.Quantile(0.5), all.Quantile(0.99)
	c.ttfb50 = res.ttfb.Quantile(0.5)
	c.sutCPU, c.upCPU, c.selfCPU = sut1-sut0, up1-up0, self1-self0
	c.wall = b.opt.duration
	c.machineBusy, c.steal = mc1.busy-mc0.busy, mc1.steal-mc0.steal
	if c.ledgerPath != "" {
		sut.stop() // flush and close the ledger before counting its lines
		c.ledgerLines, c.ledgerBytes = countLines(c.ledgerPath)
	}
	if res.ok == 0 {
		return c, fmt.Errorf("%s at %d conns (stream %v): no request succeeded: %s; its stderr:\n%s",
			sys, conns, stream, c.errText, tail(sut.log))
	}
	return c, nil
}

// countLines returns the number of lines and bytes of a file.
func countLines(path string) (lines, size int64) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	return int64(strings.Count(string(b), "\n")), int64(len(b))
}

func rotate(s []string, n int) []string {
	out := make([]string, 0, len(s)+1)
	for i := range s {
		out = append(out, s[(i+n)%len(s)])
	}
	return out
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// loadAvg returns the 1-, 5- and 15-minute load averages, or "n/a".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

// machine describes the host for the report.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = " " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%d CPUs (%s), %s%s, %s", runtime.NumCPU(), model, runtime.GOOS, kernel, runtime.Version())
}
