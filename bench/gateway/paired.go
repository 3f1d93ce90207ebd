package main

import (
	"fmt"
	"path/filepath"
	"time"
)

// The added latency at one connection is a difference of a few tens of
// microseconds between two latencies of a few hundred, which drift by more
// than that from one second to the next on a shared VM. So besides the
// matrix (each system in a window of its own), it is measured paired: the
// proxy and detour both running, one load-generator connection to each,
// requests alternating between them, so that every slow spell of the
// machine falls on both alike. Both idle half the time, as one connection
// leaves them anyway.

// pairedResult is one paired run: the latencies of each system over the
// same window.
type pairedResult struct {
	stream        bool
	proxy, detour Histogram
	fails         uint64
	errText       string
}

// added returns detour's p50 minus the proxy's.
func (r *pairedResult) added() time.Duration {
	return r.detour.Quantile(0.5) - r.proxy.Quantile(0.5)
}

// runPaired measures the paired 1-connection latency, streamed and not,
// for rounds × duration each.
func (b *bench) runPaired() error {
	for _, stream := range b.opt.streams {
		tag := fmt.Sprintf("paired-s%v", stream)
		prx, err := startProc("revproxy", filepath.Join(b.dir, tag+"-proxy.log"), b.bins["revproxy"], "-upstream", b.up.url+"/"+b.upstreamProvider())
		if err != nil {
			return err
		}
		det, err := b.startDetour(tag, "-")
		if err != nil {
			prx.stop()
			return err
		}
		r, err := b.pairedRun(prx, det, stream)
		prx.stop()
		det.stop()
		if err != nil {
			return err
		}
		b.paired = append(b.paired, r)
		b.logf("paired 1 conn  stream=%-5v  proxy p50 %s  detour p50 %s  added %+.3f ms  (%d + %d requests)",
			stream, ms(r.proxy.Quantile(0.5)), ms(r.detour.Quantile(0.5)), msf(float64(r.added())),
			r.proxy.Count(), r.detour.Count())
	}
	return nil
}

func (b *bench) pairedRun(prx, det *proc, stream bool) (*pairedResult, error) {
	pa, err := hostPort(prx.url)
	if err != nil {
		return nil, err
	}
	da, err := hostPort(det.url)
	if err != nil {
		return nil, err
	}
	if b.opt.quiet > 0 {
		waitQuiet(b.opt.quiet, 3*time.Second)
	}
	res := runLoad(loadSpec{conns: 1, warmup: b.opt.warmup, duration: time.Duration(b.opt.rounds) * b.opt.duration,
		requests: []request{
			b.benchRequest(sysProxy, pa, b.surfacePath(), stream),
			b.benchRequest(sysDetour, da, b.surfacePath(), stream),
		}})
	r := &pairedResult{stream: stream, fails: res.fail, errText: res.errSummary()}
	for label, dst := range map[string]*Histogram{sysProxy: &r.proxy, sysDetour: &r.detour} {
		h := res.hists[label]
		if h == nil || h.Count() == 0 {
			return nil, fmt.Errorf("paired run (stream %v): no %s request succeeded: %s", stream, label, r.errText)
		}
		dst.Merge(h)
	}
	return r, nil
}

// reportPaired writes the paired runs.
func (b *bench) reportPaired(p func(string, ...any)) {
	if len(b.paired) == 0 {
		return
	}
	p("### Added latency at 1 connection, paired\n\n")
	p("The proxy and detour both running, one connection to each, requests alternating between them over the same %s: "+
		"a slow spell of the machine falls on both alike.\n\n", time.Duration(b.opt.rounds)*b.opt.duration)
	p("| stream | proxy p50 ms | detour p50 ms | added p50 ms | proxy p99 ms | detour p99 ms | requests each | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range b.paired {
		p("| %v | %s | %s | %+.3f | %s | %s | %d | %d |\n", r.stream, ms(r.proxy.Quantile(0.5)), ms(r.detour.Quantile(0.5)),
			msf(float64(r.added())), ms(r.proxy.Quantile(0.99)), ms(r.detour.Quantile(0.99)), min(r.proxy.Count(), r.detour.Count()), r.fails)
	}
	p("\n")
}
