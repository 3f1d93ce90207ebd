// Package report summarizes detour ledgers: per target (provider/model) how
// many calls were sent, how many were answered, how the rest failed, how
// often the target was skipped, its latency (p50, p95), tokens and cost, and
// the walls it hit (from the first failure of kind "wall" to the next
// answer, in time order across every file read), and the provider's
// request id of its latest failure of each kind.
//
// It reads in a stream and keeps bounded memory per target: latency goes
// into a log-bucket histogram (about 2% relative error), so a ledger of any
// length can be summarized. Read also bounds the number of targets,
// providers and routes kept apart, folding the rest of each into one
// "other" row with exact numbers, so that memory is bounded by the rows
// printed whatever the ledger holds:
//
//	s, err := report.Read([]report.Source{{Name: p, Path: p}},
//		report.Options{Filter: f, Top: report.DefaultTop})
//	if err != nil { ... }
//	r := s.Report()
//
// Many readers can also feed one Summary that keeps every target apart
// (Read is better for files that overlap in time: it merges their lines,
// where one fed after the other places late lines only as well as it can):
//
//	s := report.NewSummary()
//	for _, p := range paths {
//		if err := report.SummarizeFile(p, f, s); err != nil { ... }
//	}
//
// A line that cannot be read (torn by a crash, not JSON, not a record) is
// skipped and counted, never fatal.
//
// The same Summary keeps a time series per target, in cells of a minute
// to an hour as the span grows (folded into larger buckets on output), and
// which hop answered each route: s.ReportBy(24 * time.Hour) fills
// Report.Series (ReportBy(0) picks buckets from the span: minutes for a
// run of minutes, hours for a day, days for a month), and WriteHTML turns
// such a Report into one self-contained HTML page with charts.
package report
