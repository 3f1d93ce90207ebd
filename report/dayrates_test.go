package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/report"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// The demo's measured day, each target asked on its own (no retry, no
// fallback, no health carried over) over loopback HTTP: the report's
// failure rate per target must come out as the day's scripted rate
// (simulate.DayProfile) within sampling tolerance, and its walls as walls.
func TestReport_DemoDayComesOutAsScripted(t *testing.T) {
	const n = 300
	srv, err := simulate.Start(simulate.DayProfile(7)...)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.LatencyScale = -1 // no latency: rates, not time, are measured here
	scripted := []struct {
		provider, model string
		fail            float64 // the scripted failure rate
		wallOnly        bool    // every failure is a wall
	}{
		{simulate.GroqFree, simulate.GroqModel, 0.39, true},
		{simulate.GeminiFree, simulate.GeminiModel, 0.86, false},
		{simulate.OpenRouter, simulate.OpenRouterExpensive, 1, true},
		{simulate.OpenRouter, simulate.OpenRouterCheap, 0, false},
		{simulate.MistralPayg, simulate.MistralModel, 0.42, false},
		{simulate.DeepSeek, simulate.DeepSeekModel, 0, false},
		{simulate.Together, simulate.TogetherModel, 0, false},
		{simulate.Anthropic, simulate.AnthropicModel, 0.05, false},
	}
	var lines bytes.Buffer
	clk := clock.NewFake(demoDayStart)
	for _, s := range scripted {
		d := srv.Dialect(s.provider)
		route := &router.Route{Name: "one", Budget: policy.Budget{MaxAttempts: 1, MaxPerTarget: 1},
			Chain: []router.Target{{Provider: s.provider, Model: s.model, Dialect: string(d),
				Client: config.NewClient(config.Dialect(d), srv.BaseURL(s.provider), "demo-key", nil, nil)}}}
		for i := range n {
			mem := &ledger.Memory{}
			r := &router.Router{Ledger: mem, Clock: clk} // a fresh breaker: every request is sent
			req := &llm.Request{MaxTokens: 64, Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf("q%d", i)}}}
			_, _ = r.Complete(context.Background(), route, req, router.Options{NoFallback: true})
			for _, rec := range mem.Records() {
				b, _ := json.Marshal(rec)
				lines.Write(append(b, '\n'))
			}
		}
	}
	s := report.NewSummary()
	if err := report.Summarize(&lines, report.Filter{}, s); err != nil {
		t.Fatal(err)
	}
	rep := s.Report()
	by := map[string]report.Target{}
	for _, tg := range rep.Targets {
		by[tg.Target] = tg
	}
	for _, sc := range scripted {
		id := sc.provider + "/" + sc.model
		tg, ok := by[id]
		if !ok || tg.Calls != n {
			t.Errorf("%s: %d calls in the report, want %d", id, tg.Calls, n)
			continue
		}
		got := float64(tg.Failures) / float64(tg.Calls)
		tol := 4*math.Sqrt(sc.fail*(1-sc.fail)/n) + 0.005 // four standard errors
		if math.Abs(got-sc.fail) > tol {
			t.Errorf("%s: failure rate %.3f in the report, scripted %.2f (tolerance ±%.3f)", id, got, sc.fail, tol)
		}
		if want := 100 * (1 - sc.fail); tg.ReachabilityPct == nil || math.Abs(*tg.ReachabilityPct-want) > 100*tol+0.1 {
			t.Errorf("%s: reachability %v%%, want about %.0f%%", id, tg.ReachabilityPct, want)
		}
		if sc.wallOnly && tg.Failures > 0 {
			walls := 0
			for _, w := range rep.Walls {
				if w.Target == id {
					walls++
				}
			}
			if walls == 0 {
				t.Errorf("%s: %d wall failures and no wall interval", id, tg.Failures)
			}
		}
	}
}
