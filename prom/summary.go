package prom

import (
	"slices"
	"strconv"
)

// Summary is one series of a summary as a SummaryFunc reports it: the
// values at some quantiles of what it observed, their sum and their count.
type Summary struct {
	// Quantiles are the values at quantiles, written in this order; a
	// quantile is between 0 and 1.
	Quantiles []Quantile
	// Sum is the sum of the observations.
	Sum float64
	// Count is how many observations there were.
	Count uint64
}

// Quantile is the value V below which a fraction Q of the observations
// fall.
type Quantile struct {
	Q, V float64
}

// SummaryCollectFunc reports a summary family's series at scrape time: it
// calls emit once per series with its summary and its label values, one per
// label in the order SummaryFunc declared them. emit panics unless the
// number of values is that of the labels and each is valid UTF-8; it must
// not be called after SummaryCollectFunc returns.
type SummaryCollectFunc func(emit func(s Summary, labelValues ...string))

// summaryFunc is a summary family whose series a SummaryCollectFunc
// reports.
type summaryFunc struct {
	d       *desc
	collect SummaryCollectFunc
}

// SummaryFunc registers a summary family whose series collect reports at
// each scrape, for summaries computed elsewhere (the Go runtime's GC
// pauses, say); a scrape where it reports none leaves the family out.
// Scrapes may call collect concurrently. It panics on an invalid or taken
// name (name_sum and name_count included), an invalid label name, a label
// given twice, or a label named quantile.
func (r *Registry) SummaryFunc(name, help string, labels []string, collect SummaryCollectFunc) {
	r.register(&summaryFunc{d: newDesc(name, help, "summary", labels, "quantile"), collect: collect},
		name, "_sum", "_count")
}

// summarySample is one series reported by a SummaryCollectFunc.
type summarySample struct {
	values []string
	s      Summary
}

// appendTo collects the series and appends them in the text format, sorted
// by label values, or nothing if there are none.
func (f *summaryFunc) appendTo(b []byte) []byte {
	var list []summarySample
	f.collect(func(s Summary, values ...string) {
		f.d.checkValues(values)
		list = append(list, summarySample{values: slices.Clone(values), s: s})
	})
	if len(list) == 0 {
		return b
	}
	slices.SortStableFunc(list, func(a, b summarySample) int { return f.d.compare(a.values, b.values) })
	b = f.d.appendHeader(b)
	for _, s := range list {
		b = f.d.appendSummary(b, s.values, s.s)
	}
	return b
}

// appendSummary appends the samples of one summary series: a line per
// quantile, then the sum and the count.
func (d *desc) appendSummary(b []byte, values []string, s Summary) []byte {
	for _, q := range s.Quantiles {
		b = d.appendName(b, "", values, formatFloat(q.Q))
		b = appendFloat(b, q.V)
		b = append(b, '\n')
	}
	b = d.appendName(b, "_sum", values, "")
	b = appendFloat(b, s.Sum)
	b = append(b, '\n')
	b = d.appendName(b, "_count", values, "")
	b = strconv.AppendUint(b, s.Count, 10)
	return append(b, '\n')
}
