package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/report"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// demoDayStart is when the demo day of the tests begins: it runs across
// midnight UTC.
var demoDayStart = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// demoDayLedger runs the day `detour demo` runs (simulate.DayProfile, the
// demo's chain of seven targets in three dialects) through the real router
// over loopback HTTP, one request every 15 minutes for a day, under a fake
// clock shared by the providers and the router: measured latencies and
// Retry-After waits cost no real time. It returns the ledger as JSON lines.
func demoDayLedger(t testing.TB, requests int) []byte {
	t.Helper()
	return demoLedger(t, requests, 15*time.Minute)
}

// demoLedger is demoDayLedger with a request every every: a run of a few
// minutes, or a month.
func demoLedger(t testing.TB, requests int, every time.Duration) []byte {
	t.Helper()
	clk := clock.NewFake(demoDayStart)
	srv, err := simulate.Start(simulate.DayProfile(1)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	srv.Clock = clk

	chain := []struct {
		provider, model string
		in, out         float64
	}{
		{simulate.GroqFree, simulate.GroqModel, 0, 0},
		{simulate.GeminiFree, simulate.GeminiModel, 0, 0},
		{simulate.OpenRouter, simulate.OpenRouterExpensive, 3, 15},
		{simulate.MistralPayg, simulate.MistralModel, 0.1, 0.3},
		{simulate.Anthropic, simulate.AnthropicModel, 1, 5},
		{simulate.DeepSeek, simulate.DeepSeekModel, 0.27, 1.1},
		{simulate.Together, simulate.TogetherModel, 0.88, 0.88},
	}
	route := &router.Route{Name: "default", Budget: policy.Interactive()}
	for _, c := range chain {
		d := srv.Dialect(c.provider)
		route.Chain = append(route.Chain, router.Target{Provider: c.provider, Model: c.model,
			Dialect: string(d), PriceIn: c.in, PriceOut: c.out,
			Client: config.NewClient(config.Dialect(d), srv.BaseURL(c.provider), "demo-key", nil, nil)})
	}
	// A second route that starts at the prepaid end, for a second chain.
	cheap := &router.Route{Name: "cheap", Budget: policy.Interactive(), Chain: []router.Target{route.Chain[3], route.Chain[5]}}

	mem := &ledger.Memory{}
	r := (&router.Router{Ledger: mem, Clock: clk, Rand: func() float64 { return 0.5 }}).Init()
	ctx := context.Background()
	for i := range requests {
		rt := route
		if i%4 == 3 {
			rt = cheap
		}
		req := &llm.Request{MaxTokens: 256, Messages: []llm.Message{{Role: llm.RoleUser,
			Content: fmt.Sprintf("Request %d: name one prime number.", i+1)}}}
		// A failed request is part of the day; the ledger has it.
		_, _ = r.Complete(ctx, rt, req, router.Options{RequestID: fmt.Sprintf("req-%03d", i+1)})
		if next := demoDayStart.Add(time.Duration(i+1) * every); clk.Now().Before(next) {
			clk.Advance(next.Sub(clk.Now()))
		}
	}
	var buf bytes.Buffer
	for _, rec := range mem.Records() {
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// demoDayReport summarizes demoDayLedger by the hour.
func demoDayReport(t testing.TB) report.Report {
	t.Helper()
	s := report.NewSummary()
	if err := report.Summarize(bytes.NewReader(demoDayLedger(t, 96)), report.Filter{}, s); err != nil {
		t.Fatal(err)
	}
	return s.ReportBy(time.Hour)
}

// demoRunReport summarizes demoLedger, its buckets picked from its span
// (ReportBy(0)), as report --html does.
func demoRunReport(t testing.TB, requests int, every time.Duration) report.Report {
	t.Helper()
	s := report.NewSummary()
	if err := report.Summarize(bytes.NewReader(demoLedger(t, requests, every)), report.Filter{}, s); err != nil {
		t.Fatal(err)
	}
	return s.ReportBy(0)
}
