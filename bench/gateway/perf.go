package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// perfResult is a CPU profile of detour serve under load, read with perf(1).
type perfResult struct {
	stream bool
	conns  int
	rps    float64
	// self lists the functions with the most samples of their own;
	// children the functions with the most samples under them.
	self, children string
	data           string // perf.data path (kept with -keep)
}

// runPerf profiles detour serve under -perf-conns connections with
// `perf record`, once per streaming mode. Go binaries keep frame pointers,
// so perf's call graphs need nothing else.
func (b *bench) runPerf() error {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return errors.New("perf is not installed (apt-get install linux-perf); no profile taken")
	}
	for _, stream := range b.opt.streams {
		tag := fmt.Sprintf("perf-s%v", stream)
		det, err := b.startDetour(tag, "-")
		if err != nil {
			return err
		}
		addr, err := hostPort(det.url)
		if err != nil {
			det.stop()
			return err
		}
		data := filepath.Join(b.dir, tag+".data")
		var rec *exec.Cmd
		var recErr error
		var recLog bytes.Buffer
		res := runLoad(loadSpec{
			addr: addr, conns: b.opt.perfConns, warmup: b.opt.warmup, duration: b.opt.duration,
			requests: []request{b.benchRequest("", addr, b.surfacePath(), stream)},
			onStart: func() {
				rec = exec.Command(perf, "record", "-F", "999", "-g", "-p", strconv.Itoa(det.pid), "-o", data)
				rec.Stdout, rec.Stderr = &recLog, &recLog
				recErr = rec.Start()
			},
			onEnd: func() {
				if recErr == nil {
					rec.Process.Signal(syscall.SIGINT) //nolint:errcheck // perf may have failed already
					rec.Wait()                         //nolint:errcheck // its output says
				}
			},
		})
		det.stop()
		if recErr != nil {
			return recErr
		}
		if _, err := os.Stat(data); err != nil {
			return fmt.Errorf("perf record wrote no profile: %s", recLog.String())
		}
		pr := perfResult{stream: stream, conns: b.opt.perfConns, rps: res.rps(), data: data}
		pr.self = perfReport(perf, data, "--no-children", "1.0", 25)
		pr.children = perfReport(perf, data, "--children", "4.0", 40)
		b.perf = append(b.perf, pr)
		b.logf("perf: detour serve at %d conns stream=%v, %.0f req/s under perf; profile %s", pr.conns, stream, pr.rps, data)
	}
	return nil
}

// perfReport returns the first n lines of a flat `perf report` by symbol.
func perfReport(perf, data, mode, limit string, n int) string {
	out, err := exec.Command(perf, "report", "-i", data, "--stdio", mode, "--sort", "symbol",
		"--percent-limit", limit, "-g", "none").Output()
	if err != nil {
		return "perf report: " + err.Error()
	}
	var lines []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// Drop the empty columns some perf versions print after the symbol.
		line = strings.TrimRight(line, " ")
		for strings.HasSuffix(line, " -") {
			line = strings.TrimRight(strings.TrimSuffix(line, " -"), " ")
		}
		lines = append(lines, line)
		if len(lines) == n {
			break
		}
	}
	return strings.Join(lines, "\n")
}

// reportPerf writes the profiles taken with -perf.
func (b *bench) reportPerf(p func(string, ...any)) {
	for _, r := range b.perf {
		p("### Profile of detour serve, %d conns, stream=%v (perf record -F 999 -g, %s; %.0f req/s under perf)\n\n",
			r.conns, r.stream, b.opt.duration, r.rps)
		p("Functions by their own samples:\n\n```\n%s\n```\n\nFunctions by samples under them:\n\n```\n%s\n```\n\n", r.self, r.children)
	}
}

// flagArgs returns the flags given on the command line, as -name=value.
func flagArgs() []string {
	var out []string
	flag.Visit(func(f *flag.Flag) { out = append(out, "-"+f.Name+"="+f.Value.String()) })
	return out
}

func numCPU() int { return runtime.NumCPU() }
