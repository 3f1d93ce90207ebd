package prom_test

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/detourhq/detour/prom"
)

func FuzzLabelValueRoundTrip(f *testing.F) {
	for _, s := range []string{"", "plain", `back\slash`, `"q"`, "a\nb", `\n`, "ünï ✓ 🚀", "\\\"\n", "\t\r\x00", "}\" 1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !utf8.ValidString(v) {
			t.Skip("Prometheus requires label values to be valid UTF-8")
		}
		reg := prom.NewRegistry()
		reg.Counter("fuzz_total", "Fuzzed.", "v").With(v).Add(7)
		reg.Histogram("fuzz_seconds", "Fuzzed.", []float64{1}, "v").With(v).Observe(0.5)
		reg.GaugeFunc("fuzz_gauge", "Fuzzed.", []string{"v"}, func(emit func(float64, ...string)) { emit(3, v) })
		reg.CounterFunc("fuzz_func_total", "Fuzzed.", []string{"v"}, func(emit func(float64, ...string)) { emit(4, v) })
		reg.SummaryFunc("fuzz_summary", "Fuzzed.", []string{"v"}, func(emit func(prom.Summary, ...string)) {
			emit(prom.Summary{Quantiles: []prom.Quantile{{Q: 0.5, V: 1}}, Sum: 2, Count: 3}, v)
		})
		mfs := parse(t, reg)
		for _, name := range []string{"fuzz_total", "fuzz_seconds", "fuzz_gauge", "fuzz_func_total", "fuzz_summary"} {
			ms := mfs[name].GetMetric()
			if len(ms) != 1 {
				t.Fatalf("%s: %d series, want 1", name, len(ms))
			}
			if got := labels(ms[0])["v"]; got != v {
				t.Fatalf("%s: label value %q parsed back as %q", name, v, got)
			}
		}
	})
}

func FuzzHelpRoundTrip(f *testing.F) {
	for _, s := range []string{"", " ", "\tindented", "Plain help.", "a\nb", `back\slash`, `"quotes"`, "ünï ✓"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, help string) {
		if !utf8.ValidString(help) {
			t.Skip("the text format is UTF-8")
		}
		reg := prom.NewRegistry()
		reg.Gauge("fuzz_gauge", help)
		// The parser skips the blanks before the help text, as it does
		// client_golang's.
		want := strings.TrimLeft(help, " \t")
		if got := parse(t, reg)["fuzz_gauge"].GetHelp(); got != want {
			t.Fatalf("help %q parsed back as %q, want %q", help, got, want)
		}
	})
}

func FuzzSummaryValuesRoundTrip(f *testing.F) {
	f.Add(0.5, 0.001, 1.5, uint64(3))
	f.Add(0.0, math.NaN(), math.Inf(1), uint64(0))
	f.Add(1.0, math.Copysign(0, -1), 1e-300, uint64(1<<53))
	f.Fuzz(func(t *testing.T, q, v, sum float64, count uint64) {
		if count > 1<<53 {
			t.Skip("the parser reads counts as float64: exact up to 2^53, more than any real count")
		}
		reg := prom.NewRegistry()
		reg.SummaryFunc("fuzz_summary", "Fuzzed.", nil, func(emit func(prom.Summary, ...string)) {
			emit(prom.Summary{Quantiles: []prom.Quantile{{Q: q, V: v}}, Sum: sum, Count: count})
		})
		s := parse(t, reg)["fuzz_summary"].GetMetric()[0].GetSummary()
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if len(s.GetQuantile()) != 1 || !same(s.GetQuantile()[0].GetQuantile(), q) || !same(s.GetQuantile()[0].GetValue(), v) ||
			!same(s.GetSampleSum(), sum) || s.GetSampleCount() != count {
			t.Fatalf("summary {%v: %v} sum %v count %v parsed back as %v", q, v, sum, count, s)
		}
	})
}
