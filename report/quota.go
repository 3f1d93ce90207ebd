package report

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/ledger"
)

// QuotaWatch is one declared quota a report measures use against: its
// key (router.Quota.Key, shared by every target that counts toward it)
// and the targets ("provider/model") whose sends count.
type QuotaWatch struct {
	Key     string
	Targets []string
}

// QuotaPeak is the busiest window of one declared quota in the lines
// read. Windows are placed as the router places them: one begins at the
// first send after the last ended, and lasts its length (a minute, an
// hour, a day), so a clock minute split over two windows is never counted
// as one.
type QuotaPeak struct {
	// Key is the quota's (router.Quota.Key).
	Key string `json:"key"`
	// Window is "minute", "hour" or "day".
	Window string `json:"window"`
	// Requests is the most sends in one window, from RequestsStart.
	Requests      int       `json:"requests"`
	RequestsStart time.Time `json:"requests_start"`
	// Tokens is the most billed tokens (in and out) in one window, from
	// TokensStart. The router counts a send's tokens by estimate while it
	// runs, then by its bill, so this is at most what it counted.
	Tokens      int64     `json:"tokens"`
	TokensStart time.Time `json:"tokens_start,omitzero"`
}

// QuotaSkip is what skipped_quota lines say of one declared limit of a
// target: the router's own count when it skipped a send for it.
type QuotaSkip struct {
	// Source is where the limit was declared ("targets.p/m.limits").
	Source string `json:"source"`
	// Window is the limit's name ("rpm", "tpd").
	Window string `json:"window"`
	// Unit is "requests" or "tokens".
	Unit string `json:"unit"`
	// Limit is the declared limit, Used the most the router counted.
	Limit int `json:"limit"`
	Used  int `json:"used"`
	// Skips counts the sends skipped for it.
	Skips int `json:"skips"`
}

// quotaWindows are the lengths a declared quota counts over.
var quotaWindows = [...]struct {
	name string
	d    time.Duration
}{{"minute", time.Minute}, {"hour", time.Hour}, {"day", 24 * time.Hour}}

// quotaTrack follows one watched quota's windows.
type quotaTrack struct {
	key string
	w   [len(quotaWindows)]windowTrack
}

// windowTrack is the running window of one length and the busiest so far.
type windowTrack struct {
	start     time.Time
	requests  int
	tokens    int64
	bestReq   int
	bestReqAt time.Time
	bestTok   int64
	bestTokAt time.Time
}

func (w *windowTrack) close() {
	if w.requests > w.bestReq {
		w.bestReq, w.bestReqAt = w.requests, w.start
	}
	if w.tokens > w.bestTok {
		w.bestTok, w.bestTokAt = w.tokens, w.start
	}
}

// add counts one send at t of tok billed tokens. A send earlier than the
// running window (lines out of order) counts in it: windows are placed
// as well as the order allows.
func (w *windowTrack) add(t time.Time, d time.Duration, tok int64) {
	if w.start.IsZero() || !t.Before(w.start.Add(d)) {
		if !w.start.IsZero() {
			w.close()
		}
		w.start, w.requests, w.tokens = t, 0, 0
	}
	w.requests++
	w.tokens += tok
}

// WatchQuotas makes s measure use against each of ws (see QuotaPeak).
// Call it before the first line.
func (s *Summary) WatchQuotas(ws []QuotaWatch) {
	s.quotaOf = map[string][]*quotaTrack{}
	for _, q := range ws {
		tr := &quotaTrack{key: q.Key}
		s.quotas = append(s.quotas, tr)
		for _, t := range q.Targets {
			s.quotaOf[t] = append(s.quotaOf[t], tr)
		}
	}
}

// addQuotaUse counts rec, when it is a send, in the quotas it counts
// toward.
func (s *Summary) addQuotaUse(rec *ledger.Record) {
	st := rec.Status
	if strings.HasPrefix(st, "skipped_") || strings.HasPrefix(st, "probe_") || st == ledger.StatusLastResort {
		return
	}
	trs := s.quotaOf[rec.Provider+"/"+rec.Model]
	tok := int64(rec.TokensIn) + int64(rec.TokensOut)
	for _, tr := range trs {
		for i := range tr.w {
			tr.w[i].add(rec.Time, quotaWindows[i].d, tok)
		}
	}
}

// quotaPeaks returns the busiest window of each watched quota, in the
// order watched.
func (s *Summary) quotaPeaks() []QuotaPeak {
	out := []QuotaPeak{}
	for _, tr := range s.quotas {
		for i, w := range tr.w {
			w.close()
			if w.bestReq == 0 {
				continue
			}
			out = append(out, QuotaPeak{Key: tr.key, Window: quotaWindows[i].name,
				Requests: w.bestReq, RequestsStart: w.bestReqAt.UTC(), Tokens: w.bestTok, TokensStart: w.bestTokAt.UTC()})
		}
	}
	return out
}

// quotaReason reads the router's reason of a skip for a declared limit
// (router/quota.go spentWhy): "SOURCE WINDOW USED of LIMIT UNIT used".
var quotaReason = regexp.MustCompile(`^(\S+) ([rt]p[mhd]) (\d+) of (\d+) (requests|tokens) used`)

// noteQuotaSkip counts a skipped_quota line against the limit it names;
// one for a provider's headers (no declared limit) is not counted here.
func (t *targetAcc) noteQuotaSkip(reason string) {
	m := quotaReason.FindStringSubmatch(reason)
	if m == nil {
		return
	}
	used, err1 := strconv.Atoi(m[3])
	limit, err2 := strconv.Atoi(m[4])
	if err1 != nil || err2 != nil {
		return
	}
	i := slices.IndexFunc(t.quotaSkips, func(q QuotaSkip) bool { return q.Source == m[1] && q.Window == m[2] })
	if i < 0 {
		t.quotaSkips = append(t.quotaSkips, QuotaSkip{Source: m[1], Window: m[2], Unit: m[5], Limit: limit})
		i = len(t.quotaSkips) - 1
	}
	q := &t.quotaSkips[i]
	q.Skips++
	q.Used = max(q.Used, used)
	q.Limit = limit // the latest declared, should a reload change it
}
