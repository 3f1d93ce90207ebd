package batch

import (
	"math"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	sim "github.com/detourhq/detour/simulate"
)

func limits(limitReq, leftReq int, resetReq time.Duration, limitTok, leftTok int, resetTok time.Duration) *llm.RateLimit {
	return &llm.RateLimit{LimitRequests: limitReq, RemainingRequests: leftReq, ResetRequests: resetReq,
		LimitTokens: limitTok, RemainingTokens: leftTok, ResetTokens: resetTok}
}

func TestLimits_LowRemainingPacesBeforeA429(t *testing.T) {
	p := &router.Target{Provider: "p", Model: "m"}
	ok := func(rl *llm.RateLimit, u llm.Usage) router.Attempt {
		return router.Attempt{Target: p, Status: "ok", RateLimit: rl, Usage: u}
	}
	inf := math.Inf(1)
	tests := []struct {
		name    string
		ceiling float64 // 0: none
		steps   []router.Attempt
		want    float64
	}{
		{"no headers leave it unpaced", 0, []router.Attempt{ok(nil, llm.Usage{})}, inf},
		{"plenty left leaves it unpaced", 0, []router.Attempt{ok(limits(100, 50, time.Minute, -1, -1, -1), llm.Usage{})}, inf},
		{"a tenth left spreads it over the reset", 0,
			[]router.Attempt{ok(limits(100, 10, 20*time.Second, -1, -1, -1), llm.Usage{})}, 30},
		{"none left waits for the reset", 0,
			[]router.Attempt{ok(limits(100, 0, 30*time.Second, -1, -1, -1), llm.Usage{})}, 2},
		{"no limit named: one left is low", 0,
			[]router.Attempt{ok(limits(-1, 1, 6*time.Second, -1, -1, -1), llm.Usage{})}, 10},
		{"unknown reset says nothing", 0, []router.Attempt{ok(limits(100, 0, -1, -1, -1, -1), llm.Usage{})}, inf},
		{"never below the floor", 0,
			[]router.Attempt{ok(limits(100, 0, 10*time.Hour, -1, -1, -1), llm.Usage{})}, MinRPM},
		{"never above the ceiling", 12,
			[]router.Attempt{ok(limits(1000, 100, time.Minute, -1, -1, -1), llm.Usage{})}, 12},
		{"tokens left count as answers of this size", 0,
			[]router.Attempt{ok(limits(-1, -1, -1, 100000, 5000, time.Minute), llm.Usage{InputTokens: 400, OutputTokens: 100})}, 10},
		{"the lower of requests and tokens", 0,
			[]router.Attempt{ok(limits(100, 5, time.Minute, 100000, 2000, time.Minute), llm.Usage{InputTokens: 900, OutputTokens: 100})}, 2},
		{"low again rises one a minute at most", 0, []router.Attempt{
			ok(limits(100, 1, time.Minute, -1, -1, -1), llm.Usage{}),
			ok(limits(100, 10, 10*time.Second, -1, -1, -1), llm.Usage{}),
		}, 2},
		{"plenty again recovers as after a 429", 0, []router.Attempt{
			ok(limits(100, 3, time.Minute, -1, -1, -1), llm.Usage{}),
			ok(limits(100, 100, time.Minute, -1, -1, -1), llm.Usage{}),
			ok(nil, llm.Usage{}),
		}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rpm map[string]float64
			if tt.ceiling > 0 {
				rpm = map[string]float64{"p": tt.ceiling}
			}
			l := NewLimits(rpm, true, nil)
			for _, a := range tt.steps {
				l.Observe(a)
			}
			if got := l.RPM("p"); got != tt.want && math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("%v a minute, want %v", got, tt.want)
			}
		})
	}
	fixed := NewLimits(nil, false, nil)
	fixed.Observe(ok(limits(100, 0, time.Second, -1, -1, -1), llm.Usage{}))
	if got := fixed.RPM("p"); !math.IsInf(got, 1) {
		t.Fatalf("not adaptive: %v a minute, want unpaced", got)
	}
}

// A provider whose answers say its window is nearly spent is paced from
// those answers, with no 429 ever served.
func TestRun_LowRateLimitHeadersPaceTheProviderWithoutA429(t *testing.T) {
	low := sim.Fault{Kind: sim.OK, Header: http.Header{
		"X-Ratelimit-Limit-Requests": {"100"}, "X-Ratelimit-Remaining-Requests": {"2"},
		"X-Ratelimit-Reset-Requests": {"300ms"},
	}}
	g := newRig(t, sim.Provider{Name: "p1", Script: []sim.Fault{low, low, low, low}})
	in, out := g.items(4), filepath.Join(g.dir, "out.jsonl")
	l := NewLimits(nil, true, nil)
	start := time.Now()
	sum, err := g.run(func(r *Runner) {
		r.Concurrency = 1
		r.Limits = l
	}, in, out)
	took := time.Since(start)
	if err != nil || sum.Answered != 4 {
		t.Fatalf("%v, %+v", err, sum)
	}
	// Two left over 300 ms: 400 a minute, one send every 150 ms.
	if got := l.RPM("p1"); got != 400 {
		t.Fatalf("p1 at %v a minute, want 400 (2 left, 300 ms to the reset)", got)
	}
	// The bucket holds one turn when the rate is set: the second item goes
	// at once, the last two wait 150 ms each.
	if took < 250*time.Millisecond {
		t.Fatalf("4 items took %s, want the last two sent 150 ms apart", took)
	}
	st := g.srv.Stats()
	if n := st.Served("p1", "", sim.RateLimit); n != 0 || st.Requests("p1", "") != 4 {
		t.Fatalf("p1 served %d 429s of %d requests, want none of 4", n, st.Requests("p1", ""))
	}
}
