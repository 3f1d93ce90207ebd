package report

// The walls timeline of the HTML report, written as SVG by hand: bands from
// Start to End, which go-analyze/charts has no chart type for.

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// wallChart draws each target's walls as bands on a timeline, by hand: the
// chart library has no interval bands. Open walls run to the report's end.
func wallChart(r Report, first, last time.Time) chartView {
	cv := chartView{ID: "walls", Title: "Walls on a timeline",
		Note: "from a target's first wall failure (no credit, daily quota, rejected key) to its next answer; open walls run to the report's end",
		Legend: []legendItem{{Name: "wall, closed by an answer", Color: swatch(wallColor)},
			{Name: "still open at the report's end", Color: swatch(wallColor), Open: true}}}
	if len(r.Walls) == 0 {
		cv.Legend = nil
		if len(r.Targets) == 0 {
			cv.Empty = "Nothing to draw: no attempts in the selection."
		} else {
			cv.Empty = "Nothing to draw: no target hit a wall."
		}
		return cv
	}
	var rows []string
	row := map[string]int{}
	for _, w := range r.Walls {
		if _, ok := row[w.Target]; !ok {
			row[w.Target] = len(rows)
			rows = append(rows, w.Target)
		}
		if w.Start.Before(first) || first.IsZero() {
			first = w.Start
		}
		if w.End != nil && w.End.After(last) {
			last = *w.End
		}
	}
	end := last
	if !end.After(first) {
		end = first.Add(time.Minute)
	}
	const (
		right, top, bandH = 24, 30, 16
	)
	// Each row as tall as its name, wrapped, never cut; the names'
	// column as wide as the widest.
	left := 16 + int(namesWidth(rows))
	rowY := make([]int, len(rows)+1) // where each row begins; the last, where they end
	rowY[0] = top
	for i, name := range rows {
		rowY[i+1] = rowY[i] + max(28, len(wrapName(name, nameChars))*lineH+12)
	}
	width := wideW
	bottom := rowY[len(rows)]
	height := bottom + 34
	plot := float64(width - left - right)
	x := func(t time.Time) float64 {
		return float64(left) + plot*float64(t.Sub(first))/float64(end.Sub(first))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" role="img" aria-label="%s" preserveAspectRatio="xMidYMid meet" font-family="system-ui, sans-serif" font-size="12">`,
		width, height, template.HTMLEscapeString(cv.Title))
	b.WriteString(`<defs><pattern id="open-wall" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
		`<rect width="6" height="6" fill="` + wallColor + `" fill-opacity="0.35"/><rect width="3" height="6" fill="` + wallColor + `"/></pattern></defs>`)
	// Time axis: ticks at a round step, labels at the top, far enough
	// apart not to touch (a label is at most 8 characters).
	step := tickStep(end.Sub(first), int(plot/(8*charW+16)))
	for t := first.UTC().Truncate(step); !t.After(end); t = t.Add(step) {
		if t.Before(first) {
			continue
		}
		xt := x(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1"/>`, xt, top-4, xt, bottom, gridColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="%s" text-anchor="middle">%s</text>`, xt, top-10, mutedColor, tickLabel(t, step))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1"/>`, left, bottom, width-right, bottom, axisColor)
	for i, name := range rows {
		y := rowY[i]
		nameText(&b, name, float64(left-10), float64(y+rowY[i+1])/2)
		if i > 0 {
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1"/>`, left, y, width-right, y, gridColor)
		}
	}
	for _, w := range r.Walls {
		i := row[w.Target]
		y := (rowY[i]+rowY[i+1])/2 - bandH/2
		stop := end
		if w.End != nil {
			stop = *w.End
		}
		x0, x1 := x(w.Start), x(stop)
		if x1-x0 < 3 {
			x1 = x0 + 3
		}
		fill := wallColor
		if w.Open {
			fill = "url(#open-wall)"
		}
		span := "open at the report's end"
		if w.End != nil {
			span = "until " + w.End.UTC().Format("2006-01-02 15:04:05") + " (" + human(w.End.Sub(w.Start)) + ")"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" rx="3" fill="%s"><title>%s</title></rect>`,
			x0, y, x1-x0, bandH, fill, template.HTMLEscapeString(w.Target+": "+w.Status+" "+w.Reason+
				", from "+w.Start.UTC().Format("2006-01-02 15:04:05")+" "+span))
	}
	layout := "2006-01-02 15:04"
	if end.Sub(first) < time.Hour {
		layout = "2006-01-02 15:04:05"
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`, left, bottom+22, mutedColor,
		template.HTMLEscapeString(first.UTC().Format(layout)+" UTC"))
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s" text-anchor="end">%s</text>`, width-right, bottom+22, mutedColor,
		template.HTMLEscapeString(end.UTC().Format(layout)+" UTC"))
	b.WriteString(`</svg>`)
	cv.SVG = template.HTML(b.String())
	return cv
}

// tickStep is a round step giving at most n ticks (and at most 10) over d.
func tickStep(d time.Duration, n int) time.Duration {
	n = max(1, min(n, 10))
	for _, s := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
		15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
		30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
		24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour} {
		if d/s <= time.Duration(n) {
			return s
		}
	}
	return 91 * 24 * time.Hour
}

func tickLabel(t time.Time, step time.Duration) string {
	switch {
	case step < time.Minute:
		return t.Format("15:04:05")
	case step >= 24*time.Hour || (t.Hour() == 0 && t.Minute() == 0):
		return t.Format("Jan 2")
	}
	return t.Format("15:04")
}
