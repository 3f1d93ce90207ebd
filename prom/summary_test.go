package prom_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	"github.com/detourhq/detour/prom"
)

func TestSummaryFunc_QuantilesSumAndCountParse(t *testing.T) {
	reg := prom.NewRegistry()
	reg.SummaryFunc("app_pause_seconds", "Pauses.", []string{"pool"}, func(emit func(prom.Summary, ...string)) {
		emit(prom.Summary{Quantiles: []prom.Quantile{{Q: 0, V: 0.001}, {Q: 0.5, V: 0.002}, {Q: 1, V: 0.01}}, Sum: 0.5, Count: 90}, "main")
		emit(prom.Summary{Sum: math.Inf(1), Count: 1}, "a")
	})
	mf := parse(t, reg)["app_pause_seconds"]
	if mf.GetType() != dto.MetricType_SUMMARY || mf.GetHelp() != "Pauses." {
		t.Fatalf("family: %v", mf)
	}
	main := find(mf, map[string]string{"pool": "main"}).GetSummary()
	type q struct{ Q, V float64 }
	var got []q
	for _, x := range main.GetQuantile() {
		got = append(got, q{x.GetQuantile(), x.GetValue()})
	}
	if d := cmp.Diff([]q{{0, 0.001}, {0.5, 0.002}, {1, 0.01}}, got); d != "" {
		t.Errorf("quantiles (-want +got):\n%s", d)
	}
	if main.GetSampleSum() != 0.5 || main.GetSampleCount() != 90 {
		t.Errorf("sum %v count %v, want 0.5 and 90", main.GetSampleSum(), main.GetSampleCount())
	}
	a := find(mf, map[string]string{"pool": "a"}).GetSummary()
	if !math.IsInf(a.GetSampleSum(), 1) || a.GetSampleCount() != 1 || len(a.GetQuantile()) != 0 {
		t.Errorf("series without quantiles: %v", a)
	}
	want := `# HELP app_pause_seconds Pauses.
# TYPE app_pause_seconds summary
app_pause_seconds_sum{pool="a"} +Inf
app_pause_seconds_count{pool="a"} 1
app_pause_seconds{pool="main",quantile="0"} 0.001
app_pause_seconds{pool="main",quantile="0.5"} 0.002
app_pause_seconds{pool="main",quantile="1"} 0.01
app_pause_seconds_sum{pool="main"} 0.5
app_pause_seconds_count{pool="main"} 90
`
	if d := cmp.Diff(want, text(t, reg)); d != "" {
		t.Errorf("output (-want +got):\n%s", d)
	}
}

func TestFuncFamilies_LeftOutWhenTheyReportNothing(t *testing.T) {
	reg := prom.NewRegistry()
	reg.SummaryFunc("s", "S.", nil, func(func(prom.Summary, ...string)) {})
	reg.CounterFunc("c_total", "C.", nil, func(func(float64, ...string)) {})
	if got := text(t, reg); got != "" {
		t.Errorf("output %q, want none", got)
	}
}

func TestCounterFunc_IsACounterReadAtScrape(t *testing.T) {
	reg := prom.NewRegistry()
	n := 0.0
	reg.CounterFunc("app_ticks_total", "Ticks, by clock.", []string{"clock"}, func(emit func(float64, ...string)) {
		n += 1.5
		emit(n, "wall")
	})
	for _, want := range []float64{1.5, 3} {
		mf := parse(t, reg)["app_ticks_total"]
		if mf.GetType() != dto.MetricType_COUNTER || find(mf, map[string]string{"clock": "wall"}).GetCounter().GetValue() != want {
			t.Errorf("scrape: %v, want a counter at %v", mf, want)
		}
	}
}
