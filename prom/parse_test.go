package prom_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/detourhq/detour/prom"
)

// parse writes reg and parses it back with Prometheus's own text parser,
// failing the test on any error.
func parse(t testing.TB, reg *prom.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := tryParse(reg)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// tryParse is parse returning the error, for goroutines other than the
// test's.
func tryParse(reg *prom.Registry) (map[string]*dto.MetricFamily, error) {
	var buf bytes.Buffer
	if _, err := reg.WriteTo(&buf); err != nil {
		return nil, err
	}
	out := buf.String()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		return nil, fmt.Errorf("expfmt: %w\n%s", err, out)
	}
	return mfs, nil
}

// text returns reg's output.
func text(t testing.TB, reg *prom.Registry) string {
	t.Helper()
	var b strings.Builder
	if _, err := reg.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// labels returns m's labels as a map.
func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// find returns the metric of mf whose labels are exactly want, or nil.
func find(mf *dto.MetricFamily, want map[string]string) *dto.Metric {
	for _, m := range mf.GetMetric() {
		got := labels(m)
		if len(got) != len(want) {
			continue
		}
		same := true
		for k, v := range want {
			if got[k] != v {
				same = false
			}
		}
		if same {
			return m
		}
	}
	return nil
}
