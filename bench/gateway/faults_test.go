package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detourhq/detour/cli"
)

// asDetourEnv, set in a re-executed test binary, makes it `detour` with
// its arguments: the tests run a real `detour serve` process without
// building one.
const asDetourEnv = "DETOUR_BENCH_AS_DETOUR"

func TestMain(m *testing.M) {
	if os.Getenv(asDetourEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Main(ctx, os.Args[1:], cli.Env{})
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// The scenario in small: every fault class in both stream modes (late
// streamed only) through real `detour serve` processes, with short
// limits. Each row is there, every request answered, by n once h is
// known dry, no send reaches h while it is, and each time is what its
// fault must cost.
func TestFaults_TinyRun(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(asDetourEnv, "1") // inherited by the detour processes only: TestMain has run
	const header, first = 300 * time.Millisecond, 400 * time.Millisecond
	b := &bench{started: time.Now(), dir: t.TempDir(), bins: map[string]string{"detour": exe},
		opt: options{promptBytes: 64, streams: []bool{false, true}, faults: faultsOptions{
			requests: 4, rpm: 2, retryAfter: 30 * time.Second, headerTimeout: header, firstToken: first, late: 3 * time.Second}}}
	t.Cleanup(stopAll)
	if err := b.runFaults(); err != nil {
		t.Fatal(err)
	}
	var w strings.Builder
	b.reportFaults(func(format string, args ...any) { fmt.Fprintf(&w, format, args...) })
	report := w.String()
	for _, class := range faultClasses {
		for _, stream := range []bool{false, true} {
			r := b.faults.row(class, stream)
			if class == faultLate && !stream {
				if r != nil {
					t.Errorf("late ran non-streamed")
				}
				continue
			}
			if r == nil {
				t.Errorf("%s stream=%v: no row", class, stream)
				continue
			}
			name := fmt.Sprintf("%s stream=%v", class, stream)
			p50, p99 := r.times.Quantile(0.5), r.times.Quantile(0.99)
			if r.times.Count() != 4 || r.errs != 0 {
				t.Errorf("%s: %d measured, %d errors (%s); want 4 and 0", name, r.times.Count(), r.errs, r.errSample)
			}
			if r.dry != 0 {
				t.Errorf("%s: %d sends reached h while it was known dry", name, r.dry)
			}
			row := fmt.Sprintf("| %s | %v | %s | 4 | %s | %s | %d | 0 |", b.opt.faults.faultName(class), stream,
				b.opt.faults.limitsText(class), msFault(p50), msFault(p99), r.headSends)
			if !strings.Contains(report, row) {
				t.Errorf("%s: the report lacks %q:\n%s", name, row, report)
			}
			wantHead, wantSends, maxP99 := 0, 1, 2*time.Second
			switch class {
			case faultHealthy:
				wantHead, wantSends, maxP99 = 4, 4, time.Second
			case faultRetryAfter, faultRemaining0:
				maxP99 = time.Second
			case faultQuota:
				wantSends, maxP99 = 2, time.Second
			case fault503, faultSilent, faultLate:
				wantSends = 3 // the breaker opens at the third failure in a row
			}
			if r.byHead != wantHead || r.byNext != 4-wantHead || r.headSends != wantSends {
				t.Errorf("%s: answered by h %d, n %d, %d sends to h; want %d, %d, %d", name, r.byHead, r.byNext, r.headSends,
					wantHead, 4-wantHead, wantSends)
			}
			if p50 <= 0 || p99 < p50 || p99 > maxP99 {
				t.Errorf("%s: p50 %s, p99 %s; want 0 < p50 <= p99 <= %s", name, p50, p99, maxP99)
			}
			if class == faultRetryAfter && p50 >= time.Second {
				t.Errorf("%s: p50 %s: a 30 s Retry-After held the request", name, p50)
			}
			if limit := map[string]time.Duration{faultSilent: header, faultLate: first}[class]; limit > 0 && p99 < limit {
				t.Errorf("%s: p99 %s, under the limit %s the first requests must wait out", name, p99, limit)
			}
		}
	}
	if strings.Contains(report, "not met") {
		t.Errorf("a goal is not met:\n%s", report)
	}
}

func TestDrySends(t *testing.T) {
	at := func(secs ...float64) []time.Time {
		t0 := time.Unix(1e6, 0)
		out := make([]time.Time, len(secs))
		for i, s := range secs {
			out[i] = t0.Add(time.Duration(s * float64(time.Second)))
		}
		return out
	}
	o := faultsOptions{rpm: 3, retryAfter: 30 * time.Second}
	for _, tc := range []struct {
		class    string
		arrivals []time.Time
		want     int
	}{
		{faultHealthy, at(0, 1, 2), 0},
		{faultRetryAfter, at(0), 0},
		{faultRetryAfter, at(0, 0.1, 29.9), 2},
		{faultRetryAfter, at(0, 30, 59, 61), 1}, // a probe at 30 parks again until 60
		{faultRemaining0, at(0, 5), 1},
		{faultQuota, at(0, 1, 2), 0},
		{faultQuota, at(0, 1, 2, 3, 59), 2},
		{faultQuota, at(0, 1, 2, 60, 61, 62, 63), 1}, // a new minute from 60
		{fault503, at(0, 0.5, 1), 0},
		{fault503, at(0, 0.5, 1, 5), 1},
		{faultSilent, at(0, 2, 4, 14, 15, 24.5), 1}, // parked 4-14, probe at 14 parks until 24
		{faultLate, at(0, 15, 30, 31), 1},
	} {
		if got := o.drySends(tc.class, tc.arrivals); got != tc.want {
			t.Errorf("%s %v: %d dry sends, want %d", tc.class, tc.arrivals, got, tc.want)
		}
	}
}
