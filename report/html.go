package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The HTML report is one self-contained file: its charts are drawn here, in
// Go, as SVG by github.com/go-analyze/charts (pure Go, no cgo) and inlined
// into the page, with the one chart that library cannot draw (walls as bands
// on a timeline) written as SVG by hand in the same style. There is nothing
// to load: no script, no stylesheet, no font, no CDN. The page opens
// offline, from a mail attachment or a CI artefact, prints as it shows, and
// no third-party JavaScript is committed to the repository or run by the
// reader.

//go:embed report.html.tmpl
var htmlTemplateText string

// htmlTemplate is the page's template, parsed on first use rather than
// at every start of every command.
var htmlTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"num":   func(n int) string { return groupDigits(int64(n)) },
		"count": count,
	}).Parse(htmlTemplateText))
})

// HTMLOptions are what WriteHTML shows besides the Report. The zero value is
// ready to use.
type HTMLOptions struct {
	// Title heads the page; "" means "detour report".
	Title string
	// Sources names what was read (files, "stdin"), shown under the title;
	// empty leaves the line out.
	Sources []string
	// Generated is when the page was made, shown at its foot; the zero time
	// leaves it out (so the same Report gives the same bytes).
	Generated time.Time
}

// WriteHTML writes r as one self-contained HTML page (no script, no
// network): the time range and lines read, the outcomes per provider over
// time (answers and failures by kind, stacked), the walls on a timeline,
// reachability per provider, cost per target, the chain each route used
// (answers by hop and target), then the per-target table, the walls and the
// buckets as HTML tables. Everything that came from the ledger is escaped.
//
// The charts are SVG drawn in Go by github.com/go-analyze/charts (pure Go)
// and inlined, rather than drawn in the reader's browser by a JavaScript
// chart library: there is nothing to load (it works offline, from a mail or
// a CI artefact), the page prints as it shows, and no third-party script is
// committed to the repository or run by the reader.
//
// Give it the Report of Summary.ReportBy: the charts over time and per
// provider read its Series; without one they say there is nothing to draw.
// A Report with no records draws no chart, and says so. Safe for
// concurrent use.
func WriteHTML(w io.Writer, r Report, opt HTMLOptions) error {
	return htmlTemplate().Execute(w, buildPage(r, opt))
}

type htmlPage struct {
	Title        string
	Range        string
	Sources      string
	Generated    string
	Lines        int
	Matched      int
	Unreadable   int
	UnreadableAt string
	Stats        []stat
	Bucket       string // "minute", "5 minutes", "hour", "day", "6 hours"
	Per          string // "the minute", "5 minutes", ...: "counted by" what
	Outcomes     []chartView
	OutcomesNone string
	Walls        chartView
	Reach        chartView
	Cost         chartView
	Routes       []chartView
	RoutesNone   string
	Targets      []targetRow
	WallRows     []wallRow
	FailureIDs   []failureIDRow
	Buckets      []bucketRow
}

type stat struct{ Label, Value, Note string }

// chartView is one chart: its SVG, or the sentence saying why there is none.
type chartView struct {
	ID     string
	Title  string
	Note   string
	Legend []legendItem
	SVG    template.HTML
	Empty  string
}

type legendItem struct {
	Name  string
	Color template.CSS
	Open  bool
}

type targetRow struct {
	Target, Calls, Answers, Reach, P50, P95, Skips, In, Out, Cost, Failures string
	Dead                                                                    bool
}

type wallRow struct {
	Target, Start, End, Took, Status, Reason, UpstreamID string
	Open                                                 bool
}

type failureIDRow struct {
	Target, Kind, Status, At, ID string
}

type bucketRow struct {
	Start, Calls, Answers, Reach, Failures, Skips, Cost string
}

func buildPage(r Report, opt HTMLOptions) htmlPage {
	p := htmlPage{Title: opt.Title, Lines: r.Lines, Matched: r.Matched, Unreadable: r.UnreadableLines,
		UnreadableAt: strings.Join(r.UnreadableAt, ", ")}
	if p.Title == "" {
		p.Title = "detour report"
	}
	if r.UnreadableLines > len(r.UnreadableAt) && len(r.UnreadableAt) > 0 {
		p.UnreadableAt += ", …"
	}
	p.Sources = strings.Join(opt.Sources, ", ")
	if !opt.Generated.IsZero() {
		p.Generated = opt.Generated.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	first, last := r.Span()
	if !first.IsZero() {
		p.Range = first.UTC().Format("2006-01-02 15:04") + " → " + last.UTC().Format("2006-01-02 15:04") +
			" UTC (" + human(last.Sub(first)) + ")"
	}
	by := time.Duration(r.BucketSeconds) * time.Second
	p.Bucket = bucketName(by)
	p.Per = p.Bucket
	if p.Per != "" && (p.Per[0] < '0' || p.Per[0] > '9') {
		p.Per = "the " + p.Per
	}
	p.Stats = stats(r)
	p.Outcomes, p.OutcomesNone = outcomeCharts(r, by)
	p.Walls = wallChart(r, first, last)
	p.Reach = reachChart(r)
	p.Cost = costChart(r)
	p.Routes, p.RoutesNone = routeCharts(r)
	p.Targets = targetRows(r)
	p.WallRows = wallRows(r)
	for _, t := range r.Targets {
		for _, f := range t.LatestFailures {
			p.FailureIDs = append(p.FailureIDs, failureIDRow{Target: t.Target, Kind: f.Kind, Status: f.Status,
				At: f.Time.UTC().Format("2006-01-02 15:04:05"), ID: f.UpstreamRequestID})
		}
	}
	p.Buckets = bucketRows(r, by)
	return p
}

func stats(r Report) []stat {
	var calls, answers, stalledFree int
	var cost float64
	for _, t := range r.Targets {
		calls += t.Calls
		answers += t.Answers
		cost += t.CostUSD
	}
	stalledFree = calls
	if len(r.Series) > 0 {
		stalledFree = 0
		for _, b := range r.Series {
			stalledFree += b.Calls - b.ClientStalled
		}
	}
	reach := "–"
	if stalledFree > 0 {
		reach = strconv.FormatFloat(math.Round(1000*float64(answers)/float64(stalledFree))/10, 'f', 1, 64) + "%"
	}
	open := 0
	for _, w := range r.Walls {
		if w.Open {
			open++
		}
	}
	answered, lastResort := 0, 0
	for _, u := range r.Routes {
		answered += u.Answers
		lastResort += u.LastResort
	}
	out := []stat{
		{"calls", groupDigits(int64(calls)), "attempts that sent something"},
		{"answers", groupDigits(int64(answers)), "calls answered"},
		{"reachability", reach, "answers / calls"},
		{"cost", usdText(cost), "at the targets' prices"},
		{"walls", groupDigits(int64(len(r.Walls))), fmt.Sprintf("%d still open", open)},
	}
	if lastResort > 0 {
		out = append(out, stat{"last resort", groupDigits(int64(lastResort)), "answers the route gave itself"})
	}
	if r.Folded != nil && r.Folded.Targets != nil {
		out = append(out, stat{"targets folded", r.Folded.Targets.count(),
			fmt.Sprintf("past the %d with the most lines, in one row", r.Top)})
	}
	return out
}

func targetRows(r Report) []targetRow {
	out := make([]targetRow, 0, len(r.Targets))
	for _, t := range r.Targets {
		var fails []string
		for i, c := range t.FailuresByStatus {
			if i == 3 {
				fails = append(fails, fmt.Sprintf("+%d more", len(t.FailuresByStatus)-3))
				break
			}
			fails = append(fails, fmt.Sprintf("%s ×%d", c.Status, c.N))
		}
		out = append(out, targetRow{Target: t.Target, Calls: groupDigits(int64(t.Calls)),
			Answers: groupDigits(int64(t.Answers)), Reach: pctText(t.ReachabilityPct),
			P50: secsText(t.P50Seconds), P95: secsText(t.P95Seconds), Skips: groupDigits(int64(t.Skips)),
			In: tokensText(t.TokensIn), Out: tokensText(t.TokensOut), Cost: usdText(t.CostUSD),
			Failures: strings.Join(fails, ", "), Dead: t.Calls > 0 && t.Answers == 0})
	}
	return out
}

func wallRows(r Report) []wallRow {
	out := make([]wallRow, 0, len(r.Walls))
	for _, w := range r.Walls {
		row := wallRow{Target: w.Target, Start: w.Start.UTC().Format("2006-01-02 15:04:05"),
			End: "open", Status: w.Status, Reason: w.Reason, UpstreamID: w.UpstreamRequestID, Open: w.Open,
			Took: human(time.Duration(w.Seconds * float64(time.Second)))}
		if w.End != nil {
			row.End = w.End.UTC().Format("2006-01-02 15:04:05")
		} else {
			row.Took += " so far"
		}
		out = append(out, row)
	}
	return out
}

func bucketRows(r Report, by time.Duration) []bucketRow {
	out := make([]bucketRow, 0, len(r.Series))
	for _, b := range r.Series {
		layout := "2006-01-02 15:04"
		if by >= 24*time.Hour {
			layout = time.DateOnly
		}
		out = append(out, bucketRow{Start: b.Start.UTC().Format(layout), Calls: groupDigits(int64(b.Calls)),
			Answers: groupDigits(int64(b.Answers)), Reach: pctText(b.ReachabilityPct),
			Failures: KindsText(b.FailuresByKind), Skips: groupDigits(int64(b.Skips)), Cost: usdText(b.CostUSD)})
	}
	return out
}

// KindsText lists failures by kind, most first ("wall 3, transient 1"), for
// tables; "" when there are none.
func KindsText(m map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var l []kv
	for k, n := range m {
		if n > 0 {
			l = append(l, kv{k, n})
		}
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].n != l[j].n {
			return l[i].n > l[j].n
		}
		return l[i].k < l[j].k
	})
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = x.k + " " + strconv.Itoa(x.n)
	}
	return strings.Join(parts, ", ")
}

func bucketName(by time.Duration) string {
	switch {
	case by <= 0:
		return ""
	case by == time.Minute:
		return "minute"
	case by < time.Hour:
		return strconv.Itoa(int(by/time.Minute)) + " minutes"
	case by == time.Hour:
		return "hour"
	case by == 24*time.Hour:
		return "day"
	case by%(24*time.Hour) == 0:
		return strconv.Itoa(int(by/(24*time.Hour))) + " days"
	}
	return strconv.Itoa(int(by/time.Hour)) + " hours"
}

// human writes d rounded to what matters: "42s", "17m", "3h05m", "2d04h".
func human(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Round(time.Minute)/time.Minute)) + "m"
	case d < 24*time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// count writes n and its noun, plural unless n is 1: "1 call", "2,048 calls".
func count(n int, noun string) string {
	if n != 1 {
		noun += "s"
	}
	return groupDigits(int64(n)) + " " + noun
}

func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func pctText(p *float64) string {
	if p == nil {
		return "–"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64) + "%"
}

func secsText(p *float64) string {
	switch {
	case p == nil:
		return "–"
	case *p < 1:
		return fmt.Sprintf("%.0f ms", *p*1000)
	case *p < 100:
		return fmt.Sprintf("%.2f s", *p)
	}
	return fmt.Sprintf("%.0f s", *p)
}

func tokensText(n int64) string {
	switch {
	case n < 100_000:
		return groupDigits(n)
	case n < 10_000_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 0, 64) + "k"
	case n < 10_000_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 0, 64) + "M"
	}
	return strconv.FormatFloat(float64(n)/1e9, 'f', 0, 64) + "G"
}

func usdText(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v < 0.01:
		// Three significant digits: $0.000271.
		return "$" + strconv.FormatFloat(v, 'f', min(10, 2-int(math.Floor(math.Log10(v)))), 64)
	case v < 100:
		return fmt.Sprintf("$%.4f", v)
	case v < 1e6:
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.0f", v)
}

func usdAxis(v float64) string {
	switch {
	case v <= 0:
		return "$0"
	case v < 0.01:
		// Two significant digits, no trailing zero: $0.0015, $0.001.
		p := math.Pow(10, float64(1-int(math.Floor(math.Log10(v)))))
		return "$" + strconv.FormatFloat(math.Round(v*p)/p, 'f', -1, 64)
	case v < 100:
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.0f", v)
}
