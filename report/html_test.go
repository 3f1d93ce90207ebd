package report_test

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/report"
)

// pageChart is one chart of a parsed page.
type pageChart struct {
	id    string
	svg   bool
	marks int // filled shapes with an area
	empty string
}

// renderPage writes r's HTML page and parses it.
func renderPage(t *testing.T, r report.Report) (string, *html.Node) {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteHTML(&b, r, report.HTMLOptions{Title: "test report", Sources: []string{"ledger.jsonl"},
		Generated: time.Date(2025, 6, 3, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), doc
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(m *html.Node) {
		if m.Type == html.TextNode {
			b.WriteString(m.Data)
		}
	})
	return b.String()
}

var fillStyle = regexp.MustCompile(`(?:^|;)\s*fill:\s*([^;]+)`)
var number = regexp.MustCompile(`-?[0-9]+(?:\.[0-9]+)?`)

// filled reports whether a shape is painted: a fill that is neither none nor
// the white background.
func filled(n *html.Node) bool {
	fill := attr(n, "fill")
	if m := fillStyle.FindStringSubmatch(attr(n, "style")); m != nil {
		fill = strings.TrimSpace(m[1])
	}
	switch fill {
	case "", "none", "white", "#fff", "#ffffff", "rgb(255,255,255)", "transparent":
		return false
	}
	return true
}

// hasArea reports whether a path or rect encloses an area: a rect with a
// width and a height, a path whose points span both ways.
func hasArea(n *html.Node) bool {
	if n.Data == "rect" {
		w, _ := strconv.ParseFloat(attr(n, "width"), 64)
		h, _ := strconv.ParseFloat(attr(n, "height"), 64)
		return w > 0.5 && h > 0.5
	}
	nums := number.FindAllString(attr(n, "d"), -1)
	if len(nums) < 6 {
		return false
	}
	minX, minY, maxX, maxY := 1e18, 1e18, -1e18, -1e18
	for i := 0; i+1 < len(nums); i += 2 {
		x, _ := strconv.ParseFloat(nums[i], 64)
		y, _ := strconv.ParseFloat(nums[i+1], 64)
		minX, maxX = min(minX, x), max(maxX, x)
		minY, maxY = min(minY, y), max(maxY, y)
	}
	return maxX-minX > 0.5 && maxY-minY > 0.5
}

func insideDefs(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Data == "defs" {
			return true
		}
	}
	return false
}

// charts lists every figure.chart of the page with its marks.
func charts(doc *html.Node) []pageChart {
	var out []pageChart
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode || n.Data != "figure" || !strings.Contains(attr(n, "class"), "chart") {
			return
		}
		c := pageChart{id: attr(n, "data-chart")}
		walk(n, func(m *html.Node) {
			if m.Type != html.ElementNode {
				return
			}
			switch m.Data {
			case "svg":
				c.svg = true
			case "path", "rect":
				if !insideDefs(m) && filled(m) && hasArea(m) {
					c.marks++
				}
			case "p":
				if strings.Contains(attr(m, "class"), "empty") {
					c.empty = text(m)
				}
			}
		})
		out = append(out, c)
	})
	return out
}

// assertSelfContained fails on anything the page would load or run: a
// script, an element that embeds a resource, a src or href to a resource,
// an external url() in CSS or SVG.
func assertSelfContained(t *testing.T, page string, doc *html.Node) {
	t.Helper()
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("the page has a <script")
	}
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "script", "link", "img", "iframe", "object", "embed", "video", "audio", "source", "image", "use":
			t.Errorf("the page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			v := strings.ToLower(strings.TrimSpace(a.Val))
			switch {
			case a.Key == "src" || a.Key == "href" || a.Key == "xlink:href" || a.Key == "action" || a.Key == "poster" || a.Key == "data":
				t.Errorf("<%s %s=%q>: the page must reference no resource", n.Data, a.Key, a.Val)
			case strings.HasPrefix(a.Key, "on"):
				t.Errorf("<%s %s=...>: an event handler", n.Data, a.Key)
			case strings.Contains(v, "url(") && !regexp.MustCompile(`url\(#[a-z-]+\)`).MatchString(v):
				t.Errorf("<%s %s=%q>: a url() that is not a fragment of the page", n.Data, a.Key, a.Val)
			}
		}
	})
	for _, bad := range []string{`src="http`, `href="http`, `url(http`, `@import`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page has %s", bad)
		}
	}
}

func TestWriteHTML_DemoDayDrawsEveryChartWithData(t *testing.T) {
	r := demoDayReport(t)
	page, doc := renderPage(t, r)
	assertSelfContained(t, page, doc)
	cs := charts(doc)
	// One outcomes chart per provider sent to, the walls, reachability,
	// cost, and one per route.
	providers := map[string]bool{}
	for _, tg := range r.Targets {
		providers[tg.Provider] = true
	}
	if want := len(providers) + 3 + len(r.Routes); len(cs) != want {
		t.Errorf("%d charts, want %d: %+v", len(cs), want, cs)
	}
	for _, c := range cs {
		if !c.svg || c.marks == 0 {
			t.Errorf("chart %s: svg %v with %d data marks (empty: %q)", c.id, c.svg, c.marks, c.empty)
		}
	}
	for _, want := range []string{"<title>test report</title>", "2025-06-01 12:00 → ", "lines read",
		"groq-free/llama-3.3-70b-versatile", "route default", "route cheap", "Walls on a timeline"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The open wall of openrouter (402 on every call) runs to the end.
	if !strings.Contains(page, `fill="url(#open-wall)"`) {
		t.Error("no open wall band")
	}
}

func TestWriteHTML_TinyAndEmptyData(t *testing.T) {
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		recs    []ledger.Record
		drawn   []string // charts that must be drawn, with marks
		nothing []string // charts that must say there is nothing to draw
	}{
		{name: "empty", nothing: []string{"walls", "reachability", "cost"}},
		{name: "one answer", recs: []ledger.Record{{Time: at, Route: "default", Provider: "p", Model: "m",
			Status: "ok", Cost: 0.001, TokensIn: 10, Seconds: 0.2}},
			drawn: []string{"outcomes-0", "reachability", "cost", "route-0"}, nothing: []string{"walls"}},
		{name: "one wall", recs: []ledger.Record{{Time: at, Route: "default", Provider: "p", Model: "m",
			Status: "http_402", Kind: "wall", Reason: "no credit"}},
			drawn: []string{"outcomes-0", "reachability", "walls"}, nothing: []string{"cost"}},
		{name: "one skip", recs: []ledger.Record{{Time: at, Route: "default", Provider: "p", Model: "m",
			Status: ledger.StatusSkippedNoKey}},
			nothing: []string{"outcomes-0", "reachability", "cost", "walls"}},
		{name: "no time", recs: []ledger.Record{{Route: "default", Provider: "p", Model: "m", Status: "ok"}},
			drawn: []string{"route-0"}, nothing: []string{"reachability", "cost", "walls"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := report.NewSummary()
			for i := range tt.recs {
				s.Add(&tt.recs[i])
			}
			page, doc := renderPage(t, s.ReportBy(0))
			assertSelfContained(t, page, doc)
			got := map[string]pageChart{}
			for _, c := range charts(doc) {
				got[c.id] = c
				if c.svg && c.marks == 0 {
					t.Errorf("chart %s draws an SVG without data", c.id)
				}
				if !c.svg && c.empty == "" {
					t.Errorf("chart %s has neither an SVG nor a sentence", c.id)
				}
			}
			for _, id := range tt.drawn {
				if c, ok := got[id]; !ok || !c.svg || c.marks == 0 {
					t.Errorf("chart %s not drawn: %+v", id, c)
				}
			}
			for _, id := range tt.nothing {
				if c, ok := got[id]; !ok || c.svg || !strings.HasPrefix(c.empty, "N") {
					t.Errorf("chart %s: %+v, want a sentence saying there is nothing to draw", id, c)
				}
			}
			if len(tt.recs) == 0 && (strings.Contains(page, "<svg") || !strings.Contains(page, "No records in the selection.")) {
				t.Error("an empty report draws a chart or does not say it is empty")
			}
		})
	}
}

func TestWriteHTML_EscapesWhatCameFromTheLedger(t *testing.T) {
	evil := `<script>alert(1)</script>`
	img := `"><img src=x onerror=alert(1)>`
	s := report.NewSummary()
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	for i, rec := range []ledger.Record{
		{Route: evil, Provider: evil, Model: img, Status: "http_402", Kind: "wall", Reason: img + " https://example.com/x.js"},
		{Route: evil, Provider: evil, Model: img, Status: "http_500", Kind: evil},
		{Route: evil, Provider: evil, Model: img, Status: "ok", Cost: 1},
		{Route: img, Provider: "p", Model: evil, Status: evil, Kind: "wall", Reason: evil},
	} {
		rec.Time = at.Add(time.Duration(i) * time.Minute)
		s.Add(&rec)
	}
	page, doc := renderPage(t, s.ReportBy(0))
	assertSelfContained(t, page, doc)
	if strings.Contains(page, "<img") {
		t.Error("a ledger value made an <img> element")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the ledger's text is not on the page, escaped")
	}
	for _, c := range charts(doc) {
		if c.svg && c.marks == 0 {
			t.Errorf("chart %s draws no data", c.id)
		}
	}
}

func TestWriteHTML_LongSpansByTheDay(t *testing.T) {
	s := report.NewSummary()
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	// 600 days: more buckets than one axis spreads, so only the days with
	// records are drawn, side by side.
	for d := 0; d < 600; d += 7 {
		for h, st := range []string{"ok", "ok", "http_429", "ok"} {
			s.Add(&ledger.Record{Time: start.Add(time.Duration(d)*24*time.Hour + time.Duration(h)*time.Hour),
				Route: "r", Provider: "p", Model: "m", Status: st, Kind: "transient", Hop: h % 2})
		}
	}
	r := s.ReportBy(0)
	if r.BucketSeconds != 86400 {
		t.Fatalf("600 days by %d s, want by the day", r.BucketSeconds)
	}
	page, doc := renderPage(t, r)
	assertSelfContained(t, page, doc)
	drawn := map[string]bool{}
	for _, c := range charts(doc) {
		if c.svg && c.marks == 0 {
			t.Errorf("chart %s draws an SVG without data", c.id)
		}
		drawn[c.id] = c.svg && c.marks > 0
	}
	for _, id := range []string{"outcomes-0", "reachability", "route-0"} {
		if !drawn[id] {
			t.Errorf("chart %s not drawn", id)
		}
	}
	if !strings.Contains(page, "counted by the day") {
		t.Error("the page does not say it counts by the day")
	}
}

func TestWriteHTML_ConcurrentUse(t *testing.T) {
	s := report.NewSummary()
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	for i, st := range []string{"ok", "http_402", "ok", "http_503"} {
		s.Add(&ledger.Record{Time: at.Add(time.Duration(i) * time.Hour), Route: "r", Provider: "p", Model: "m",
			Status: st, Kind: map[bool]string{true: "", false: "wall"}[st == "ok"], Cost: 0.01})
	}
	r := s.ReportBy(0)
	var want bytes.Buffer
	if err := report.WriteHTML(&want, r, report.HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var b bytes.Buffer
			err := report.WriteHTML(&b, r, report.HTMLOptions{})
			if err == nil && !bytes.Equal(b.Bytes(), want.Bytes()) {
				err = errors.New("another page for the same report")
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// The issue: a card for detour's own last resort ("detour" as a provider)
// said "only skipped (0 times)"; names were cut in the charts. The last
// resort's answers are in the summary instead, and every name is whole in
// every chart and table that names it.
func TestWriteHTML_NoLastResortCardAndWholeNames(t *testing.T) {
	long := "openrouter/meta-llama/llama-3.3-70b-instruct:free-with-a-rather-long-suffix"
	provider, model, _ := strings.Cut(long, "/")
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	s := report.NewSummary()
	for i := range 6 {
		tm := at.Add(time.Duration(i) * time.Minute)
		s.Add(&ledger.Record{Time: tm, Route: "default", Provider: provider, Model: model, Status: "http_402", Kind: "wall",
			Cost: 0.001, Reason: "no credits", ProviderRequestID: "gen-" + strconv.Itoa(i)})
		s.Add(&ledger.Record{Time: tm, Route: "default", Provider: "detour", Model: "static", Hop: 1,
			Status: ledger.StatusLastResort, Action: "static"})
	}
	page, doc := renderPage(t, s.ReportBy(0))
	for _, c := range charts(doc) {
		if c.id == "outcomes-1" || strings.Contains(c.empty, "detour") {
			t.Errorf("a card for the last resort: %+v", c)
		}
	}
	var stats, svgTexts []string
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "div" && attr(n, "class") == "stat" {
			stats = append(stats, strings.Join(strings.Fields(text(n)), " "))
		}
		if n.Type == html.ElementNode && n.Data == "text" {
			svgTexts = append(svgTexts, text(n))
		}
	})
	if !strings.Contains(strings.Join(stats, "|"), "last resort6answers the route gave itself") {
		t.Errorf("the summary does not count the 6 last resort answers: %q", stats)
	}
	whole := 0
	for _, tx := range svgTexts {
		if tx == long {
			whole++
		}
	}
	if whole != 2 { // the walls timeline and the cost chart
		t.Errorf("the name is whole in %d charts, want 2 (walls, cost); texts: %q", whole, svgTexts)
	}
	if strings.Contains(page, "…") || !strings.Contains(page, "counted by the minute") {
		t.Error("something was cut, or six minutes are not counted by the minute")
	}
	// The wall's first failure, and the latest wall, with the provider's
	// request id.
	for _, want := range []string{`<td class="l wrap">no credits</td><td class="l">gen-0</td>`,
		`<td class="l">wall</td><td class="l">http_402</td><td class="l">2025-06-01 10:05:00</td><td class="l">gen-5</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}
