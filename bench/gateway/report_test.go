package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The targets table gives detour against the proxy, judged by the
// issue's goals, and with -baseline it gives detour's throughput and CPU per
// request over the baseline's, round by round, and the slow scenario its
// memory and CPU per chunk over the baseline's.
func TestReportTargets_BaselineRatios(t *testing.T) {
	b := &bench{opt: options{streams: []bool{false}, baseline: "/old/detour"}}
	for round, cpu := range []time.Duration{900, 1200, 1300} {
		b.cells = append(b.cells,
			cell{system: sysDetour, conns: 32, round: round, reqs: 1000, rps: 900, sutCPU: cpu * time.Millisecond},
			cell{system: sysBaseline, conns: 32, round: round, reqs: 1000, rps: 1000, sutCPU: 1000 * time.Millisecond},
			cell{system: sysProxy, conns: 32, round: round, reqs: 1000, rps: 1000, sutCPU: 1000 * time.Millisecond})
	}
	slow := func(sys string, hwm int64, cpu time.Duration) *slowRun {
		return &slowRun{system: sys, hwm: hwm << 20, sutCPU: cpu,
			res: &slowResult{streams: 1000, peakInFlight: 1000, events: 100000}}
	}
	b.slow = []*slowRun{slow(sysProxy, 60, 2*time.Second), slow(sysDetour, 66, 2*time.Second), slow(sysBaseline, 60, 4*time.Second)}
	var w strings.Builder
	b.reportTargets(func(format string, args ...any) { fmt.Fprintf(&w, format, args...) })
	for _, want := range []string{
		"| throughput detour / proxy, 32 conns, stream=false | 0.90x (0.90x–0.90x) | ≥ 0.9x | **met** |",
		"| CPU per request detour / proxy, 32 conns, stream=false | 1.20x (0.90x–1.30x) | ≤ 1.3x | **met** |",
		"| throughput detour / baseline, 32 conns, stream=false | 0.90x (0.90x–0.90x); below 1x in 3 of 3 rounds | no worse: ≥ 1x, below in few rounds | — |",
		"| CPU per request detour / baseline, 32 conns, stream=false | 1.20x (0.90x–1.30x); above 1x in 2 of 3 rounds | no worse: ≤ 1x, above in few rounds | — |",
		"| memory per stream detour / baseline, 1000 streams | 1.10x (67.6 vs 61.4 KiB) |",
		"| CPU per chunk detour / baseline, 1000 streams | 0.50x (20.00 vs 40.00 µs) |",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, w.String())
		}
	}
}

// A ratio past its goal reads not met, at the floor's and the ceiling's
// side alike.
func TestReportTargets_GoalsNotMet(t *testing.T) {
	b := &bench{opt: options{streams: []bool{true}}}
	for round := range 3 {
		b.cells = append(b.cells,
			cell{system: sysDetour, conns: 32, round: round, stream: true, reqs: 1000, rps: 800, sutCPU: 1400 * time.Millisecond},
			cell{system: sysProxy, conns: 32, round: round, stream: true, reqs: 1000, rps: 1000, sutCPU: 1000 * time.Millisecond})
	}
	var w strings.Builder
	b.reportTargets(func(format string, args ...any) { fmt.Fprintf(&w, format, args...) })
	for _, want := range []string{
		"| throughput detour / proxy, 32 conns, stream=true | 0.80x (0.80x–0.80x) | ≥ 0.9x | **not met** |",
		"| CPU per request detour / proxy, 32 conns, stream=true | 1.40x (1.40x–1.40x) | ≤ 1.3x | **not met** |",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, w.String())
		}
	}
}
