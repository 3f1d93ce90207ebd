package prom_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	"github.com/detourhq/detour/prom"
)

func TestCounter_ParsesWithValuesAndLabels(t *testing.T) {
	reg := prom.NewRegistry()
	c := reg.Counter("app_requests_total", "Requests served.", "route", "code")
	c.With("chat", "200").Inc()
	c.With("chat", "200").Add(2)
	c.With("chat", "500").Add(0.25)
	c.With("models", "200")
	total := reg.Counter("app_cost_usd_total", "Cost.")
	total.With().Add(1.5)
	total.With().Add(2)

	mfs := parse(t, reg)
	mf := mfs["app_requests_total"]
	if mf.GetType() != dto.MetricType_COUNTER || mf.GetHelp() != "Requests served." {
		t.Fatalf("family: %v", mf)
	}
	for _, c := range []struct {
		route, code string
		want        float64
	}{{"chat", "200", 3}, {"chat", "500", 0.25}, {"models", "200", 0}} {
		m := find(mf, map[string]string{"route": c.route, "code": c.code})
		if m == nil || m.GetCounter().GetValue() != c.want {
			t.Errorf("%s %s: %v, want %v", c.route, c.code, m, c.want)
		}
	}
	if got := mfs["app_cost_usd_total"].GetMetric()[0].GetCounter().GetValue(); got != 3.5 {
		t.Errorf("app_cost_usd_total = %v, want 3.5", got)
	}
}

func TestCounter_WithoutLabelsShowsAtZeroAndVecWithoutSeriesIsLeftOut(t *testing.T) {
	reg := prom.NewRegistry()
	reg.Counter("a_total", "A.")
	reg.Counter("b_total", "B.", "x")
	reg.Histogram("c_seconds", "C.", []float64{1})
	reg.Histogram("d_seconds", "D.", []float64{1}, "x")
	want := `# HELP a_total A.
# TYPE a_total counter
a_total 0
# HELP c_seconds C.
# TYPE c_seconds histogram
c_seconds_bucket{le="1"} 0
c_seconds_bucket{le="+Inf"} 0
c_seconds_sum 0
c_seconds_count 0
`
	if diff := cmp.Diff(want, text(t, reg)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestHistogram_CumulativeBucketsSumAndCount(t *testing.T) {
	reg := prom.NewRegistry()
	h := reg.Histogram("app_seconds", "Duration.", []float64{0.1, 1, 10}, "surface")
	for _, v := range []float64{0.05, 0.1, 0.5, 1, 3, 100} {
		h.With("openai").Observe(v)
	}
	h.With("anthropic").Observe(math.Inf(1))

	mf := parse(t, reg)["app_seconds"]
	if mf.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("type %v", mf.GetType())
	}
	hist := find(mf, map[string]string{"surface": "openai"}).GetHistogram()
	type bucket struct {
		Le float64
		N  uint64
	}
	var got []bucket
	for _, b := range hist.GetBucket() {
		got = append(got, bucket{b.GetUpperBound(), b.GetCumulativeCount()})
	}
	want := []bucket{{0.1, 2}, {1, 4}, {10, 5}, {math.Inf(1), 6}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	if hist.GetSampleCount() != 6 || hist.GetSampleSum() != 104.65 {
		t.Errorf("count %d sum %v, want 6 and 104.65", hist.GetSampleCount(), hist.GetSampleSum())
	}
	inf := find(mf, map[string]string{"surface": "anthropic"}).GetHistogram()
	if inf.GetSampleCount() != 1 || !math.IsInf(inf.GetSampleSum(), 1) || inf.GetBucket()[2].GetCumulativeCount() != 0 {
		t.Errorf("+Inf observation: %v", inf)
	}
}

func TestHistogram_ManyBucketsUseBinarySearch(t *testing.T) {
	reg := prom.NewRegistry()
	var buckets []float64
	for i := 1; i <= 100; i++ {
		buckets = append(buckets, float64(i))
	}
	h := reg.Histogram("many", "Many buckets.", append(buckets, math.Inf(1))).With()
	for _, v := range []float64{0.5, 1, 1.5, 50, 99.9, 100, 101, math.NaN()} {
		h.Observe(v)
	}
	hist := parse(t, reg)["many"].GetMetric()[0].GetHistogram()
	b := hist.GetBucket()
	if len(b) != 101 {
		t.Fatalf("%d buckets, want 100 and +Inf (a +Inf given is implied)", len(b))
	}
	for _, c := range []struct {
		i    int
		want uint64
	}{{0, 2}, {1, 3}, {49, 4}, {98, 4}, {99, 6}, {100, 8}} {
		if got := b[c.i].GetCumulativeCount(); got != c.want {
			t.Errorf("le=%v: %d, want %d", b[c.i].GetUpperBound(), got, c.want)
		}
	}
	if !math.IsNaN(hist.GetSampleSum()) {
		t.Errorf("sum %v, want NaN after observing NaN", hist.GetSampleSum())
	}
}

func TestGauge_SetAddIncDec(t *testing.T) {
	reg := prom.NewRegistry()
	g := reg.Gauge("app_inflight", "In flight.")
	g.Inc()
	g.Inc()
	g.Dec()
	g.Add(2.5)
	if g.Value() != 3.5 {
		t.Errorf("Value %v, want 3.5", g.Value())
	}
	mf := parse(t, reg)["app_inflight"]
	if mf.GetType() != dto.MetricType_GAUGE || mf.GetMetric()[0].GetGauge().GetValue() != 3.5 {
		t.Errorf("gauge: %v", mf)
	}
	for _, v := range []float64{math.Inf(1), math.Inf(-1), -2} {
		g.Set(v)
		if got := parse(t, reg)["app_inflight"].GetMetric()[0].GetGauge().GetValue(); got != v {
			t.Errorf("Set(%v): parsed %v", v, got)
		}
	}
	g.Set(math.NaN())
	if got := parse(t, reg)["app_inflight"].GetMetric()[0].GetGauge().GetValue(); !math.IsNaN(got) {
		t.Errorf("Set(NaN): parsed %v", got)
	}
}

func TestGaugeFunc_CollectsAtScrapeSortedAndLeftOutWhenEmpty(t *testing.T) {
	reg := prom.NewRegistry()
	parked := map[string]float64{}
	reg.GaugeFunc("parked", "Parked now.", nil, func(emit func(float64, ...string)) {
		emit(float64(len(parked)))
	})
	reg.GaugeFunc("parked_seconds", "Seconds parked, by target.", []string{"target"}, func(emit func(float64, ...string)) {
		for k, v := range parked {
			emit(v, k)
		}
	})
	if want := "# HELP parked Parked now.\n# TYPE parked gauge\nparked 0\n"; text(t, reg) != want {
		t.Errorf("nothing parked:\n%s", text(t, reg))
	}
	parked["b/m"], parked["a/m"], parked["c/m"] = 2, 1.5, 30
	want := `# HELP parked Parked now.
# TYPE parked gauge
parked 3
# HELP parked_seconds Seconds parked, by target.
# TYPE parked_seconds gauge
parked_seconds{target="a/m"} 1.5
parked_seconds{target="b/m"} 2
parked_seconds{target="c/m"} 30
`
	if diff := cmp.Diff(want, text(t, reg)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	parse(t, reg)
}

func TestWriteTo_RegistrationOrderLabelsByNameSeriesSorted(t *testing.T) {
	reg := prom.NewRegistry()
	h := reg.Histogram("z_seconds", "Z.", []float64{0.5, 1e6}, "surface", "stream")
	c := reg.Counter("a_total", "A.", "surface", "route", "outcome")
	c.With("openai", "r2", "ok").Inc()
	c.With("anthropic", "r1", "ok").Inc()
	c.With("openai", "r1", "failed").Inc()
	h.With("openai", "true").Observe(0.25)
	want := `# HELP z_seconds Z.
# TYPE z_seconds histogram
z_seconds_bucket{stream="true",surface="openai",le="0.5"} 1
z_seconds_bucket{stream="true",surface="openai",le="1e+06"} 1
z_seconds_bucket{stream="true",surface="openai",le="+Inf"} 1
z_seconds_sum{stream="true",surface="openai"} 0.25
z_seconds_count{stream="true",surface="openai"} 1
# HELP a_total A.
# TYPE a_total counter
a_total{outcome="failed",route="r1",surface="openai"} 1
a_total{outcome="ok",route="r1",surface="anthropic"} 1
a_total{outcome="ok",route="r2",surface="openai"} 1
`
	if diff := cmp.Diff(want, text(t, reg)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestWriteTo_EscapesHelpAndLabelValues(t *testing.T) {
	help := "Line one\nline two with a \\ backslash, \"quotes\" and ünïcödé ✓."
	values := []string{
		`back\slash`, `"quoted"`, "new\nline", "ünïcödé ✓ 🚀", `\n literally`, `trailing\`, "",
		"tab\there", "{brace}=,", "\\\"\n\\",
	}
	reg := prom.NewRegistry()
	c := reg.Counter("esc_total", help, "v")
	for i, v := range values {
		c.With(v).Add(float64(i + 1))
	}
	mf := parse(t, reg)["esc_total"]
	if mf.GetHelp() != help {
		t.Errorf("help %q, want %q", mf.GetHelp(), help)
	}
	for i, v := range values {
		m := find(mf, map[string]string{"v": v})
		if m == nil {
			t.Errorf("value %q did not round-trip", v)
			continue
		}
		if m.GetCounter().GetValue() != float64(i+1) {
			t.Errorf("value %q: %v, want %d", v, m.GetCounter().GetValue(), i+1)
		}
	}
	if len(mf.GetMetric()) != len(values) {
		t.Errorf("%d series, want %d", len(mf.GetMetric()), len(values))
	}
}

func TestWith_MoreThanThreeLabelsKeepSeriesApart(t *testing.T) {
	reg := prom.NewRegistry()
	c := reg.Counter("wide_total", "Wide.", "a", "b", "c", "d", "e")
	c.With("1", "2", "3", "4:5", "6").Inc()
	c.With("1", "2", "3", "4", "5:6").Inc()
	c.With("1", "2", "3", "4", "5:6").Inc()
	if a, b := c.With("1", "2", "3", "4:5", "6"), c.With("1", "2", "3", "4", "5:6"); a == b || a.Value() != 1 || b.Value() != 2 {
		t.Errorf("series mixed up: %v %v", a.Value(), b.Value())
	}
	if n := len(parse(t, reg)["wide_total"].GetMetric()); n != 2 {
		t.Errorf("%d series, want 2", n)
	}
}

func TestRegistry_ZeroValueIsReady(t *testing.T) {
	var reg prom.Registry
	reg.Gauge("g", "G.").Set(2)
	if got := parse(t, &reg)["g"].GetMetric()[0].GetGauge().GetValue(); got != 2 {
		t.Errorf("g = %v, want 2", got)
	}
}
