package eval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes rep for people: one row per target, then each task's
// correct answers per target, then the warnings.
func WriteTable(w io.Writer, rep Report) {
	fmt.Fprintf(w, "suite %s (%d tasks, %s)\n\n", rep.Suite, len(rep.Tasks), short(rep.Digest))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tTARGET\tPOOL\tCALLS\tREACH\tACCURACY\tTRUNC\tP50\tP95\tTOKENS IN/OUT\t$/TASK\t$/CORRECT")
	for i, t := range rep.Targets {
		perCorrect := "-"
		if t.CostPerCorrect >= 0 {
			perCorrect = usd(t.CostPerCorrect)
		}
		acc, trunc, p50, p95, tok, perTask := "-", "-", "-", "-", "-", "-"
		if t.Answered > 0 {
			acc = fmt.Sprintf("%s (%d/%d)", pct(t.Accuracy), t.Correct, t.Answered)
			trunc = pct(t.TruncationRate)
			p50, p95 = fmt.Sprintf("%dms", t.P50MS), fmt.Sprintf("%dms", t.P95MS)
			tok = fmt.Sprintf("%.0f/%.0f", t.TokensIn, t.TokensOut)
			perTask = usd(t.CostPerTask)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, t.Target, orDash(t.Pool), t.Attempted,
			pct(t.Reachability), acc, trunc, p50, p95, tok, perTask, perCorrect)
	}
	tw.Flush()
	if len(rep.Targets) > 0 && len(rep.Tasks) > 0 {
		fmt.Fprintln(w, "\ncorrect answers per task (of calls), by target #:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		head := []string{"TASK"}
		for i := range rep.Targets {
			head = append(head, fmt.Sprintf("#%d", i+1))
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, id := range rep.Tasks {
			row := []string{id}
			for _, t := range rep.Targets {
				s := t.Tasks[id]
				if s.Calls == 0 {
					row = append(row, "-")
					continue
				}
				row = append(row, fmt.Sprintf("%d/%d", s.Correct, s.Calls))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintln(w)
	}
	for _, m := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
