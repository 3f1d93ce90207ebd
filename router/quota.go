package router

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/detourhq/detour/fit"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
)

// A wall seen coming costs no failed call. The router sees it two ways,
// both shared through the health store like any park:
//
//   - what a provider's rate-limit headers said on its last answer
//     (llm.RateLimit, success or failure): nothing left parks the target
//     until the reset they name (heed); fewer tokens left than a request
//     needs skips it for that request (skipped_quota);
//   - the quotas a config declares (Target.Quotas): detour counts its own
//     sends and tokens per window in the health store's records, where
//     every process and replica adds to one count, and skips a target
//     whose window is spent (skipped_quota) rather than send a request
//     that must fail.

// Limits are declared quotas: the most requests and tokens in a minute,
// an hour and a day. A zero field is no limit.
type Limits struct {
	RPM, RPH, RPD int
	TPM, TPH, TPD int
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// Quota is one declared set of limits and the counter it is kept under.
type Quota struct {
	// Key names the count: a target's own ("provider/model"), its
	// account's ("account:NAME": every target billed to the key adds to
	// it), or a pool a provider keeps apart (OpenRouter's free models).
	Key string
	// Source names where it was declared, for reasons: "targets.p/m.limits",
	// "providers.NAME.limits", or the preset and the page it comes from.
	Source string
	Limits
}

// A window of a quota: its name as the config writes it, its length,
// whether it counts tokens (else requests), and its limit. A window
// starts at the first send it counts and lasts per: providers that
// refill a token bucket are full again by then (Cerebras documents one),
// and a burst is never split across two windows. A provider whose own
// windows sit on the clock (Gemini's day ends at midnight Pacific) may
// still see up to twice the limit across its boundary.
type window struct {
	name   string
	per    time.Duration
	tokens bool
	limit  int
}

// windows returns l's windows that are set, minute first.
func (l Limits) windows() []window {
	all := [...]window{{"rpm", time.Minute, false, l.RPM}, {"rph", time.Hour, false, l.RPH}, {"rpd", 24 * time.Hour, false, l.RPD},
		{"tpm", time.Minute, true, l.TPM}, {"tph", time.Hour, true, l.TPH}, {"tpd", 24 * time.Hour, true, l.TPD}}
	out := make([]window, 0, len(all))
	for _, w := range all {
		if w.limit > 0 {
			out = append(out, w)
		}
	}
	return out
}

// windowSlack keeps a window's count a little past its end, so that a
// send counted as the window ends still finds it.
const windowSlack = time.Minute

// startKey is the records key of the start of q's window w: it holds the
// start (Unix nanoseconds) and expires with the window.
func startKey(q Quota, w window) string { return "quota:" + q.Key + ":" + w.name }

// countKey is the records key of the count of q's window w that started
// at start.
func countKey(q Quota, w window, start int64) string {
	return startKey(q, w) + ":" + strconv.FormatInt(start, 10)
}

// Use is what is used of one window of a quota at a time.
type Use struct {
	// Key and Source are the quota's; Window its window ("rpm", "tpd").
	Key, Source, Window string
	// Used is what its window counted, Limit what it allows.
	Used, Limit int
	// Frees is when the window ends; zero when none is running.
	Frees time.Time
	// Per is the window's length; Tokens is set when it counts tokens,
	// not requests.
	Per    time.Duration
	Tokens bool
}

// QuotaUse reads, changing nothing, what is used of each window of q at
// now in rec (the health store's records: Breaker.RecordsOf, or the
// process's own); a store that cannot be read reads as nothing used. For
// `detour check`.
func QuotaUse(rec health.Records, q Quota, now time.Time) []Use {
	var out []Use
	for _, w := range q.windows() {
		used, frees := readWindow(rec, q, w, now)
		out = append(out, Use{Key: q.Key, Source: q.Source, Window: w.name, Used: used, Limit: w.limit, Frees: frees,
			Per: w.per, Tokens: w.tokens})
	}
	return out
}

// readWindow returns what q's window w counted at now and when it ends;
// 0 and a zero time when no window is running.
func readWindow(rec health.Records, q Quota, w window, now time.Time) (used int, frees time.Time) {
	b, ok, err := rec.Get(startKey(q, w))
	if err != nil || !ok {
		return 0, time.Time{}
	}
	start, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, time.Time{}
	}
	frees = time.Unix(0, start).Add(w.per)
	if !now.Before(frees) {
		return 0, time.Time{}
	}
	if b, ok, err = rec.Get(countKey(q, w, start)); err == nil && ok {
		if f, err := strconv.ParseFloat(string(b), 64); err == nil {
			used = int(f)
		}
	}
	return used, frees
}

// spentWhy is the reason of a skip for q's window w, which counted used
// of its limit and cannot take need more before frees.
func spentWhy(q Quota, w window, used, need int, frees, now time.Time) string {
	what := "requests"
	if w.tokens {
		what = "tokens"
	}
	why := fmt.Sprintf("%s %s %d of %d %s used", q.Source, w.name, used, w.limit, what)
	if w.tokens {
		why += fmt.Sprintf(", this request needs about %d", need)
	}
	return why + ", frees at " + untilText(frees, now)
}

// need is what a send of req to t counts in a window: one request, or
// its tokens by estimate (fit.Estimate of its input plus its max_tokens).
func need(req *llm.Request, t *Target, tokens bool) int {
	if !tokens {
		return 1
	}
	if req == nil {
		return 0
	}
	in, _ := fit.Estimate(req, t.ModelFamily())
	return in + max(req.MaxTokens, 0)
}

// quotaVerdict says, reading only, whether t may take a send of req at
// now as far as quotas go: what the provider's headers said of the
// tokens left, then each declared window. Its status is "" when it may.
func (w *walk) quotaVerdict(t *Target, req *llm.Request, now time.Time) verdict {
	if v := w.tokensLeft(t, req, now); v.status != "" {
		return v
	}
	rec := w.r.records()
	for _, q := range t.Quotas {
		for _, win := range q.windows() {
			n := need(req, t, win.tokens)
			if used, frees := readWindow(rec, q, win, now); used+n > win.limit {
				if frees.IsZero() {
					// A request larger than the window allows: it never fits.
					return verdict{status: ledger.StatusSkippedQuota, reason: fmt.Sprintf("%s %s allows %d tokens, this request needs about %d",
						q.Source, win.name, win.limit, n)}
				}
				return verdict{status: ledger.StatusSkippedQuota, reason: spentWhy(q, win, used, n, frees, now), frees: frees}
			}
		}
	}
	return verdict{}
}

// admitQuota is quotaVerdict's check made for a send: what the headers
// said, then the declared windows, each counting the send (takeQuota).
func (w *walk) admitQuota(t *Target, req *llm.Request, now time.Time) (verdict, *taken) {
	if v := w.tokensLeft(t, req, now); v.status != "" {
		return v, nil
	}
	return w.takeQuota(t, req, now)
}

// taken is what a send took of its target's quotas: the token counts it
// reserved, to be set right to what it used (walk.used).
type taken struct {
	counts []takenCount
}

// takenCount is one token window's count and what the send reserved of it.
type takenCount struct {
	key      string
	reserved int
	ttl      time.Duration
}

// takeQuota counts a send of req to t at now in each of its declared
// windows, in one atomic step per window shared by every process (a
// window starts with its first send: Claim; its count is an Add). When a
// window cannot take it, what was taken is handed back and the verdict
// is the skip. A store that cannot be written lets the send go: quotas
// are advisory, like health.
func (w *walk) takeQuota(t *Target, req *llm.Request, now time.Time) (verdict, *taken) {
	if len(t.Quotas) == 0 {
		return verdict{}, nil
	}
	rec := w.r.records()
	tk := &taken{}
	var undo []takenCount
	giveBack := func() {
		for _, c := range undo {
			_, _ = rec.Add(c.key, -float64(c.reserved), c.ttl)
		}
	}
	for _, q := range t.Quotas {
		for _, win := range q.windows() {
			n := need(req, t, win.tokens)
			held, claimed, err := rec.Claim(startKey(q, win), []byte(strconv.FormatInt(now.UnixNano(), 10)), win.per)
			if err != nil {
				continue
			}
			start := now.UnixNano()
			if !claimed {
				if start, err = strconv.ParseInt(string(held), 10, 64); err != nil {
					continue
				}
			}
			c := takenCount{key: countKey(q, win, start), reserved: n, ttl: win.per + windowSlack}
			sum, err := rec.Add(c.key, float64(n), c.ttl)
			if err != nil {
				continue
			}
			if int(sum) > win.limit {
				_, _ = rec.Add(c.key, -float64(n), c.ttl)
				giveBack()
				frees := time.Unix(0, start).Add(win.per)
				return verdict{status: ledger.StatusSkippedQuota, reason: spentWhy(q, win, int(sum)-n, n, frees, now), frees: frees}, nil
			}
			undo = append(undo, c)
			if win.tokens {
				tk.counts = append(tk.counts, c)
			}
		}
	}
	return verdict{}, tk
}

// used sets the token counts a send took (p.quota) and the spend it held
// (p.spend) right to u, what it really used: a failed send that billed
// nothing gives its reservations back. Once per send.
func (w *walk) used(p permits, u llm.Usage) {
	w.settleSpend(p.spend, u)
	if p.busy != "" {
		_, _ = w.r.records().Add(p.busy, -1, busyTTL) // a lost add reads as busy until busyTTL
	}
	if p.quota == nil {
		return
	}
	rec := w.r.records()
	total := u.InputTokens + u.OutputTokens
	for _, c := range p.quota.counts {
		if d := total - c.reserved; d != 0 {
			_, _ = rec.Add(c.key, float64(d), c.ttl) // a lost add miscounts one send
		}
	}
	p.quota.counts = nil
}

// leftKey is the records key of what t's provider last said of the tokens
// left for t: "<tokens> <Unix ns of the reset>", until the reset.
func leftKey(id string) string { return "ratelimit:" + id }

// heed acts on what t's provider said of its rate limits at now, on an
// answer or a failure: no requests or no tokens left parks t (its
// account, when its headers count the key) as a wall seen coming, until
// the later reset they name; tokens left are kept until their reset, for
// the next requests to weigh (tokensLeft). A reset not named (or 0)
// parks nothing: the provider's own answer will say.
func (w *walk) heed(t *Target, rl *llm.RateLimit, now time.Time) {
	if rl == nil {
		return
	}
	var until time.Time
	var why []string
	if rl.RemainingRequests == 0 && rl.ResetRequests > 0 {
		until = now.Add(rl.ResetRequests)
		why = append(why, headerName(t, false)+": 0")
	}
	if rl.RemainingTokens == 0 && rl.ResetTokens > 0 {
		until = later(until, now.Add(rl.ResetTokens))
		why = append(why, headerName(t, true)+": 0")
	}
	if !until.IsZero() {
		key := t.ID()
		if t.KeyRateLimits {
			key = t.AccountKey()
		}
		w.r.health().Wall(key, until, strings.Join(why, ", "), now)
	}
	id := t.ID()
	if t.KeyRateLimits {
		id = t.AccountKey()
	}
	if rl.RemainingTokens >= 0 && rl.ResetTokens > 0 {
		v := strconv.Itoa(rl.RemainingTokens) + " " + strconv.FormatInt(now.Add(rl.ResetTokens).UnixNano(), 10)
		_ = w.r.records().Put(leftKey(id), []byte(v), rl.ResetTokens)
	}
}

// tokensLeft is the skip of t for req at now when its provider's last
// word was that fewer tokens are left than req needs; "" status when
// not, or when nothing is known.
func (w *walk) tokensLeft(t *Target, req *llm.Request, now time.Time) verdict {
	id := t.ID()
	if t.KeyRateLimits {
		id = t.AccountKey()
	}
	b, ok, err := w.r.records().Get(leftKey(id))
	if err != nil || !ok {
		return verdict{}
	}
	left, reset, ok := strings.Cut(string(b), " ")
	n, err1 := strconv.Atoi(left)
	ns, err2 := strconv.ParseInt(reset, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return verdict{}
	}
	frees := time.Unix(0, ns)
	if !now.Before(frees) {
		return verdict{}
	}
	if need := need(req, t, true); n < need {
		return verdict{status: ledger.StatusSkippedQuota, frees: frees,
			reason: fmt.Sprintf("%s: %d, this request needs about %d, until %s", headerName(t, true), n, need, untilText(frees, now))}
	}
	return verdict{}
}

// headerName is the header that says what is left of t's requests (or
// tokens), as its dialect writes it.
func headerName(t *Target, tokens bool) string {
	what := "requests"
	if tokens {
		what = "tokens"
	}
	if t.Dialect == "anthropic" {
		return "anthropic-ratelimit-" + what + "-remaining"
	}
	return "x-ratelimit-remaining-" + what
}

// later returns the later of a and b, a zero time standing for none.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
