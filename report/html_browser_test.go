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

// TestHTMLReport_InChromium loads the HTML report of a demo day in headless
// Chromium: no console error, no exception, no request beyond the file,
// every chart drawn with data; and it saves a full-page screenshot.
func TestHTMLReport_InChromium(t *testing.T) {
	exe := chromium(t)
	began := time.Now()
	r := demoDayReport(t)
	var page bytes.Buffer
	if err := report.WriteHTML(&page, r, report.HTMLOptions{Sources: []string{"demo day (simulate.DayProfile, seed 1)"}}); err != nil {
		t.Fatal(err)
	}
	artefacts := os.Getenv("DETOUR_ARTEFACTS")
	if artefacts == "" {
		artefacts = t.TempDir()
	} else if err := os.MkdirAll(artefacts, 0o755); err != nil {
		t.Fatal(err)
	}
	htmlPath, err := filepath.Abs(filepath.Join(artefacts, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(htmlPath, page.Bytes(), 0o644); err != nil {
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
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

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
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)

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

	// The demo day draws every chart: outcomes for each provider sent
	// to, walls, reachability, cost and the two routes.
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

	shotPath := filepath.Join(artefacts, "report.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d charts, screenshot %s (%d KB), page %s; took %s", len(charts), shotPath, len(shot)/1024, htmlPath, took.Round(time.Millisecond))
	if os.Getenv("DETOUR_UPDATE_SCREENSHOT") == "1" {
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
