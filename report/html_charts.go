package report

// The charts of the HTML report drawn with go-analyze/charts: outcomes over
// time, reachability, cost, the chain each route used.

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-analyze/charts"

	"github.com/detourhq/detour/internal/lazyregexp"
)

// Sizes of the charts, in SVG user units (the page scales them to its width).
const (
	smallW, smallH = 560, 250
	wideW          = 1120
	// maxSlots is the most buckets a chart over time spreads on a
	// continuous axis (empty buckets drawn as gaps); beyond, it shows the
	// buckets that have records, side by side.
	maxSlots = 400
	// maxHops is the most hops a route chart draws.
	maxHops = 24
	// outcomePlot is about how wide the plot of an outcomes chart is,
	// its value axis aside.
	outcomePlot = smallW - 80
)

// Colours of the outcomes, one per failure kind; kinds not listed take
// spareColors in order.
var kindColors = map[string]string{
	"answers":          "#2f9e44",
	"wall":             "#e03131",
	"transient":        "#f59f00",
	"invalid":          "#7048e8",
	"context_overflow": "#1c7ed6",
	"policy":           "#495057",
	"canceled":         "#adb5bd",
	"unknown":          "#a0522d",
	Unclassified:       "#868e96",
}

// kindOrder is the order of the kinds in a stack, bottom up after answers.
var kindOrder = []string{"wall", "transient", "unknown", "invalid", "context_overflow", "policy", "canceled", Unclassified}

var spareColors = []string{"#d6336c", "#0ca678", "#5f3dc4", "#e67700", "#1971c2", "#5c940d"}

// targetColors tell targets apart in the route charts.
var targetColors = []string{"#4263eb", "#12b886", "#fab005", "#e8590c", "#ae3ec9", "#1098ad",
	"#74b816", "#f06595", "#364fc7", "#c2255c", "#087f5b", "#f08c00"}

const (
	accentColor = "#4263eb"
	wallColor   = "#e03131"
	inkColor    = "#343a40"
	mutedColor  = "#868e96"
	gridColor   = "#e9ecef"
	axisColor   = "#adb5bd"
)

// slot is one bucket on a chart's time axis.
type slot struct {
	start time.Time
	b     *Bucket // nil for an empty bucket
}

// slots spreads r's buckets on a continuous axis, empty buckets included,
// when there are at most maxSlots of them; else it keeps those with
// records.
func slots(r Report, by time.Duration) []slot {
	if len(r.Series) == 0 {
		return nil
	}
	first, last := r.Series[0].Start, r.Series[len(r.Series)-1].Start
	out := []slot{}
	if by <= 0 || int(last.Sub(first)/by)+1 > maxSlots {
		for i := range r.Series {
			out = append(out, slot{r.Series[i].Start, &r.Series[i]})
		}
		return out
	}
	j := 0
	for t := first; !t.After(last); t = t.Add(by) {
		s := slot{start: t}
		if j < len(r.Series) && r.Series[j].Start.Equal(t) {
			s.b = &r.Series[j]
			j++
		}
		out = append(out, s)
	}
	return out
}

// labelSteps are the round steps a time axis is labelled at.
var labelSteps = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
	2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour, 91 * 24 * time.Hour}

// slotLabels names the buckets on a time axis plot units wide, at a round
// step (every 5 minutes, every 3 hours, every day, every week, ...) giving
// about eight labels far enough apart not to touch, the others blank: the
// date at midnight (or for day buckets), else the time of day. A label
// that would still touch the one before it is left blank.
func slotLabels(sl []slot, by time.Duration, plot float64) []string {
	out := make([]string, len(sl))
	if len(sl) == 0 {
		return out
	}
	slotW := plot / float64(len(sl))
	name := func(t time.Time) string {
		t = t.UTC()
		if by >= 24*time.Hour || (t.Hour() == 0 && t.Minute() == 0) {
			return t.Format("Jan 2")
		}
		return t.Format("15:04")
	}
	span := sl[len(sl)-1].start.Sub(sl[0].start)
	if by <= 0 || int(span/by)+1 != len(sl) {
		// Not a continuous axis: label evenly by index.
		name = func(t time.Time) string {
			if by < 24*time.Hour {
				return t.UTC().Format("Jan 2 15:04")
			}
			return t.UTC().Format("Jan 2")
		}
		every := max(1, (len(sl)+7)/8, int(math.Ceil((float64(len(name(sl[0].start)))*charW+8)/slotW)))
		for i, s := range sl {
			if i%every == 0 {
				out[i] = name(s.start)
			}
		}
		return apart(out, slotW)
	}
	step := by
	for _, st := range labelSteps {
		if st >= by && st%by == 0 && span/st < 9 && float64(st/by)*slotW >= 6*charW+8 {
			step = st
			break
		}
	}
	for i, s := range sl {
		t := s.start.UTC()
		if step < 7*24*time.Hour && t.Sub(t.Truncate(step)) != 0 {
			continue
		}
		if step >= 7*24*time.Hour && int(t.Sub(sl[0].start)/by)%int(step/by) != 0 {
			continue
		}
		out[i] = name(t)
	}
	return apart(out, slotW)
}

// apart blanks each label that would touch the one before it, labels
// centred on slots slotW wide.
func apart(labels []string, slotW float64) []string {
	right := math.Inf(-1)
	for i, l := range labels {
		if l == "" {
			continue
		}
		x, w := (float64(i)+0.5)*slotW, float64(utf8.RuneCountInString(l))*charW
		if x-w/2 < right+6 {
			labels[i] = ""
			continue
		}
		right = x + w/2
	}
	return labels
}

func providerOrder(r Report) []string {
	calls := map[string]int{}
	seen := []string{}
	for _, t := range r.Targets {
		if _, ok := calls[t.Provider]; !ok {
			seen = append(seen, t.Provider)
		}
		calls[t.Provider] += t.Calls
	}
	sort.SliceStable(seen, func(i, j int) bool {
		if calls[seen[i]] != calls[seen[j]] {
			return calls[seen[i]] > calls[seen[j]]
		}
		return seen[i] < seen[j]
	})
	return seen
}

func kindColor(kind string, spare *int) string {
	if c, ok := kindColors[kind]; ok {
		return c
	}
	c := spareColors[*spare%len(spareColors)]
	*spare++
	return c
}

// outcomeCharts draws, per provider, its answers and failures by kind per
// bucket, stacked.
func outcomeCharts(r Report, by time.Duration) ([]chartView, string) {
	if len(r.Targets) == 0 {
		return nil, "Nothing to draw: no attempts in the selection."
	}
	sl := slots(r, by)
	if len(sl) == 0 {
		return nil, "Nothing to draw: this report has no time series."
	}
	labels := slotLabels(sl, by, outcomePlot)
	// Kinds in a stable order: the known ones, then the rest by name.
	var extra []string
	seenKind := map[string]bool{}
	for _, b := range r.Series {
		for _, p := range b.Providers {
			for k := range p.FailuresByKind {
				if _, known := kindColors[k]; !known && !seenKind[k] {
					extra = append(extra, k)
				}
				seenKind[k] = true
			}
		}
	}
	sort.Strings(extra)
	spare := 0
	colorOf := map[string]string{"answers": kindColors["answers"]}
	for _, k := range append(append([]string{}, kindOrder...), extra...) {
		colorOf[k] = kindColor(k, &spare)
	}
	kinds := append(append([]string{}, kindOrder...), extra...)

	var out []chartView
	for n, prov := range providerOrder(r) {
		answers := make([]float64, len(sl))
		byKind := map[string][]float64{}
		calls, skips := 0, 0
		for i, s := range sl {
			if s.b == nil {
				continue
			}
			for _, p := range s.b.Providers {
				if p.Name != prov {
					continue
				}
				calls += p.Calls
				skips += p.Skips
				answers[i] = float64(p.Answers)
				for k, v := range p.FailuresByKind {
					if byKind[k] == nil {
						byKind[k] = make([]float64, len(sl))
					}
					byKind[k][i] = float64(v)
				}
			}
		}
		cv := chartView{ID: fmt.Sprintf("outcomes-%d", n), Title: prov}
		if calls == 0 && skips == 0 {
			// Nothing sent, nothing passed over: detour's own last
			// resort (provider "detour"), whose answers the summary
			// counts, or probes alone.
			continue
		}
		if calls == 0 {
			cv.Empty = fmt.Sprintf("No calls to draw: %s was only skipped (%d times).", prov, skips)
			out = append(out, cv)
			continue
		}
		spec := barSpec{width: smallW, height: smallH, labels: labels}
		for _, v := range answers {
			if v > 0 {
				spec.add("answers", colorOf["answers"], answers)
				cv.Legend = append(cv.Legend, legendItem{Name: "answers", Color: swatch(colorOf["answers"])})
				break
			}
		}
		for _, k := range kinds {
			if v := byKind[k]; v != nil {
				spec.add(k, colorOf[k], v)
				cv.Legend = append(cv.Legend, legendItem{Name: k, Color: swatch(colorOf[k])})
			}
		}
		failed := 0
		for _, v := range byKind {
			for _, x := range v {
				failed += int(x)
			}
		}
		cv.Note = count(calls, "call") + ", " + groupDigits(int64(failed)) + " failed"
		if skips > 0 {
			cv.Note += fmt.Sprintf(", %s skipped", groupDigits(int64(skips)))
		}
		cv.SVG, cv.Empty = spec.render(cv.Title)
		out = append(out, cv)
	}
	return out, ""
}

// reachChart draws each provider's reachability over the whole report.
func reachChart(r Report) chartView {
	cv := chartView{ID: "reachability", Title: "Reachability per provider",
		Note: "answers / calls, in percent (calls the client stalled are left out)"}
	type acc struct{ calls, answers, stalled int }
	per := map[string]*acc{}
	for _, b := range r.Series {
		for _, p := range b.Providers {
			a := per[p.Name]
			if a == nil {
				a = &acc{}
				per[p.Name] = a
			}
			a.calls += p.Calls
			a.answers += p.Answers
			a.stalled += p.ClientStalled
		}
	}
	var bars []hbar
	for _, prov := range providerOrder(r) {
		a := per[prov]
		if a == nil || a.calls-a.stalled <= 0 {
			continue
		}
		v := math.Round(1000*float64(a.answers)/float64(a.calls-a.stalled)) / 10
		bars = append(bars, hbar{name: prov, value: v, label: strconv.FormatFloat(v, 'f', 1, 64) + "%"})
	}
	if len(bars) == 0 {
		cv.Empty = "Nothing to draw: no provider was sent anything."
		if len(r.Targets) > 0 && len(r.Series) == 0 {
			cv.Empty = "Nothing to draw: this report has no time series."
		}
		return cv
	}
	cv.SVG = hbarChart(cv.Title, bars, 100, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + "%" }, true)
	return cv
}

// costChart draws the cost of each target that cost something, most first.
func costChart(r Report) chartView {
	cv := chartView{ID: "cost", Title: "Cost by target", Note: "USD at the targets' prices, failures included"}
	ts := append([]Target{}, r.Targets...)
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].CostUSD > ts[j].CostUSD })
	free := 0
	var bars []hbar
	for _, t := range ts {
		if t.CostUSD <= 0 {
			free++
			continue
		}
		bars = append(bars, hbar{name: t.Target, value: t.CostUSD, label: usdText(t.CostUSD)})
	}
	if len(bars) == 0 {
		cv.Empty = "Nothing to draw: nothing cost anything."
		if len(r.Targets) == 0 {
			cv.Empty = "Nothing to draw: no attempts in the selection."
		}
		return cv
	}
	if free > 0 {
		cv.Note += fmt.Sprintf("; %d target(s) cost nothing and are left out", free)
	}
	cv.SVG = hbarChart(cv.Title, bars, 0, usdAxis, false)
	return cv
}

// routeCharts draws, per route, its answers by hop, stacked by target.
func routeCharts(r Report) ([]chartView, string) {
	if len(r.Routes) == 0 {
		if len(r.Targets) == 0 {
			return nil, "Nothing to draw: no attempts in the selection."
		}
		return nil, "Nothing to draw: no route got an answer."
	}
	color := map[string]string{}
	next := 0
	colorOf := func(target string) string {
		c, ok := color[target]
		if !ok {
			c = targetColors[next%len(targetColors)]
			next++
			color[target] = c
		}
		return c
	}
	// Colours follow the targets' order in the report, so a target keeps
	// its colour from one route to the next.
	for _, t := range r.Targets {
		colorOf(t.Target)
	}
	var out []chartView
	for n, u := range r.Routes {
		name := u.Route
		if name == "" {
			name = "(no route)"
		}
		cv := chartView{ID: fmt.Sprintf("route-%d", n), Title: "route " + name}
		cv.Note = count(u.Answers, "answer")
		if u.LastResort > 0 {
			cv.Note += fmt.Sprintf(", %s from the last resort", groupDigits(int64(u.LastResort)))
		}
		top := 0
		for _, h := range u.Hops {
			top = max(top, h.Hop)
		}
		hops := min(top, maxHops-1) + 1
		labels := make([]string, hops)
		for i := range labels {
			labels[i] = "hop " + strconv.Itoa(i)
		}
		if u.LastResort > 0 {
			labels = append(labels, "last resort")
		}
		spec := barSpec{width: smallW, height: smallH, labels: labels}
		var order []string
		vals := map[string][]float64{}
		for _, h := range u.Hops {
			if h.Hop >= hops {
				cv.Note += fmt.Sprintf("; hops past %d left out", hops-1)
				break
			}
			for _, t := range h.Targets {
				if vals[t.Target] == nil {
					vals[t.Target] = make([]float64, len(labels))
					order = append(order, t.Target)
				}
				vals[t.Target][h.Hop] = float64(t.Answers)
			}
		}
		for _, t := range order {
			spec.add(t, colorOf(t), vals[t])
			cv.Legend = append(cv.Legend, legendItem{Name: t, Color: swatch(colorOf(t))})
		}
		if u.LastResort > 0 {
			v := make([]float64, len(labels))
			v[len(v)-1] = float64(u.LastResort)
			spec.add("last resort", mutedColor, v)
			cv.Legend = append(cv.Legend, legendItem{Name: "last resort (cache or static)", Color: swatch(mutedColor)})
		}
		if len(spec.series) == 0 {
			cv.Empty = "Nothing to draw: no answer within the first hops."
		} else {
			cv.SVG, cv.Empty = spec.render(cv.Title)
		}
		out = append(out, cv)
	}
	return out, ""
}

// barSpec is one chart of vertical bars, stacked, of counts, for
// go-analyze/charts: the outcomes over time, the hops of a route. Their
// category labels are short (times, "hop 3"); charts of names are drawn
// by hand (html_bars.go).
type barSpec struct {
	width, height int
	labels        []string
	series        [][]float64
	names         []string
	colors        []string
}

func (s *barSpec) add(name, color string, values []float64) {
	s.names = append(s.names, name)
	s.colors = append(s.colors, color)
	s.series = append(s.series, values)
}

// render draws the chart as inline SVG; on failure it returns the sentence
// to show instead.
func (s *barSpec) render(title string) (template.HTML, string) {
	if len(s.labels) == 1 {
		// The library leaves the label of a lone bar at the left edge:
		// flank it with two empty categories (null values: no bar, no
		// label), so it sits centred.
		null := charts.GetNullValue()
		s.labels = []string{"", s.labels[0], ""}
		for i, v := range s.series {
			s.series[i] = []float64{null, v[0], null}
		}
	}
	colors := make([]charts.Color, len(s.colors))
	for i, c := range s.colors {
		colors[i] = charts.ColorFromHex(c)
	}
	theme := charts.MakeTheme(charts.ThemeOption{
		AxisStrokeColor:    charts.ColorFromHex(axisColor),
		AxisSplitLineColor: charts.ColorFromHex(gridColor),
		BackgroundColor:    charts.ColorFromHex("#ffffff"),
		TextColor:          charts.ColorFromHex(inkColor),
		SeriesColors:       colors,
	})
	font := charts.FontStyle{FontSize: 11, FontColor: charts.ColorFromHex("#495057")}
	opt := charts.NewBarChartOptionWithData(s.series)
	opt.Theme = theme
	opt.Padding = charts.Box{Top: 14, Right: 20, Bottom: 8, Left: 8, IsSet: true}
	switch n := len(s.labels); {
	case n <= 2:
		opt.BarSize = 0.4 // one or two bars: not a wall of colour
	case n <= 4:
		opt.BarSize = 0.55
	}
	opt.Legend.Show = charts.Ptr(false)
	opt.CategoryAxis.Labels = s.labels
	opt.CategoryAxis.LabelFontStyle = font
	// Every label shows, centred under its bar; the blank ones draw
	// nothing (slotLabels leaves room between those it writes).
	opt.CategoryAxis.LabelCount = len(s.labels)
	opt.CategoryAxis.BoundaryGap = charts.Ptr(true)
	opt.StackSeries = charts.Ptr(true)
	va := charts.ValueAxisOption{LabelFontStyle: font, Min: charts.Ptr(0.0)}
	va.ValueFormatter = func(v float64) string {
		if v != math.Trunc(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	top := 0.0
	for i := range s.labels {
		sum := 0.0
		for _, v := range s.series {
			if i < len(v) && v[i] != charts.GetNullValue() {
				sum += v[i]
			}
		}
		top = max(top, sum)
	}
	step := niceStep(top, true)
	va.Max = charts.Ptr(math.Max(step, math.Ceil(top/step-1e-9)*step))
	va.LabelCount = int(math.Round(*va.Max/step)) + 1
	opt.ValueAxis = []charts.ValueAxisOption{va}
	for i := range opt.SeriesList {
		opt.SeriesList[i].Name = s.names[i]
	}
	p := charts.NewPainter(charts.PainterOptions{OutputFormat: charts.ChartOutputSVG, Width: s.width, Height: s.height})
	if err := p.BarChart(opt); err != nil {
		return "", "Could not draw this chart: " + err.Error()
	}
	b, err := p.Bytes()
	if err != nil {
		return "", "Could not draw this chart: " + err.Error()
	}
	return inlineSVG(b, title), ""
}

// svgOpenTag and viewBoxAttr read a chart's opening tag; compiled on first
// use, as the page's template is parsed.
var (
	svgOpenTag  = lazyregexp.New(`^\s*<svg\b[^>]*>`)
	viewBoxAttr = lazyregexp.New(`viewBox="([0-9. ]+)"`)
)

// inlineSVG returns the library's SVG document as an element for the page:
// its root tag rewritten without namespace declarations (HTML needs none)
// and with a role and a label for screen readers.
func inlineSVG(b []byte, label string) template.HTML {
	s := string(b)
	open := svgOpenTag().FindString(s)
	vb := "0 0 100 100"
	if m := viewBoxAttr().FindStringSubmatch(open); m != nil {
		vb = m[1]
	}
	// The library escapes every text it draws (&, <, >); label is escaped
	// here. So the result is safe to inline.
	return template.HTML(`<svg viewBox="` + vb + `" role="img" aria-label="` + template.HTMLEscapeString(label) +
		`" preserveAspectRatio="xMidYMid meet">` + s[len(open):])
}

func swatch(color string) template.CSS { return template.CSS("background:" + color) }

// niceStep is a round step (1, 2 or 5 times a power of ten) dividing
// [0, top] into at most five intervals; at least 1 for counts.
func niceStep(top float64, integer bool) float64 {
	if top <= 0 || math.IsNaN(top) || math.IsInf(top, 0) {
		return 1
	}
	base := math.Pow(10, math.Floor(math.Log10(top/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step := base * m; top/step <= 5+1e-9 {
			if integer && step < 1 {
				return 1
			}
			return step
		}
	}
	return base * 10
}
