package prom_test

import (
	"strings"
	"testing"

	"github.com/detourhq/detour/prom"
)

func TestRegistry_ProgrammerErrorsPanicWithClearMessage(t *testing.T) {
	tests := []struct {
		name string
		do   func(r *prom.Registry)
		want string
	}{
		{"duplicate name", func(r *prom.Registry) {
			r.Counter("x_total", "X.")
			r.Gauge("x_total", "X again.")
		}, `metric "x_total" registered twice`},
		{"histogram series clash with a counter", func(r *prom.Registry) {
			r.Counter("h_count", "H.")
			r.Histogram("h", "H.", nil)
		}, `the name "h_count" is taken by metric "h_count"`},
		{"counter clash with a histogram series", func(r *prom.Registry) {
			r.Histogram("h", "H.", nil)
			r.Counter("h_sum", "H.")
		}, `the name "h_sum" is taken by metric "h"`},
		{"metric name with a dash", func(r *prom.Registry) { r.Counter("bad-name", "B.") }, `invalid metric name "bad-name"`},
		{"metric name starting with a digit", func(r *prom.Registry) { r.Gauge("1x", "B.") }, `invalid metric name "1x"`},
		{"empty metric name", func(r *prom.Registry) { r.Gauge("", "B.") }, `invalid metric name ""`},
		{"label name with a colon", func(r *prom.Registry) { r.Counter("c", "C.", "a:b") }, `invalid label name "a:b"`},
		{"label name reserved by Prometheus", func(r *prom.Registry) { r.Counter("c", "C.", "__name__") }, `invalid label name "__name__"`},
		{"label given twice", func(r *prom.Registry) { r.Counter("c", "C.", "a", "b", "a") }, `label "a" given twice`},
		{"le on a histogram", func(r *prom.Registry) { r.Histogram("h", "H.", nil, "le") }, `label name "le" is reserved for a histogram`},
		{"unsorted buckets", func(r *prom.Registry) { r.Histogram("h", "H.", []float64{1, 0.5}) }, "strictly ascending"},
		{"repeated bucket", func(r *prom.Registry) { r.Histogram("h", "H.", []float64{1, 1}) }, "strictly ascending"},
		{"too few label values", func(r *prom.Registry) { r.Counter("c", "C.", "a", "b").With("x") }, "1 label values for 2 labels"},
		{"too many label values", func(r *prom.Registry) { r.Histogram("h", "H.", nil).With("x") }, "1 label values for 0 labels"},
		{"invalid UTF-8 label value", func(r *prom.Registry) { r.Counter("c", "C.", "a").With("\xff") }, "not valid UTF-8"},
		{"negative counter add", func(r *prom.Registry) { r.Counter("c", "C.").With().Add(-1) }, "counter cannot decrease: Add(-1)"},
		{"gauge func emitting the wrong labels", func(r *prom.Registry) {
			r.GaugeFunc("g", "G.", []string{"a"}, func(emit func(float64, ...string)) { emit(1) })
			r.WriteTo(new(strings.Builder))
		}, "0 label values for 1 labels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				got, _ := recover().(string)
				if !strings.HasPrefix(got, "prom: ") || !strings.Contains(got, tt.want) {
					t.Errorf("panic %q, want one containing %q", got, tt.want)
				}
			}()
			tt.do(prom.NewRegistry())
		})
	}
}

func TestRegistry_PanicLeavesRegistryUsable(t *testing.T) {
	reg := prom.NewRegistry()
	c := reg.Counter("c_total", "C.", "a")
	func() {
		defer func() { _ = recover() }()
		c.With("\xff")
	}()
	func() {
		defer func() { _ = recover() }()
		reg.Counter("c_total", "C.")
	}()
	c.With("ok").Inc() // would deadlock if a lock were left held
	reg.Gauge("g", "G.")
	if got := parse(t, reg); len(got) != 2 {
		t.Errorf("%d families, want 2", len(got))
	}
}

func TestRegistry_NewFamiliesPanicWithClearMessage(t *testing.T) {
	none := func(func(prom.Summary, ...string)) {}
	tests := []struct {
		name string
		do   func(r *prom.Registry)
		want string
	}{
		{"quantile on a summary", func(r *prom.Registry) { r.SummaryFunc("s", "S.", []string{"quantile"}, none) },
			`label name "quantile" is reserved for a summary`},
		{"summary series clash", func(r *prom.Registry) {
			r.Gauge("s_count", "S.")
			r.SummaryFunc("s", "S.", nil, none)
		}, `the name "s_count" is taken by metric "s_count"`},
		{"counter func twice", func(r *prom.Registry) {
			r.CounterFunc("c_total", "C.", nil, func(func(float64, ...string)) {})
			r.Counter("c_total", "C.")
		}, `metric "c_total" registered twice`},
		{"go metrics twice", func(r *prom.Registry) { r.RegisterGo(); r.RegisterGo() }, `metric "go_gc_duration_seconds" registered twice`},
		{"go metrics over a taken name", func(r *prom.Registry) { r.Gauge("go_threads", "Mine."); r.RegisterGo() },
			`metric "go_threads" registered twice`},
		{"summary emitting the wrong labels", func(r *prom.Registry) {
			r.SummaryFunc("s", "S.", []string{"a"}, func(emit func(prom.Summary, ...string)) { emit(prom.Summary{}) })
			r.WriteTo(new(strings.Builder))
		}, "0 label values for 1 labels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				got, _ := recover().(string)
				if !strings.HasPrefix(got, "prom: ") || !strings.Contains(got, tt.want) {
					t.Errorf("panic %q, want one containing %q", got, tt.want)
				}
			}()
			tt.do(prom.NewRegistry())
		})
	}
}
