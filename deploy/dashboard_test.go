package deploy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// dashboard is what the test reads of grafana/detour.json.
type dashboard struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
}

// scrapeLabels are the labels Prometheus adds to every series it scrapes:
// a query may name them though detour never writes them.
var scrapeLabels = []string{"job", "instance"}

// series maps each series name the scrapes hold (a histogram's _bucket,
// _sum and _count, a summary's quantiles, _sum and _count) to the label
// names seen on it.
func series(scrapes ...map[string]*dto.MetricFamily) map[string][]string {
	out := map[string][]string{}
	add := func(name string, labels []*dto.LabelPair, extra ...string) {
		for _, l := range labels {
			extra = append(extra, l.GetName())
		}
		out[name] = append(out[name], extra...)
	}
	for _, mfs := range scrapes {
		for name, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch mf.GetType() {
				case dto.MetricType_HISTOGRAM:
					add(name+"_bucket", m.GetLabel(), "le")
					add(name+"_sum", m.GetLabel())
					add(name+"_count", m.GetLabel())
				case dto.MetricType_SUMMARY:
					add(name, m.GetLabel(), "quantile")
					add(name+"_sum", m.GetLabel())
					add(name+"_count", m.GetLabel())
				default:
					add(name, m.GetLabel())
				}
			}
		}
	}
	for name, labels := range out {
		slices.Sort(labels)
		out[name] = slices.Compact(labels)
	}
	return out
}

// promQL is what a query names: metric names with the labels its matchers
// name, the labels of its by/without/on/ignoring clauses, and its
// functions.
type promQL struct {
	metrics  map[string][]string // metric -> matcher labels
	grouping [][]string          // each by (...) or without (...) list
	funcs    []string
}

// promFuncs are the PromQL functions and aggregations a query may call.
var promFuncs = strings.Fields(`abs absent absent_over_time avg avg_over_time bottomk ceil changes clamp
	clamp_max clamp_min count count_over_time count_values delta deriv exp floor group histogram_quantile
	idelta increase irate label_join label_replace last_over_time ln log10 log2 max max_over_time min
	min_over_time predict_linear quantile quantile_over_time rate resets round scalar sgn sort sort_desc
	sqrt stddev stdvar sum sum_over_time time timestamp topk vector`)

var (
	promString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promRange  = regexp.MustCompile(`\[[^\]]*\]`)
	promToken  = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*|[0-9][0-9.eE+-]*|=~|!~|!=|==|>=|<=|\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?|\S`)
)

// parsePromQL reads the names in expr: enough to check them, not a
// parser of the language (a query this cannot read is an error).
func parsePromQL(expr string) (promQL, error) {
	q := promQL{metrics: map[string][]string{}}
	s := promString.ReplaceAllString(expr, `""`)
	s = promRange.ReplaceAllString(s, "")
	toks := promToken.FindAllString(s, -1)
	next := func(i int) string {
		if i+1 < len(toks) {
			return toks[i+1]
		}
		return ""
	}
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		switch {
		case !regexp.MustCompile(`^[a-zA-Z_:]`).MatchString(tok):
			if tok == "{" {
				return q, fmt.Errorf("a selector without a metric name")
			}
		case slices.Contains([]string{"by", "without", "on", "ignoring", "group_left", "group_right"}, tok):
			if next(i) != "(" {
				if tok == "group_left" || tok == "group_right" {
					continue
				}
				return q, fmt.Errorf("%s without a (label list)", tok)
			}
			var labels []string
			for i += 2; i < len(toks) && toks[i] != ")"; i++ {
				if toks[i] != "," {
					labels = append(labels, toks[i])
				}
			}
			q.grouping = append(q.grouping, labels)
		case slices.Contains([]string{"bool", "offset", "and", "or", "unless", "inf", "nan", "Inf", "NaN"}, tok):
		case next(i) == "(" || next(i) == "by" || next(i) == "without": // sum by (x) (...)
			if !slices.Contains(promFuncs, tok) {
				return q, fmt.Errorf("unknown function %s", tok)
			}
			q.funcs = append(q.funcs, tok)
		default: // a metric, and its matchers
			name := tok
			labels := q.metrics[name]
			if next(i) == "{" {
				for i += 2; i < len(toks) && toks[i] != "}"; i++ {
					if op := next(i); op == "=" || op == "!=" || op == "=~" || op == "!~" {
						labels = append(labels, toks[i])
					}
				}
			}
			q.metrics[name] = labels
		}
	}
	return q, nil
}

// labelValues matches a variable's label_values(metric, label) query.
var labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// checkQuery reports what expr (with its legend) names that exported, the
// series of a running detour serve, does not hold.
func checkQuery(expr, legend string, exported map[string][]string) []string {
	q, err := parsePromQL(expr)
	if err != nil {
		return []string{err.Error()}
	}
	if len(q.metrics) == 0 {
		return []string{"names no metric"}
	}
	var problems []string
	has := func(metric, label string) bool {
		return slices.Contains(exported[metric], label) || slices.Contains(scrapeLabels, label)
	}
	for metric, labels := range q.metrics {
		if _, ok := exported[metric]; !ok {
			problems = append(problems, fmt.Sprintf("%s is not a metric detour serve exports", metric))
			continue
		}
		for _, l := range labels {
			if !has(metric, l) {
				problems = append(problems, fmt.Sprintf("%s has no label %s (it has %v)", metric, l, exported[metric]))
			}
		}
		for _, g := range q.grouping {
			for _, l := range g {
				if !has(metric, l) {
					problems = append(problems, fmt.Sprintf("grouped by %s, which %s does not have (it has %v)", l, metric, exported[metric]))
				}
			}
		}
	}
	// A legend names labels the result keeps: those of every by (...) of
	// the query, else the metrics'.
	for _, m := range regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`).FindAllStringSubmatch(legend, -1) {
		l := m[1]
		ok := true
		for _, g := range q.grouping {
			ok = ok && slices.Contains(g, l)
		}
		for metric := range q.metrics {
			ok = ok && has(metric, l)
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("legend {{%s}}: the result has no such label", l))
		}
	}
	return problems
}

func TestDashboard_NamesOnlyMetricsDetourServeExports(t *testing.T) {
	var d dashboard
	if err := json.Unmarshal(read(t, "grafana/detour.json"), &d); err != nil {
		t.Fatalf("grafana/detour.json: %v", err)
	}
	s := serveSample(t, badDay)
	exported := series(badDayTraffic(t, s))

	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable $%s: %q is not label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		if !slices.Contains(exported[m[1]], m[2]) && !slices.Contains(scrapeLabels, m[2]) {
			t.Errorf("variable $%s: %s has no label %s (it has %v)", v.Name, m[1], m[2], exported[m[1]])
		}
		if !strings.Contains(string(v.Query), v.Definition) {
			t.Errorf("variable $%s: its query is not its definition %q", v.Name, v.Definition)
		}
	}
	used := map[string]bool{}
	ids := map[int]string{}
	varRef := regexp.MustCompile(`\$\{?([a-zA-Z_][a-zA-Z0-9_]*)`)
	for _, p := range d.Panels {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, problem := range checkQuery(tg.Expr, tg.LegendFormat, exported) {
				t.Errorf("panel %q: %s\n  query: %s", p.Title, problem, tg.Expr)
			}
			for _, m := range varRef.FindAllStringSubmatch(tg.Expr, -1) {
				if !strings.HasPrefix(m[1], "__") && !vars[m[1]] {
					t.Errorf("panel %q: $%s is not a variable of the dashboard", p.Title, m[1])
				}
			}
			if q, err := parsePromQL(tg.Expr); err == nil {
				for m := range q.metrics {
					used[m] = true
				}
			}
		}
	}
	// What the issue asks the dashboard to show.
	for _, m := range []string{"detour_requests_total", "detour_attempts_total", "detour_parked_targets",
		"detour_target_parked_seconds", "detour_request_duration_seconds_bucket", "detour_upstream_cost_usd_total"} {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
	shown := map[string]bool{}
	for m := range used {
		shown[family(m)] = true
	}
	var unused []string
	for m := range exported {
		if f := family(m); strings.HasPrefix(f, "detour_") && !shown[f] && !slices.Contains(unused, f) {
			unused = append(unused, f)
		}
	}
	slices.Sort(unused)
	t.Logf("detour families no panel shows: %v", unused)
}

// family returns the family of a series name: a histogram's or a
// summary's name without _bucket, _sum or _count.
func family(name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := strings.CutSuffix(name, suffix); ok {
			return f
		}
	}
	return name
}

// The checker itself: what it must refuse, on a fixed set of series.
func TestCheckQuery_RefusesWhatDetourDoesNotExport(t *testing.T) {
	exported := map[string][]string{
		"detour_requests_total":                  {"outcome", "route", "surface"},
		"detour_request_duration_seconds_bucket": {"le", "stream", "surface"},
	}
	for _, tc := range []struct {
		name, expr, legend string
		ok                 bool
	}{
		{"rate by a label it has", `sum by (outcome) (rate(detour_requests_total{route=~"$route"}[$__rate_interval]))`, "{{outcome}}", true},
		{"a histogram's buckets", `histogram_quantile(0.95, sum by (le) (rate(detour_request_duration_seconds_bucket{job=~"$job"}[5m])))`, "p95", true},
		{"a misspelt metric", `sum(rate(detour_request_total[5m]))`, "", false},
		{"a histogram without _bucket", `histogram_quantile(0.9, sum by (le) (rate(detour_request_duration_seconds[5m])))`, "", false},
		{"a matcher on a label it lacks", `sum(rate(detour_requests_total{target="x"}[5m]))`, "", false},
		{"grouped by a label it lacks", `sum by (target) (rate(detour_requests_total[5m]))`, "", false},
		{"a legend the grouping dropped", `sum by (route) (rate(detour_requests_total[5m]))`, "{{outcome}}", false},
		{"an unknown function", `summ(rate(detour_requests_total[5m]))`, "", false},
		{"no metric", `vector(1)`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := checkQuery(tc.expr, tc.legend, exported)
			if (len(problems) == 0) != tc.ok {
				t.Errorf("checkQuery(%s) = %v, want ok %v", tc.expr, problems, tc.ok)
			}
		})
	}
}
