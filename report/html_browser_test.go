package report_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/detourhq/detour/report"
)

// chromium returns the path of Debian's chromium, or skips the test when
// there is none (fails instead when DETOUR_REQUIRE_CHROMIUM=1, as in
// `make test`).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("DETOUR_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium is not installed and DETOUR_REQUIRE_CHROMIUM=1 (make deps installs it)")
	}
	t.Skip("chromium is not installed (make deps installs it)")
	return ""
}

// chartMarks is what the page says of one chart: its id, whether it has an
// SVG or the sentence saying there is nothing to draw, and how many filled
// shapes with an area it draws (bars, bands).
type chartMarks struct {
	ID    string `json:"id"`
	SVG   bool   `json:"svg"`
	Empty bool   `json:"empty"`
	Marks int    `json:"marks"`
}

// countMarks runs in the page: for each chart, the path and rect elements
// whose rendered box has an area and whose fill is neither none nor the
// white background.
const countMarks = `Array.from(document.querySelectorAll('figure.chart')).map(f => {
  const svg = f.querySelector('svg');
  let marks = 0;
  if (svg) svg.querySelectorAll('path, rect').forEach(e => {
    if (e.closest('defs')) return;
    const b = e.getBBox();
    const fill = getComputedStyle(e).fill;
    if (b.width > 0.5 && b.height > 0.5 && fill !== 'none' && fill !== 'rgb(255, 255, 255)') marks++;
  });
  return {id: f.dataset.chart, svg: !!svg, empty: !!f.querySelector('p.empty'), marks: marks};
})`

// overlaps runs in the page: every pair of texts of one chart whose
// boxes overlap, named "chart: "a" overlaps "b"".
const overlaps = `Array.from(document.querySelectorAll('figure.chart svg')).flatMap(svg => {
  const id = svg.closest('figure').dataset.chart;
  const boxes = Array.from(svg.querySelectorAll('text')).filter(e => e.textContent.trim() !== '')
    .map(e => ({t: e.textContent, r: e.getBoundingClientRect()}));
  const out = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i].r, b = boxes[j].r;
    if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
      out.push(id + ': "' + boxes[i].t + '" overlaps "' + boxes[j].t + '"');
  }
  return out;
})`

// timeLabels runs in the page: the time labels under the first outcomes
// chart, left to right ("07:03", "Jun 2").
const timeLabels = `Array.from(document.querySelectorAll('figure[data-chart="outcomes-0"] svg text'))
  .filter(e => /^([01][0-9]|2[0-3]):[0-5][0-9]$|^[A-Z][a-z]{2} [0-9]{1,2}$/.test(e.textContent.trim()))
  .sort((a, b) => a.getBoundingClientRect().left - b.getBoundingClientRect().left)
  .map(e => e.textContent.trim())`

// htmlPage is one report the browser test loads, and what it must show.
type htmlPage struct {
	name, file string
	r          report.Report
	bucket     string        // "counted by the ..."
	step       time.Duration // between two buckets; time labels fall on whole steps
	minBuckets int           // buckets with records, at least
}

// TestHTMLReport_InChromium loads HTML reports in headless Chromium: a
// demo day by the hour; the same chain run for four minutes, which must be
// counted by the minute, and for a month, by the day (the issue: every
// range was counted by the hour, so four minutes made one bar). Each page
// logs no console error and no exception, requests nothing beyond its
// file, draws every chart with data, and no two texts of a chart overlap
// (axis labels, whole target names). It saves a full-page screenshot of
// each.
func TestHTMLReport_InChromium(t *testing.T) {
	exe := chromium(t)
	began := time.Now()
	pages := []htmlPage{
		{name: "demo day", file: "report.html", r: demoDayReport(t), bucket: "hour", step: time.Hour, minBuckets: 24},
		{name: "four-minute run", file: "report-4m.html", r: demoRunReport(t, 96, 2500*time.Millisecond),
			bucket: "minute", step: time.Minute, minBuckets: 4},
		{name: "month", file: "report-month.html", r: demoRunReport(t, 90, 8*time.Hour), bucket: "day",
			step: 24 * time.Hour, minBuckets: 30},
	}
	artefacts := os.Getenv("DETOUR_ARTEFACTS")
	if artefacts == "" {
		artefacts = t.TempDir()
	} else if err := os.MkdirAll(artefacts, 0o755); err != nil {
		t.Fatal(err)
	}

	// The machine may have no network: these flags keep Chromium from
	// reaching for it (and hanging on it).
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	}

	var mu sync.Mutex // guards problems and requests
	var problems, requests []string
	ctx, cancel := startChromium(t, opts, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning ||
				ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, "console "+string(ev.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				problems = append(problems, "log "+string(ev.Entry.Level)+": "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		}
	})
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 180*time.Second)
	defer cancelTimeout()

	for _, pg := range pages {
		t.Run(pg.name, func(t *testing.T) {
			var page bytes.Buffer
			if err := report.WriteHTML(&page, pg.r, report.HTMLOptions{Sources: []string{pg.name + " (simulate.DayProfile, seed 1)"}}); err != nil {
				t.Fatal(err)
			}
			htmlPath, err := filepath.Abs(filepath.Join(artefacts, pg.file))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(htmlPath, page.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			problems, requests = nil, nil
			mu.Unlock()
			u := (&url.URL{Scheme: "file", Path: htmlPath}).String()
			if err := chromedp.Do(ctx,
				chromedp.EmulateViewport(1200, 900),
				chromedp.Navigate(u),
				chromedp.WaitReady("body"),
			); err != nil {
				t.Fatalf("loading %s: %v", u, err)
			}
			charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartMarks](countMarks))
			if err != nil {
				t.Fatal(err)
			}
			overlapping, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](overlaps))
			if err != nil {
				t.Fatal(err)
			}
			labels, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](timeLabels))
			if err != nil {
				t.Fatal(err)
			}
			header, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('header').innerText`))
			if err != nil {
				t.Fatal(err)
			}
			shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}

			mu.Lock()
			for _, p := range problems {
				t.Errorf("the page logged %s", p)
			}
			for _, req := range requests {
				if req != u && !strings.HasPrefix(req, "data:") {
					t.Errorf("the page requested %s; it must load nothing", req)
				}
			}
			mu.Unlock()

			// Each run draws every chart: outcomes for each provider
			// sent to, walls, reachability, cost and the two routes.
			want := map[string]bool{"walls": true, "reachability": true, "cost": true, "route-0": true, "route-1": true, "outcomes-0": true}
			for _, c := range charts {
				delete(want, c.ID)
				if !c.SVG || c.Marks == 0 {
					t.Errorf("chart %s: svg %v, %d data marks; want an SVG with data marks (empty sentence: %v)", c.ID, c.SVG, c.Marks, c.Empty)
				}
			}
			for id := range want {
				t.Errorf("no chart %s on the page (charts: %+v)", id, charts)
			}
			for _, o := range overlapping {
				t.Errorf("texts overlap in chart %s", o)
			}
			checkBuckets(t, pg, header, labels)

			shotPath := filepath.Join(artefacts, strings.TrimSuffix(pg.file, ".html")+".png")
			if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d charts, time labels %v, screenshot %s (%d KB), page %s", len(charts), labels, shotPath, len(shot)/1024, htmlPath)
			if pg.file == "report.html" && os.Getenv("DETOUR_UPDATE_SCREENSHOT") == "1" {
				small := recompress(t, shot) // seconds under -race: only when asked
				if len(small) > 300<<10 {
					t.Errorf("screenshot is %d KB; docs/report.png must stay under 300 KB", len(small)/1024)
				}
				docs := filepath.Join("..", "docs")
				if err := os.MkdirAll(docs, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(docs, "report.png"), small, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("docs/report.png: %d KB", len(small)/1024)
			}
		})
	}
	t.Logf("took %s", time.Since(began).Round(time.Millisecond))
}

// checkBuckets checks that pg was counted by its bucket: the page says
// so and has the buckets, and the time labels under the first outcomes
// chart are at least two, left to right, whole steps apart.
func checkBuckets(t *testing.T, pg htmlPage, header string, labels []string) {
	t.Helper()
	if !strings.Contains(header, "counted by the "+pg.bucket+" (UTC)") {
		t.Errorf("the page is not counted by the %s:\n%s", pg.bucket, header)
	}
	if got := pg.r.BucketSeconds; got != int(pg.step/time.Second) || len(pg.r.Series) < pg.minBuckets {
		t.Errorf("%d buckets of %d s; want at least %d of %s", len(pg.r.Series), got, pg.minBuckets, pg.step)
	}
	if len(labels) < 2 {
		t.Fatalf("time labels %q: want two or more", labels)
	}
	first := pg.r.Series[0].Start
	var prev time.Time
	for i, l := range labels {
		var at time.Time
		if c, err := time.Parse("15:04", l); err == nil {
			day := first.Truncate(24 * time.Hour)
			at = day.Add(time.Duration(c.Hour())*time.Hour + time.Duration(c.Minute())*time.Minute)
			for at.Before(prev) || (i == 0 && at.Before(first.Truncate(pg.step))) {
				at = at.Add(24 * time.Hour)
			}
		} else if c, err := time.Parse("Jan 2", l); err == nil {
			at = time.Date(first.Year(), c.Month(), c.Day(), 0, 0, 0, 0, time.UTC)
		} else {
			t.Fatalf("time label %q is neither 15:04 nor Jan 2", l)
		}
		if at.Sub(at.Truncate(pg.step)) != 0 || i > 0 && !at.After(prev) {
			t.Errorf("time labels %q: %q is not a whole %s after the one before", labels, l, pg.step)
		}
		prev = at
	}
}

// recompress re-encodes the screenshot small: as a paletted PNG of its 256
// most frequent colours (a page of flat colours and anti-aliased text needs
// no more; each other colour maps to its nearest), at the best compression.
func recompress(t *testing.T, b []byte) []byte {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is no PNG: %v", err)
	}
	bounds := img.Bounds()
	rgba, ok := img.(*image.RGBA)
	if !ok { // Chromium's are RGBA; anything else is converted once
		rgba = image.NewRGBA(bounds)
		draw.Draw(rgba, bounds, img, bounds.Min, draw.Src)
	}
	// Colours as 0xRRGGBB (the page is opaque), counted.
	px := make([]uint32, 0, bounds.Dx()*bounds.Dy())
	for y := 0; y < bounds.Dy(); y++ {
		row := rgba.Pix[y*rgba.Stride : y*rgba.Stride+4*bounds.Dx()]
		for x := 0; x < len(row); x += 4 {
			px = append(px, uint32(row[x])<<16|uint32(row[x+1])<<8|uint32(row[x+2]))
		}
	}
	freq := map[uint32]int{}
	for _, c := range px {
		freq[c]++
	}
	colors := make([]uint32, 0, len(freq))
	for c := range freq {
		colors = append(colors, c)
	}
	sort.Slice(colors, func(i, j int) bool {
		if freq[colors[i]] != freq[colors[j]] {
			return freq[colors[i]] > freq[colors[j]]
		}
		return colors[i] < colors[j]
	})
	pal := make(color.Palette, 0, 256)
	for _, c := range colors[:min(256, len(colors))] {
		pal = append(pal, color.RGBA{uint8(c >> 16), uint8(c >> 8), uint8(c), 255})
	}
	index := make(map[uint32]uint8, len(freq))
	for _, c := range colors {
		index[c] = uint8(pal.Index(color.RGBA{uint8(c >> 16), uint8(c >> 8), uint8(c), 255}))
	}
	out := image.NewPaletted(image.Rect(0, 0, bounds.Dx(), bounds.Dy()), pal)
	for i, c := range px {
		out.Pix[i] = index[c]
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// startChromium starts Chromium with opts, listener seeing every event of
// its first tab. A browser that exits before it listens ("chrome failed to
// start": seen once on a 2-core machine running two test suites) is
// started anew, up to three times: what the test checks is the page, not
// the machine's load.
func startChromium(t *testing.T, opts []chromedp.ExecAllocatorOption, listener func(any)) (context.Context, context.CancelFunc) {
	t.Helper()
	var err error
	for try := 1; try <= 3; try++ {
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithListener(listener))
		if err = chromedp.Do(ctx); err == nil {
			return ctx, func() { cancelCtx(); cancelAlloc() }
		}
		cancelCtx()
		cancelAlloc()
		t.Logf("chromium, try %d: %v", try, err)
		time.Sleep(time.Second)
	}
	t.Fatalf("chromium did not start in three tries: %v", err)
	return nil, nil
}
