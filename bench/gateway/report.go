package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// bench is one run of the benchmark: its settings, processes and results.
type bench struct {
	opt     options
	started time.Time
	dir     string            // temporary directory
	bins    map[string]string // binary name -> path
	up      *proc             // the upstream
	upAddr  string
	cfgPath string
	// loadStart and loadEnd are /proc/loadavg's figures around the run:
	// other work on the machine shows there.
	loadStart, loadEnd string

	cells    []cell
	failover *failoverResult
	paired   []*pairedResult
	perf     []perfResult
	slow     []*slowRun
	faults   *faultsResult
	// nofile is the soft open-files limit, raised to the hard one.
	nofile uint64
}

// cell is one system measured at one cell in one round.
type cell struct {
	system string
	conns  int
	stream bool
	round  int

	reqs, fails uint64
	errText     string
	rps         float64
	p50, p99    time.Duration
	ttfb50      time.Duration
	wall        time.Duration
	// CPU time used during the measured window by the system under test
	// (the upstream itself for direct), the upstream and the load generator.
	sutCPU, upCPU, selfCPU time.Duration
	// machineBusy is the CPU time every process of the machine used during
	// the window (/proc/stat), steal the time the hypervisor took.
	machineBusy, steal time.Duration
	// rss is the largest RSS sampled during the measured window, hwm the
	// process's peak RSS (VmHWM) at its end.
	rss, hwm int64
	// anon and file split the RSS at the end of the window: heap and
	// stacks, and pages of the binary and other files.
	anon, file int64
	// tries is how many times the cell ran (see -quiet).
	tries int

	ledgerPath               string
	ledgerLines, ledgerBytes int64
}

// others returns the share (%) of the machine's CPU time that processes
// other than the benchmark's used during the window.
func (c cell) others() float64 {
	ours := c.upCPU + c.selfCPU
	if c.system != sysDirect {
		ours += c.sutCPU
	}
	return max(0, float64(c.machineBusy-ours)) / float64(c.wall) / float64(numCPU()) * 100
}

// cpuPerReq returns d per successful request, in ms.
func (c cell) cpuPerReq(d time.Duration) float64 {
	if c.reqs == 0 {
		return 0
	}
	return float64(d) / float64(time.Millisecond) / float64(c.reqs)
}

// key names a cell and system across rounds.
type key struct {
	system string
	conns  int
	stream bool
}

// byKey returns the cells of k, one per round, in round order.
func (b *bench) byKey(k key) []cell {
	var out []cell
	for _, c := range b.cells {
		if c.system == k.system && c.conns == k.conns && c.stream == k.stream {
			out = append(out, c)
		}
	}
	return out
}

// perRound returns f of k's cell and of ref's cell of the same round, for
// each round where both ran.
func (b *bench) perRound(k, ref key, f func(c, r cell) float64) []float64 {
	var out []float64
	refs := b.byKey(ref)
	for _, c := range b.byKey(k) {
		for _, r := range refs {
			if r.round == c.round {
				out = append(out, f(c, r))
			}
		}
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread formats the median of xs and, with more than one value, their range.
func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return "n/a"
	}
	m := fmt.Sprintf(format, median(xs))
	if len(xs) == 1 {
		return m
	}
	return fmt.Sprintf("%s (%s–%s)", m, fmt.Sprintf(format, slices.Min(xs)), fmt.Sprintf(format, slices.Max(xs)))
}

// judged gives the measured, goal and status cells of a ratio's row:
// against goal (a ceiling when less, else a floor), or, with no goal,
// "no worse" and in how many rounds detour did worse ("; above 1x in 9 of
// 12 rounds"): a run's spread nearly always holds 1x, and the count is
// what tells a cost that is there in most rounds from noise (with one
// round it says nothing).
func judged(xs []float64, goal float64, less bool) string {
	op, word := "≥", "below"
	if less {
		op, word = "≤", "above"
	}
	worse := func(x float64) bool {
		if less {
			return x > 1
		}
		return x < 1
	}
	if goal == 0 {
		count := ""
		if len(xs) > 1 {
			n := 0
			for _, x := range xs {
				if worse(x) {
					n++
				}
			}
			count = fmt.Sprintf("; %s 1x in %d of %d rounds", word, n, len(xs))
		}
		return fmt.Sprintf("%s%s | no worse: %s 1x, %s in few rounds | —", spread(xs, "%.2fx"), count, op, word)
	}
	return fmt.Sprintf("%s | %s %gx | %s", spread(xs, "%.2fx"), op, goal, yesNo(!worse(median(xs)/goal)))
}

func of(cs []cell, f func(cell) float64) []float64 {
	out := make([]float64, len(cs))
	for i, c := range cs {
		out[i] = f(c)
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

func msf(x float64) float64 { return x / float64(time.Millisecond) }

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func errNote(c cell) string {
	if c.fails == 0 {
		return ""
	}
	return fmt.Sprintf("  ERRORS %d: %s", c.fails, c.errText)
}

func yesNo(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

// keys returns the keys measured, in the order of the flags.
func (b *bench) keys() []key {
	var out []key
	for _, conns := range b.opt.conns {
		for _, stream := range b.opt.streams {
			for _, sys := range []string{sysDirect, sysProxy, sysDetour, sysBaseline, sysLedger} {
				k := key{sys, conns, stream}
				if len(b.byKey(k)) > 0 {
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// report returns the markdown report.
func (b *bench) report() string {
	var w strings.Builder
	o := b.opt
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("## detour gateway benchmark\n\n")
	p("- machine: %s; load average (1, 5, 15 min) %s at the start, %s at the end\n", machine(), b.loadStart, b.loadEnd)
	p("- command: `make bench-gateway` (`go run ./bench/gateway %s`)\n", strings.Join(flagArgs(), " "))
	p("- settings: %s warm-up + %s measured per system and cell, %d round(s), figures are medians of the rounds "+
		"(ranges in parentheses); each system in a fresh process per cell; request: %s with a %d-byte "+
		"user message; upstream: `simulate` in the same dialect (time to first token %s, %s between events), its %d-character answer in %s when streamed\n",
		o.warmup, o.duration, o.rounds, map[string]string{surfaceOpenAI: "OpenAI chat completion", surfaceAnthropic: "Anthropic Messages request",
			surfaceResponses: "OpenAI Responses request (translated to a chat completion upstream)"}[o.surface],
		o.promptBytes, o.latency, o.perChunk, len("Hello from up/bench-model."),
		map[string]string{surfaceOpenAI: "9 SSE events", surfaceAnthropic: "Anthropic's message_start ... message_stop events",
			surfaceResponses: "9 SSE events upstream, the Responses event sequence to the client"}[o.surface])
	if o.healthStore != "" {
		p("- detour's health store: %s\n", o.healthStore)
	}
	if o.bin == "" {
		p("- binaries: the three built alike, `go build -trimpath` with CGO_ENABLED=%s (%s)\n", buildCgo(o.cgo),
			map[bool]string{false: "static, as `make build` builds detour", true: "-cgo: Go's default where a C compiler is found, libc linked"}[o.cgo])
	} else {
		p("- binaries: prebuilt, from %s\n", o.bin)
	}
	p("- the load generator (this process), the system under test and the upstream share the machine's CPUs: " +
		"with an upstream that answers at once every cell past 1 connection is CPU-bound, and a system's " +
		"throughput is what is left to it by the other two; see \"where the CPU and memory went\". Ratios are taken inside each round, whose systems ran back to back, " +
		"then the median of the rounds: a slow spell of the host (which /proc inside a guest does not always show) " +
		"hits the three systems of a round alike\n\n")

	b.reportMatrix(p)
	b.reportTargets(p)
	b.reportPaired(p)
	b.reportLedger(p)
	b.reportFailover(p)
	b.reportSlow(p)
	b.reportFaults(p)
	b.reportCPU(p)
	b.reportPerf(p)
	b.reportErrors(p)
	return w.String()
}

// reportMatrix writes the table of the matrix, if it ran.
func (b *bench) reportMatrix(p func(string, ...any)) {
	if len(b.cells) == 0 {
		return
	}
	o := b.opt
	p("| system | conns | stream | req/s | p50 ms | p99 ms | added p50 ms | CPU ms/req | RSS MiB | peak RSS MiB | errors |\n")
	p("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range b.keys() {
		cs := b.byKey(k)
		added := "—"
		if k.system != sysDirect {
			xs := b.perRound(k, key{sysDirect, k.conns, k.stream}, func(c, r cell) float64 { return msf(float64(c.p50 - r.p50)) })
			added = fmt.Sprintf("%+.3f", median(xs))
		}
		var fails uint64
		for _, c := range cs {
			fails += c.fails
		}
		peak := fmt.Sprintf("%.1f", mib(int64(median(of(cs, func(c cell) float64 { return float64(c.hwm) })))))
		if k.system == sysDirect {
			peak += "¹"
		}
		name := k.system
		if o.quiet > 0 && median(of(cs, cell.others)) > o.quiet {
			name += " †"
		}
		p("| %s | %d | %v | %.0f | %.3f | %.3f | %s | %.4f | %.1f | %s | %d |\n", name, k.conns, k.stream,
			median(of(cs, func(c cell) float64 { return c.rps })),
			msf(median(of(cs, func(c cell) float64 { return float64(c.p50) }))),
			msf(median(of(cs, func(c cell) float64 { return float64(c.p99) }))),
			added,
			median(of(cs, func(c cell) float64 { return c.cpuPerReq(c.sutCPU) })),
			mib(int64(median(of(cs, func(c cell) float64 { return float64(c.rss) })))),
			peak, fails)
	}
	p("\nCPU ms/req: CPU time (user+system, all threads, from /proc/PID/stat) of the system's process during the " +
		"measured window per successful request; for direct that is the upstream's own. RSS: largest VmRSS sampled " +
		"every 50 ms during the window; peak: VmHWM at the end of the cell (the process started fresh for it, so it " +
		"covers the warm-up too). ¹ the upstream runs for the whole benchmark: its peak is over everything before.")
	if o.quiet > 0 {
		retried, noisy := 0, 0
		for _, c := range b.cells {
			if c.tries > 1 {
				retried++
			}
			if c.others() > o.quiet {
				noisy++
			}
		}
		p(" † other processes used more than %.0f%% of the machine during the median round (see \"where the CPU and memory went\"). "+
			"%d of %d measurements were run again because of such interference; %d stayed above it.", o.quiet, retried, len(b.cells), noisy)
	}
	p("\n\n")
}

// reportTargets writes the targets against this run's ratios.
func (b *bench) reportTargets(p func(string, ...any)) {
	p("### Targets of issue 4 (ratios inside this run, median of rounds)\n\n")
	p("| target | measured | goal | |\n|---|---|---|---|\n")
	// Against the proxy, the goals; against -baseline "no worse",
	// which one run's spread cannot decide: shown with the number of
	// rounds detour did worse in, not judged.
	metrics := []struct {
		name string
		of   func(c, r cell) float64
		less bool // lower is better: a goal is a ceiling, worse is above 1x
	}{
		{"throughput", func(c, r cell) float64 { return c.rps / r.rps }, false},
		{"CPU per request", func(c, r cell) float64 { return c.cpuPerReq(c.sutCPU) / r.cpuPerReq(r.sutCPU) }, true},
	}
	for _, ref := range []struct {
		sys   string
		goals [2]float64 // per metric; 0: no goal of its own
	}{{sysProxy, [2]float64{0.9, 1.3}}, {sysBaseline, [2]float64{}}} {
		for _, stream := range b.opt.streams {
			det, other := key{sysDetour, 32, stream}, key{ref.sys, 32, stream}
			for i, m := range metrics {
				xs := b.perRound(det, other, m.of)
				if len(xs) == 0 {
					continue
				}
				p("| %s detour / %s, 32 conns, stream=%v | %s |\n", m.name, ref.sys, stream, judged(xs, ref.goals[i], m.less))
			}
		}
	}
	for _, r := range b.paired {
		d := msf(float64(r.added()))
		p("| added p50 at 1 conn, detour − proxy, stream=%v (paired) | %+.3f ms | ≤ 0.05 ms | %s |\n", r.stream, d, yesNo(d <= 0.05))
	}
	for _, stream := range b.opt.streams {
		det, prx := key{sysDetour, 1, stream}, key{sysProxy, 1, stream}
		if d := b.perRound(det, prx, func(c, r cell) float64 { return msf(float64(c.p50 - r.p50)) }); len(d) > 0 {
			p("| added p50 at 1 conn, detour − proxy, stream=%v (windows of their own) | %s | ≤ 0.05 ms | %s |\n", stream, spread(d, "%+.3f ms"), yesNo(median(d) <= 0.05))
		}
	}
	if cs := b.byKey(key{sysDetour, 128, true}); len(cs) > 0 {
		peak := of(cs, func(c cell) float64 { return mib(c.hwm) })
		p("| peak RSS of detour at 128 concurrent streams | %s | < 30 MiB | %s |\n", spread(peak, "%.1f MiB"), yesNo(median(peak) < 30))
	}
	if f := b.failover; f != nil {
		between := 0
		for _, r := range f.park {
			between += r.arrivals.between
		}
		p("| requests reaching a parked target between probes | %d | 0 | %s |\n", between, yesNo(between == 0))
		for i, r := range f.tailRatios() {
			p("| p99 of failover-tail / one-target route, 32 conns, stream=%v | %.2fx | ≤ 2x | %s |\n", f.tail[i].stream, r, yesNo(r <= 2))
		}
		for _, t := range f.tail {
			worst := t.fail.all().Max()
			p("| slowest failover-tail answer, stream=%v (a failed probe that waited its 1 s Retry-After would show) | %s ms | < 1000 ms | %s |\n",
				t.stream, ms(worst), yesNo(worst < time.Second))
		}
	}
	b.slowTargets(p)
	p("\n")
}

// reportLedger writes the cost of the ledger.
func (b *bench) reportLedger(p func(string, ...any)) {
	var rows []string
	for _, conns := range b.opt.ledgerConns {
		for _, stream := range b.opt.streams {
			led, det := key{sysLedger, conns, stream}, key{sysDetour, conns, stream}
			cs := b.byKey(led)
			if len(cs) == 0 {
				continue
			}
			tp := b.perRound(led, det, func(c, r cell) float64 { return c.rps / r.rps })
			cpu := b.perRound(led, det, func(c, r cell) float64 { return c.cpuPerReq(c.sutCPU) - r.cpuPerReq(r.sutCPU) })
			p50 := b.perRound(led, det, func(c, r cell) float64 { return msf(float64(c.p50 - r.p50)) })
			var lines, size int64
			var reqs uint64
			for _, c := range cs {
				lines, size, reqs = lines+c.ledgerLines, size+c.ledgerBytes, reqs+c.reqs
			}
			perLine := 0.0
			if lines > 0 {
				perLine = float64(size) / float64(lines)
			}
			rows = append(rows, fmt.Sprintf("| %d | %v | %s | %s | %s | %d lines, %.0f B each |", conns, stream,
				spread(tp, "%.2fx"), spread(cpu, "%+.4f"), spread(p50, "%+.3f"), lines, perLine))
		}
	}
	if len(rows) == 0 {
		return
	}
	p("### The cost of the ledger (detour+ledger vs detour, same cells and rounds)\n\n")
	p("| conns | stream | throughput ratio | CPU ms/req added | p50 ms added | ledger written (warm-up included) |\n|---:|---|---|---|---|---|\n")
	p("%s\n\n", strings.Join(rows, "\n"))
}

// reportCPU writes where the CPU time of each cell went.
func (b *bench) reportCPU(p func(string, ...any)) {
	if len(b.cells) == 0 {
		return
	}
	p("### Where the CPU and memory went (median of rounds)\n\n")
	p("| system | conns | stream | system CPU ms/req | upstream CPU ms/req | load generator CPU ms/req | our 3 processes | other processes | steal | p50 time to headers ms | RSS anon / file MiB |\n")
	p("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	ncpu := float64(numCPU())
	for _, k := range b.keys() {
		cs := b.byKey(k)
		busy := of(cs, func(c cell) float64 {
			total := c.upCPU + c.selfCPU
			if c.system != sysDirect {
				total += c.sutCPU
			}
			return float64(total) / float64(c.wall) / ncpu * 100
		})
		others := of(cs, cell.others)
		steal := of(cs, func(c cell) float64 { return float64(c.steal) / float64(c.wall) / ncpu * 100 })
		sys := fmt.Sprintf("%.4f", median(of(cs, func(c cell) float64 { return c.cpuPerReq(c.sutCPU) })))
		if k.system == sysDirect {
			sys = "—"
		}
		p("| %s | %d | %v | %s | %.4f | %.4f | %.0f%% | %.0f%% | %.0f%% | %.3f | %.1f / %.1f |\n", k.system, k.conns, k.stream, sys,
			median(of(cs, func(c cell) float64 { return c.cpuPerReq(c.upCPU) })),
			median(of(cs, func(c cell) float64 { return c.cpuPerReq(c.selfCPU) })),
			median(busy), median(others), median(steal), msf(median(of(cs, func(c cell) float64 { return float64(c.ttfb50) }))),
			mib(int64(median(of(cs, func(c cell) float64 { return float64(c.anon) })))),
			mib(int64(median(of(cs, func(c cell) float64 { return float64(c.file) })))))
	}
	p("\nour 3 processes: CPU time of the system under test, the upstream and the load generator over the window's wall "+
		"time and the %d CPUs; other processes: the rest of the machine's busy time (/proc/stat), work that competed with "+
		"the benchmark; steal: time the hypervisor gave to other guests. RSS anon / file: RssAnon (heap, stacks) and RssFile "+
		"(mostly the binary's pages) at the end of the window. "+
		"Time to headers: until the status line reached the load generator (for a stream, detour sends its headers "+
		"with the first event).\n\n", numCPU())
}

// reportErrors lists the failed requests, if any.
func (b *bench) reportErrors(p func(string, ...any)) {
	var lines []string
	for _, c := range b.cells {
		if c.fails > 0 {
			lines = append(lines, fmt.Sprintf("- round %d %s %d conns stream=%v: %s", c.round+1, c.system, c.conns, c.stream, c.errText))
		}
	}
	if len(lines) == 0 {
		return
	}
	p("### Failed requests\n\n%s\n\n", strings.Join(lines, "\n"))
}
