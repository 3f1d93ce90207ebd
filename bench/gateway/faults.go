package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// The faults scenario (-faults, on by default; -faults-only runs it
// alone): time to a complete answer when the head of a two-target chain
// is sick and the next candidate is healthy, one fault class at a time,
// beside the healthy path. Each class and stream mode runs on a fresh
// simulate server (in this process, on loopback) and a fresh `detour
// serve` over the route [h/m, n/m]: h carries the fault, n answers at
// once. Requests go one after another; the report gives p50 and p99 of
// the measured ones, who answered, and the sends that reached h while it
// was known to be dry (parked, or its declared quota spent): the goal is
// none.
//
//	healthy       h answers: the reference
//	retry-after   h answers 429 Retry-After: 30 every time
//	remaining-0   h answers 200 with x-ratelimit-remaining-requests: 0 and
//	              a 30 s reset (then 429s, as a real provider would):
//	              the requests after that first answer are measured
//	quota         h declares limits: {rpm: N} and answers (then 429s):
//	              the requests past the N-th are measured
//	503           h answers 503 every time
//	silent        h accepts and never answers: costs header_timeout
//	late          h streams its headers at once, its first token after
//	              20 s (a model not known to reason): costs first_token;
//	              streamed only (a non-streamed answer has no first
//	              token: header_timeout bounds it)

// faultsOptions are the faults scenario's flags.
type faultsOptions struct {
	on, only bool
	// requests is how many requests of each run are measured.
	requests int
	// rpm is h's declared quota in the quota run.
	rpm int
	// retryAfter is the wait h's 429s ask for and the reset its
	// remaining-0 headers name.
	retryAfter time.Duration
	// headerTimeout is the silent run's header_timeout; firstToken the
	// late run's first_token (0: detour's default); late is when h's
	// first token comes.
	headerTimeout, firstToken, late time.Duration
}

// faultsFlags registers the faults scenario's flags on o.
func faultsFlags(o *faultsOptions) {
	flag.BoolVar(&o.on, "faults", true, "run the faults scenario: time to answer with a sick head target and a healthy next one, per fault class (see faults.go)")
	flag.BoolVar(&o.only, "faults-only", false, "run only the faults scenario (about a minute), instead of the benchmark")
	flag.IntVar(&o.requests, "faults-requests", 20, "measured requests per fault class and stream mode, one after another")
	flag.IntVar(&o.rpm, "faults-rpm", 3, "the rpm the head target declares in the faults scenario's quota run")
	flag.DurationVar(&o.retryAfter, "faults-retry-after", 30*time.Second, "Retry-After of the head's 429s and reset of its remaining-0 headers in the faults scenario")
	flag.DurationVar(&o.headerTimeout, "faults-header-timeout", 2*time.Second, "header_timeout of the faults scenario's silent run (detour's default: 30s)")
	flag.DurationVar(&o.firstToken, "faults-first-token", 0, "first_token of the faults scenario's late run (0: detour's default for a model not known to reason, 15s)")
	flag.DurationVar(&o.late, "faults-late", 20*time.Second, "when the head's first token comes in the faults scenario's late run")
}

// The fault classes, in the report's order.
const (
	faultHealthy    = "healthy"
	faultRetryAfter = "retry-after"
	faultRemaining0 = "remaining-0"
	faultQuota      = "quota"
	fault503        = "503"
	faultSilent     = "silent"
	faultLate       = "late"
)

var faultClasses = []string{faultHealthy, faultRetryAfter, faultRemaining0, faultQuota, fault503, faultSilent, faultLate}

// faultRow is one run: a fault class in one stream mode.
type faultRow struct {
	class  string
	stream bool
	// times holds the measured requests' times to a complete answer.
	times Histogram
	// headSends are the sends that reached h, every request counted;
	// dry those that came while h was known to be dry.
	headSends, dry int
	// byHead and byNext count the measured answers by who gave them
	// (x-detour-provider).
	byHead, byNext int
	errs           int
	errSample      string
	wall           time.Duration
}

// faultsResult is the scenario's runs.
type faultsResult struct {
	rows []*faultRow
}

// row returns the run of class in stream mode, or nil.
func (f *faultsResult) row(class string, stream bool) *faultRow {
	for _, r := range f.rows {
		if r.class == class && r.stream == stream {
			return r
		}
	}
	return nil
}

// faultModes returns the stream modes class runs in, of those asked for.
func faultModes(class string, streams []bool) []bool {
	if class != faultLate {
		return streams
	}
	for _, s := range streams {
		if s {
			return []bool{true}
		}
	}
	return nil
}

// prime is how many requests of class come before the measured ones:
// those that tell detour the head is dry.
func (o faultsOptions) prime(class string) int {
	switch class {
	case faultRemaining0:
		return 1
	case faultQuota:
		return o.rpm
	}
	return 0
}

// lateFirstToken is the late run's first-token limit.
func (o faultsOptions) lateFirstToken() time.Duration {
	if o.firstToken > 0 {
		return o.firstToken
	}
	return router.DefaultFirstToken
}

// head returns the sick provider h of class.
func (o faultsOptions) head(class string) simulate.Provider {
	p := simulate.Provider{Name: "h"}
	wall := simulate.Fault{Kind: simulate.RateLimit, RetryAfter: o.retryAfter}
	switch class {
	case faultRetryAfter:
		p.Profile = simulate.Always(wall)
	case faultRemaining0:
		p.Script = []simulate.Fault{{Kind: simulate.OK, Header: http.Header{
			"X-Ratelimit-Limit-Requests": {"30"}, "X-Ratelimit-Remaining-Requests": {"0"},
			"X-Ratelimit-Reset-Requests": {o.retryAfter.String()}}}}
		p.Profile = simulate.Always(wall)
	case faultQuota:
		p.Script = make([]simulate.Fault, o.rpm)
		p.Profile = simulate.Always(simulate.Fault{Kind: simulate.RateLimit, RetryAfter: time.Minute})
	case fault503:
		p.Profile = simulate.Always(simulate.Fault{Kind: simulate.Unavailable})
	case faultSilent:
		p.Profile = simulate.Always(simulate.Fault{Kind: simulate.Hang})
	case faultLate:
		p.Profile = simulate.Always(simulate.Fault{Kind: simulate.LateFirstToken, Delay: o.late})
	}
	return p
}

// limitsText says which limits class ran under, for the report.
func (o faultsOptions) limitsText(class string) string {
	switch class {
	case faultQuota:
		return fmt.Sprintf("`limits: {rpm: %d}` on h", o.rpm)
	case faultSilent:
		return fmt.Sprintf("`header_timeout: %s` (default %s)", o.headerTimeout, router.DefaultHeaderTimeout)
	case faultLate:
		if o.firstToken > 0 {
			return fmt.Sprintf("`first_token: %s` (default %s)", o.firstToken, router.DefaultFirstToken)
		}
		return fmt.Sprintf("first_token %s (the default for a model not known to reason)", router.DefaultFirstToken)
	}
	return "defaults"
}

// faultsConfig is the detour config of a run of class: route faults =
// [h/m, n/m] under the default budget, with the class's limits.
func (b *bench) faultsConfig(sim *simulate.Server, class, tag string) string {
	o := b.opt.faults
	var cfg strings.Builder
	fmt.Fprintf(&cfg, `# generated by bench/gateway: the faults scenario, %s
providers:
  h: {dialect: openai, base_url: %s, key_env: "", pool: free}
  n: {dialect: openai, base_url: %s, key_env: "", pool: local}
`, class, sim.BaseURL("h"), sim.BaseURL("n"))
	if class == faultQuota {
		fmt.Fprintf(&cfg, "targets:\n  \"h/m\": {limits: {rpm: %d}}\n", o.rpm)
	}
	cfg.WriteString("routes:\n  faults:\n    chain: [h/m, n/m]\n")
	switch class {
	case faultSilent:
		fmt.Fprintf(&cfg, "    header_timeout: %s\n", durationYAML(o.headerTimeout))
	case faultLate:
		if o.firstToken > 0 {
			fmt.Fprintf(&cfg, "    first_token: %s\n", durationYAML(o.firstToken))
		}
	}
	cfg.WriteString("gateway:\n  drain_delay: 0s   # stop at once: nothing is in flight when the run ends\n")
	if b.opt.healthStore != "" {
		fmt.Fprintf(&cfg, "health:\n  store: %q\n  namespace: bench-%d-%s\n", b.opt.healthStore, os.Getpid(), tag)
	}
	return cfg.String()
}

// runFaults runs every fault class in each stream mode asked for.
func (b *bench) runFaults() error {
	o := b.opt.faults
	if o.requests < 1 || o.rpm < 1 || o.retryAfter <= 0 || o.headerTimeout <= 0 || o.firstToken < 0 || o.late <= o.lateFirstToken() {
		return fmt.Errorf("faults: -faults-requests and -faults-rpm must be at least 1, -faults-retry-after and " +
			"-faults-header-timeout positive, -faults-late past the first-token limit")
	}
	f := &faultsResult{}
	b.faults = f
	for _, class := range faultClasses {
		for _, stream := range faultModes(class, b.opt.streams) {
			r, err := b.faultRun(class, stream)
			if err != nil {
				return err
			}
			f.rows = append(f.rows, r)
			note := ""
			if r.errs > 0 {
				note = fmt.Sprintf("  ERRORS %d: %s", r.errs, r.errSample)
			}
			b.logf("faults %-11s stream=%-5v %d measured: p50 %s ms, p99 %s ms; %d sends to h, %d dry; answered by h %d, n %d; in %.1fs%s",
				class, stream, r.times.Count(), msFault(r.times.Quantile(0.5)), msFault(r.times.Quantile(0.99)),
				r.headSends, r.dry, r.byHead, r.byNext, r.wall.Seconds(), note)
		}
	}
	return nil
}

// faultRun runs class in one stream mode: a fresh simulate server and
// detour, the priming requests, then the measured ones.
func (b *bench) faultRun(class string, stream bool) (*faultRow, error) {
	o := b.opt.faults
	r := &faultRow{class: class, stream: stream}
	start := time.Now()
	sim, err := simulate.Start(o.head(class), simulate.Provider{Name: "n"})
	if err != nil {
		return nil, err
	}
	defer sim.Close()
	tag := fmt.Sprintf("faults-%s-s%v", class, stream)
	cfg := filepath.Join(b.dir, tag+".yaml")
	if err := os.WriteFile(cfg, []byte(b.faultsConfig(sim, class, tag)), 0o600); err != nil {
		return nil, err
	}
	det, err := startProc("detour serve", filepath.Join(b.dir, tag+".log"), b.bins["detour"], b.serveArgs(cfg, "-")...)
	if err != nil {
		return nil, err
	}
	defer det.stop()
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	body := chatBody("faults", stream, b.opt.promptBytes)
	prime := o.prime(class)
	for i := range prime + o.requests {
		took, by, err := faultSend(client, det.url+"/v1/chat/completions", body, stream)
		if err != nil {
			r.errs++
			if r.errSample == "" {
				r.errSample = err.Error()
			}
			continue
		}
		if i < prime {
			continue
		}
		r.times.Record(took)
		switch by {
		case "h":
			r.byHead++
		case "n":
			r.byNext++
		}
	}
	client.CloseIdleConnections()
	det.stop()
	if r.times.Count() == 0 {
		return nil, fmt.Errorf("faults %s stream=%v: no request answered; detour's stderr:\n%s", class, stream, tail(det.log))
	}
	var arrivals []time.Time
	for _, rec := range sim.Stats().Records {
		if rec.Provider == "h" {
			arrivals = append(arrivals, rec.At)
		}
	}
	r.headSends = len(arrivals)
	r.dry = o.drySends(class, arrivals)
	r.wall = time.Since(start)
	return r, nil
}

// faultSend sends one request and reads its whole answer: the time it
// took and who answered (x-detour-provider, a header or a trailer).
func faultSend(c *http.Client, url string, body []byte, stream bool) (time.Duration, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	done := []byte(`"choices"`)
	if stream {
		req.Header.Set("Accept", "text/event-stream")
		done = []byte("data: [DONE]")
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	switch {
	case err != nil:
		return took, "", fmt.Errorf("body: %w", err)
	case resp.StatusCode != http.StatusOK:
		return took, "", fmt.Errorf("status %d: %.200s", resp.StatusCode, got)
	case !bytes.Contains(got, done):
		return took, "", fmt.Errorf("%w: %.200q", errBadBody, got)
	}
	by := resp.Header.Get("X-Detour-Provider")
	if by == "" { // a stream whose headers went out before its answer (gateway.keepalive): a trailer
		by = resp.Trailer.Get("X-Detour-Provider")
	}
	return took, by, nil
}

// drySends counts the sends to h (arrival times, in order) that came
// while detour could know h was dry, by class:
//
//	retry-after, remaining-0  from a send on, h is parked for the wait its
//	                          answer named (-faults-retry-after); the
//	                          first send after a park is a probe
//	quota                     past the rpm-th send of a minute that
//	                          starts at its first send
//	503, silent, late         every send fails: from the
//	                          failure_threshold-th in a row, h is parked
//	                          for open_for (detour's defaults, 3 and 10s);
//	                          the first send after is a probe, whose
//	                          failure parks it again
//
// A park is counted from the arrival of the send that caused it, a little
// before detour saw its failure (for a silent target, header_timeout
// before): so a send is never called dry too early.
func (o faultsOptions) drySends(class string, arrivals []time.Time) int {
	switch class {
	case faultRetryAfter, faultRemaining0:
		return parkedSends(arrivals, 1, o.retryAfter)
	case faultQuota:
		return quotaSends(arrivals, o.rpm, time.Minute)
	case fault503, faultSilent, faultLate:
		return parkedSends(arrivals, health.DefaultFailureThreshold, health.DefaultOpenFor)
	}
	return 0
}

// parkedSends counts the arrivals at a target that fails every send and
// is parked for park after threshold failures in a row (1: at once), and
// again for park after each failed probe: those that came while it was
// parked.
func parkedSends(arrivals []time.Time, threshold int, park time.Duration) int {
	var dry, fails int
	var until time.Time
	for _, a := range arrivals {
		switch {
		case !until.IsZero() && a.Before(until):
			dry++
		case !until.IsZero(): // a probe; it fails
			until = a.Add(park)
		default:
			if fails++; fails >= threshold {
				until = a.Add(park)
			}
		}
	}
	return dry
}

// quotaSends counts the arrivals past the n-th of a window of length per
// that starts at the first arrival it holds.
func quotaSends(arrivals []time.Time, n int, per time.Duration) int {
	var dry, used int
	var start time.Time
	for _, a := range arrivals {
		if start.IsZero() || !a.Before(start.Add(per)) {
			start, used = a, 0
		}
		if used++; used > n {
			dry++
		}
	}
	return dry
}

// faultGoal returns the most p99 may be for class in stream mode, and the
// goal's words: the healthy path's p99 plus 1 s for a fault detour can
// move past at once, the target's own limit plus 1 s for one it must wait
// out; 0 for the healthy path itself.
func (b *bench) faultGoal(class string, stream bool) (time.Duration, string) {
	o := b.opt.faults
	switch class {
	case faultHealthy:
		return 0, "reference"
	case faultSilent:
		return o.headerTimeout + time.Second, fmt.Sprintf("≤ header_timeout + 1 s = %.1f s", (o.headerTimeout + time.Second).Seconds())
	case faultLate:
		return o.lateFirstToken() + time.Second, fmt.Sprintf("≤ first_token + 1 s = %.1f s", (o.lateFirstToken() + time.Second).Seconds())
	}
	var healthy time.Duration
	if h := b.faults.row(faultHealthy, stream); h != nil {
		healthy = h.times.Quantile(0.99)
	}
	return healthy + time.Second, fmt.Sprintf("≤ healthy + 1 s = %.1f s", (healthy + time.Second).Seconds())
}

// faultMet judges a run: no error, no dry send, p99 within its goal.
func (b *bench) faultMet(r *faultRow) string {
	limit, _ := b.faultGoal(r.class, r.stream)
	ok := r.errs == 0 && r.dry == 0 && r.times.Count() > 0 && (limit == 0 || r.times.Quantile(0.99) <= limit)
	return yesNo(ok)
}

// faultName is the report's words for class.
func (o faultsOptions) faultName(class string) string {
	switch class {
	case faultHealthy:
		return "healthy path: h answers"
	case faultRetryAfter:
		return fmt.Sprintf("long Retry-After: h answers 429 `Retry-After: %d` every time", int(o.retryAfter.Seconds()))
	case faultRemaining0:
		return fmt.Sprintf("remaining 0: h answers 200 with `x-ratelimit-remaining-requests: 0`, `x-ratelimit-reset-requests: %s` "+
			"(then 429s); the requests after it", o.retryAfter)
	case faultQuota:
		return fmt.Sprintf("declared quota spent: h answers (then 429s); the requests past the first %d", o.rpm)
	case fault503:
		return "503 every time"
	case faultSilent:
		return "silent target: h accepts, never answers"
	case faultLate:
		return fmt.Sprintf("first token late: h streams its first token after %s (a model not known to reason)", o.late)
	}
	return class
}

// msFault writes d in ms with one decimal.
func msFault(d time.Duration) string {
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
}

// reportFaults writes the faults scenario's table.
func (b *bench) reportFaults(p func(string, ...any)) {
	f := b.faults
	if f == nil || len(f.rows) == 0 {
		return
	}
	o := b.opt.faults
	p("### Time to answer under faults\n\n")
	p("Route `faults` = [h/m, n/m] under detour's defaults (interactive budget: `max_retry_wait` 5 s, 2 sends a target; "+
		"health: %d failures in a row park a target for %s) unless the row says otherwise; h carries the fault, n answers "+
		"at once. Each row is a fresh `simulate` server (answering at once) and a fresh `detour serve` (ledger off); %d "+
		"measured requests one after another, OpenAI chat completions, time to a complete answer (the whole body; a "+
		"stream to `data: [DONE]`). Dry sends: sends that reached h while it was known to be dry (parked by a Retry-After, "+
		"a reset or its breaker, or its declared quota spent), from the simulator's log; the goal is 0.\n\n",
		health.DefaultFailureThreshold, health.DefaultOpenFor, o.requests)
	p("| fault on h | stream | limits | measured | p50 ms | p99 ms | sends to h | dry sends | answered by h / n | errors | goal (p99) | |\n")
	p("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, r := range f.rows {
		_, goal := b.faultGoal(r.class, r.stream)
		p("| %s | %v | %s | %d | %s | %s | %d | %d | %d / %d | %d | %s | %s |\n", o.faultName(r.class), r.stream,
			o.limitsText(r.class), r.times.Count(), msFault(r.times.Quantile(0.5)), msFault(r.times.Quantile(0.99)),
			r.headSends, r.dry, r.byHead, r.byNext, r.errs, goal, b.faultMet(r))
	}
	p("\nSends to h count every request, the priming ones included (remaining 0: the first; quota: the first %d). "+
		"A silent or late h fails each send at its limit until its breaker opens, so the first %d requests pay the limit "+
		"and the rest skip h: p99 is what one of those costs, p50 what the others do. The late row runs streamed only: "+
		"a non-streamed request has no first token (header_timeout bounds it).\n\n", o.rpm, health.DefaultFailureThreshold)
	for _, r := range f.rows {
		if r.errs > 0 {
			p("- %s, stream=%v: %d errors, first: %s\n", r.class, r.stream, r.errs, r.errSample)
		}
	}
}

// runFaultsOnly runs the faults scenario alone (-faults-only) and prints
// its report.
func (b *bench) runFaultsOnly() error {
	if err := b.runFaults(); err != nil {
		return err
	}
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("## detour gateway benchmark: time to answer under faults\n\n")
	p("- machine: %s; load average (1, 5, 15 min) %s at the start, %s at the end\n", machine(), b.loadStart, loadAvg())
	p("- command: `go run ./bench/gateway %s`\n\n", strings.Join(flagArgs(), " "))
	b.reportFaults(p)
	fmt.Print(w.String())
	if b.opt.out != "" {
		if err := os.WriteFile(b.opt.out, []byte(w.String()), 0o644); err != nil {
			return err
		}
		b.logf("report written to %s", b.opt.out)
	}
	return nil
}
