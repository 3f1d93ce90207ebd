package prom_test

import (
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
		mfs := parse(t, reg)
		for _, name := range []string{"fuzz_total", "fuzz_seconds", "fuzz_gauge"} {
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
