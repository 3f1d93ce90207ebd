package report

// Horizontal bar charts of the HTML report written as SVG by hand, like
// the walls timeline: one bar per name (a provider, a target), the whole
// name wrapped on the left. go-analyze/charts draws a category label on
// one line and squeezes the plot to make room for it, so a long target
// name left no room for its bar; and a name must never be cut.

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"unicode/utf8"
)

const (
	// charW is the width of a character of the charts' 12-unit font, a
	// little more than most (so that text never runs into its neighbour).
	charW = 7.0
	// nameChars is the most characters of a name on one line of a chart;
	// a longer one wraps.
	nameChars = 34
	// lineH is the height of a line of text in a chart.
	lineH = 15
	// trackColor is the pale track a share's bar lies on.
	trackColor = "#edf2ff"
)

// wrapName splits name into lines of at most n runes, breaking after a
// '/', '-', '_', ':', '.' or space where one falls in the second half of
// a line, else at n. Every rune is kept: the lines joined are the name.
func wrapName(name string, n int) []string {
	var out []string
	r := []rune(name)
	for len(r) > n {
		cut := n
		for i := n; i > n/2; i-- {
			if strings.ContainsRune("/-_:. ", r[i-1]) {
				cut = i
				break
			}
		}
		out = append(out, string(r[:cut]))
		r = r[cut:]
	}
	return append(out, string(r))
}

// nameText writes name as an SVG text right-aligned at x, its lines
// centred on y.
func nameText(b *strings.Builder, name string, x, y float64) {
	lines := wrapName(name, nameChars)
	top := y - float64(len(lines)-1)*lineH/2
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="end" dominant-baseline="middle">`, x, top, inkColor)
	for i, l := range lines {
		if i == 0 {
			b.WriteString(template.HTMLEscapeString(l))
			continue
		}
		fmt.Fprintf(b, `<tspan x="%.1f" dy="%d">%s</tspan>`, x, lineH, template.HTMLEscapeString(l))
	}
	b.WriteString(`</text>`)
}

// namesWidth is how wide the widest of names is drawn, wrapped.
func namesWidth(names []string) float64 {
	w := 0
	for _, n := range names {
		w = max(w, min(utf8.RuneCountInString(n), nameChars))
	}
	return float64(w) * charW
}

// hbar is one bar: its name, value and the label written after it.
type hbar struct {
	name  string
	value float64
	label string
}

// hbarChart draws bars (values at least 0) against an axis from 0 to
// top (0: the largest value, rounded up), whose ticks axis writes. With
// track, each bar lies on a pale one as long as the axis (a share of a
// whole: reachability), so that 0% still shows where the bar would be.
func hbarChart(title string, bars []hbar, top float64, axis func(float64) string, track bool) template.HTML {
	names := make([]string, len(bars))
	rows := make([]float64, len(bars)) // each row's height
	height := 14.0
	for i, bar := range bars {
		names[i] = bar.name
		rows[i] = math.Max(30, float64(len(wrapName(bar.name, nameChars)))*lineH+12)
		height += rows[i]
	}
	biggest := 0.0
	for _, bar := range bars {
		biggest = math.Max(biggest, bar.value)
	}
	if top <= 0 {
		step := niceStep(biggest, false)
		top = math.Max(step, math.Ceil(biggest/step-1e-9)*step)
	}
	left := 16 + namesWidth(names)
	right := float64(smallW) - 78 // room for the value written after the bar
	x := func(v float64) float64 { return left + (right-left)*math.Min(v, top)/top }
	// Ticks far enough apart for their labels not to touch.
	step := niceStep(top, false)
	for {
		widest := 0
		for v := 0.0; v <= top+1e-9; v += step {
			widest = max(widest, utf8.RuneCountInString(axis(v)))
		}
		if x(step)-x(0) >= float64(widest)*charW+10 || step >= top {
			break
		}
		step = nextNice(step)
	}
	bottom := height
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %.0f" role="img" aria-label="%s" preserveAspectRatio="xMidYMid meet" font-family="system-ui, sans-serif" font-size="12">`,
		smallW, bottom+30, template.HTMLEscapeString(title))
	for v := 0.0; v <= top+1e-9; v += step {
		xv := x(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="8" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>`, xv, xv, bottom, gridColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="middle">%s</text>`, xv, bottom+18, mutedColor,
			template.HTMLEscapeString(axis(v)))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="8" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>`, left, left, bottom, axisColor)
	y := 14.0
	for i, bar := range bars {
		mid := y + rows[i]/2
		nameText(&b, bar.name, left-8, mid)
		if track {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="16" rx="2" fill="%s"/>`, left, mid-8, right-left, trackColor)
		}
		w := x(bar.value) - left
		if bar.value > 0 {
			w = math.Max(w, 1.5)
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="16" rx="2" fill="%s"><title>%s</title></rect>`,
			left, mid-8, w, accentColor, template.HTMLEscapeString(bar.name+": "+bar.label))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" dominant-baseline="middle">%s</text>`, left+w+6, mid, inkColor,
			template.HTMLEscapeString(bar.label))
		y += rows[i]
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// nextNice is the round step after step: 1, 2 and 5 times a power of ten.
func nextNice(step float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(step)))
	switch m := step / p; {
	case m < 1.5:
		return 2 * p
	case m < 3.5:
		return 5 * p
	}
	return 10 * p
}
