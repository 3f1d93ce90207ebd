package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/report"
	"github.com/detourhq/detour/router"
)

// declaredQuota is one quota the config declares (router.Quota), the
// targets whose sends count toward it, and its windows' limits.
type declaredQuota struct {
	key, source string
	targets     []string
	limits      []router.Use // Window and Limit only
}

// declaredQuotas reads the quotas the config's routes declare, each once,
// in route and chain order. A config that cannot be opened or built
// leaves them out: report reads ledgers, and needs no config; the error
// is returned for the caller to say when --config named the file.
func declaredQuotas(env Env, flag string) ([]declaredQuota, error) {
	cfg, err := config.Open(flag, env.Getenv)
	if err != nil {
		return nil, err
	}
	routes, err := cfg.Build(config.BuildOptions{Getenv: env.Getenv})
	if err != nil {
		return nil, err
	}
	var out []declaredQuota
	at := map[string]int{} // key+source -> index in out
	for _, name := range cfg.RouteNames() {
		for _, t := range routes[name].Chain {
			for _, q := range t.Quotas {
				id := q.Key + "\x00" + q.Source
				i, ok := at[id]
				if !ok {
					i = len(out)
					at[id] = i
					out = append(out, declaredQuota{key: q.Key, source: q.Source,
						limits: router.QuotaUse(&health.MemoryRecords{}, q, time.Time{})})
				}
				if tid := t.ID(); !slices.Contains(out[i].targets, tid) {
					out[i].targets = append(out[i].targets, tid)
				}
			}
		}
	}
	return out, nil
}

// quotaWatches are the quotas qs as report measures them: one per key
// (two sources of one key count the same sends).
func quotaWatches(qs []declaredQuota) []report.QuotaWatch {
	var out []report.QuotaWatch
	seen := map[string]bool{}
	for _, q := range qs {
		if seen[q.key] {
			continue
		}
		seen[q.key] = true
		w := report.QuotaWatch{Key: q.key}
		for _, o := range qs {
			if o.key == q.key {
				for _, t := range o.targets {
					if !slices.Contains(w.Targets, t) {
						w.Targets = append(w.Targets, t)
					}
				}
			}
		}
		out = append(out, w)
	}
	return out
}

// windowNames are report.QuotaPeak's names of the lengths a declared
// window counts over (router.Use.Per).
var windowNames = map[time.Duration]string{time.Minute: "minute", time.Hour: "hour", 24 * time.Hour: "day"}

// printQuotaUse writes each declared limit beside the busiest window of its
// length in the lines read (report.QuotaPeak), and how many sends the
// router skipped for it (Target.QuotaSkips).
func printQuotaUse(w io.Writer, r report.Report, qs []declaredQuota) {
	if len(qs) == 0 {
		return
	}
	fmt.Fprintln(w, "\ndeclared quotas (the busiest window of each limit in these lines, windows placed as the router places them; tokens as billed):")
	for _, q := range qs {
		fmt.Fprintf(w, "  %s (%s)\n", q.source, strings.Join(q.targets, ", "))
		for _, l := range q.limits {
			length, tokens := windowNames[l.Per], l.Tokens
			used, unit, from := 0, "requests", time.Time{}
			for _, p := range r.QuotaPeaks {
				if p.Key == q.key && p.Window == length {
					used, from = p.Requests, p.RequestsStart
					if tokens {
						used, from = int(p.Tokens), p.TokensStart
					}
				}
			}
			if tokens {
				unit = "tokens"
			}
			line := fmt.Sprintf("    %-4s %d %s: busiest %s %d (%.0f%%)", l.Window, l.Limit, unit, length, used, 100*float64(used)/float64(max(l.Limit, 1)))
			if !from.IsZero() {
				line += " from " + from.UTC().Format("2006-01-02 15:04:05")
			}
			if n := quotaSkips(r, q, l.Window); n > 0 {
				line += fmt.Sprintf("; %d send(s) skipped at the limit", n)
			}
			fmt.Fprintln(w, line)
		}
	}
}

// quotaSkips counts the sends the router skipped for window of q, over
// q's targets.
func quotaSkips(r report.Report, q declaredQuota, window string) int {
	n := 0
	for _, t := range r.Targets {
		for _, s := range t.QuotaSkips {
			if s.Source == q.source && s.Window == window && slices.Contains(q.targets, t.Target) {
				n += s.Skips
			}
		}
	}
	return n
}
