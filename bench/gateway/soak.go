package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detourhq/detour/simulate"
)

// The soak (-soak DURATION, `make soak`): one `detour serve` under mixed
// traffic for DURATION, every store a client grows filled to the ceilings
// configured for it, its resident memory sampled all along. The traffic,
// from -soak-conns clients in three equal groups:
//
//	idempotency  plain answers, each with a new Idempotency-Key (one in
//	             ten repeats the client's previous key and body: a replay,
//	             or a fresh send once that key was evicted)
//	cache        plain answers on a route with cache_answers, each to a
//	             new prompt, so each keeps a new answer
//	buffered     streams on a buffered route, more at once than
//	             buffered_max_bytes holds
//
// The upstream (in this process) answers with -soak-answer bytes of text,
// the buffered streams in pieces -soak-gap apart. The ceilings are small
// (the -soak-* flags) so that they fill within the first minutes: what
// follows is the steady state a gateway reaches at any ceiling, only
// sooner. After the first half (the warm-up), the slope of VmRSS over the
// second half (least squares) must stay under -soak-max-slope, and no
// request may fail: else the command exits non-zero.
//
// The threshold: the stores are full after warm-up, so a process without
// a leak only wanders with the garbage collector's cycles (a few MiB up
// and down, which a fit over 150 samples flattens). 256 KiB/min is 360
// MiB a day, a gateway that would not run for a month; at this soak's
// rate (over 1,000 requests a second on 2 cores) it is a leak of a few
// bytes per request, so any store left without a ceiling (8 KiB and more
// per request) passes it many times over.

// soakOptions are the soak's flags.
type soakOptions struct {
	duration time.Duration
	conns    int
	answer   int
	gap      time.Duration
	every    time.Duration
	maxSlope float64 // KiB/min
	// The ceilings of the soak's config.
	idemRecords, cacheAnswers          int
	idemBytes, cacheBytes, bufferedMax string
}

// soakFlags registers the soak's flags on o.
func soakFlags(o *soakOptions) {
	flag.DurationVar(&o.duration, "soak", 0, "run the soak for this long instead of the benchmark (see soak.go; `make soak`: 10m)")
	flag.IntVar(&o.conns, "soak-conns", 24, "soak clients, a third for each kind of traffic")
	flag.IntVar(&o.answer, "soak-answer", 8<<10, "bytes of each upstream answer's text in the soak")
	flag.DurationVar(&o.gap, "soak-gap", time.Millisecond, "time between the pieces of a buffered stream in the soak")
	flag.DurationVar(&o.every, "soak-sample", 2*time.Second, "time between two readings of detour's VmRSS in the soak")
	flag.Float64Var(&o.maxSlope, "soak-max-slope", 256, "KiB/min: the most VmRSS may grow after the warm-up, fitted over the soak's second half")
	flag.IntVar(&o.idemRecords, "soak-idempotency-records", 2000, "gateway.idempotency_max_records of the soak")
	flag.StringVar(&o.idemBytes, "soak-idempotency-bytes", "8MiB", "gateway.idempotency_max_bytes of the soak")
	flag.IntVar(&o.cacheAnswers, "soak-cache-answers", 1000, "gateway.cache_max_answers of the soak")
	flag.StringVar(&o.cacheBytes, "soak-cache-bytes", "4MiB", "gateway.cache_max_bytes of the soak")
	flag.StringVar(&o.bufferedMax, "soak-buffered-bytes", "1MiB", "gateway.buffered_max_bytes of the soak")
}

// soakKinds are the soak's kinds of traffic, in the order clients are
// given them.
var soakKinds = []string{"idempotency", "cache", "buffered"}

// soakRun is one soak's counts, safe for concurrent use.
type soakRun struct {
	requests, errors sync.Map // kind -> *atomic.Int64
	firstErr         atomic.Pointer[string]
	replayed         atomic.Int64
}

func (r *soakRun) count(m *sync.Map, kind string) {
	v, _ := m.LoadOrStore(kind, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func (r *soakRun) fail(kind, what string) {
	r.count(&r.errors, kind)
	msg := kind + ": " + what
	r.firstErr.CompareAndSwap(nil, &msg)
}

func total(m *sync.Map, kind string) int64 {
	if v, ok := m.Load(kind); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// runSoak runs the soak with detour built in b.dir and reports; it
// returns an error when a request failed or VmRSS grew past the slope.
func (b *bench) runSoak() error {
	o := b.opt.soak
	text := strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit. ", o.answer/57+1)[:o.answer]
	answer := func(simulate.Question) simulate.Reply { return simulate.Reply{Text: text} }
	sim, err := simulate.NewServer(
		simulate.Provider{Name: "big", Answer: answer},
		simulate.Provider{Name: "bigslow", Answer: answer, Profile: simulate.Always(simulate.Fault{Kind: simulate.OK, Gap: o.gap})},
	)
	if err != nil {
		return err
	}
	defer sim.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	up := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go up.Serve(ln) //nolint:errcheck // ends with Close
	defer up.Close()
	cfg := filepath.Join(b.dir, "soak.yaml")
	if err := os.WriteFile(cfg, []byte(soakConfig("http://"+ln.Addr().String(), o)), 0o600); err != nil {
		return err
	}
	d, err := startProc("detour", filepath.Join(b.dir, "detour-soak.log"), b.bins["detour"], b.serveArgs(cfg, "-")...)
	if err != nil {
		return err
	}
	defer d.stop()
	b.logf("soak: detour serve pid %d at %s for %s, %d clients; upstream answers %d bytes", d.pid, d.url, o.duration, o.conns, o.answer)

	run := &soakRun{}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.conns, MaxConnsPerHost: o.conns}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range o.conns {
		kind := soakKinds[i%len(soakKinds)]
		wg.Go(func() { soakClient(client, d.url, kind, i, run, stop) })
	}
	samples := b.sampleSoak(strconv.Itoa(d.pid), o, d.done)
	close(stop)
	wg.Wait()
	metrics := soakMetrics(client, d.url)
	if d.exited() {
		return fmt.Errorf("detour serve exited during the soak; its stderr:\n%s", tail(d.log))
	}
	rep := soakReport(o, samples, run, metrics)
	fmt.Print(rep.text)
	if b.opt.out != "" {
		if err := os.WriteFile(b.opt.out, []byte(rep.text), 0o644); err != nil {
			return err
		}
	}
	return rep.err
}

// soakConfig is the soak's detour config: its three routes and ceilings.
func soakConfig(upURL string, o soakOptions) string {
	return fmt.Sprintf(`# generated by bench/gateway -soak
providers:
  big:     {dialect: openai, base_url: %[1]s/big/v1, key_env: "", pool: local}
  bigslow: {dialect: openai, base_url: %[1]s/bigslow/v1, key_env: "", pool: local}
routes:
  soak-idem:
    chain: [big/m]
  soak-cache:
    chain: [big/m]
    cache_answers: 1h
  soak-buf:
    chain: [bigslow/m]
    buffered: true
gateway:
  idempotency_max_records: %[2]d
  idempotency_max_bytes: %[3]s
  cache_max_answers: %[4]d
  cache_max_bytes: %[5]s
  buffered_max_bytes: %[6]s
`, upURL, o.idemRecords, o.idemBytes, o.cacheAnswers, o.cacheBytes, o.bufferedMax)
}

// soakClient sends requests of kind until stop, one at a time, counting
// each and each failure in run.
func soakClient(c *http.Client, base, kind string, id int, run *soakRun, stop <-chan struct{}) {
	var prevKey string
	var prevBody []byte
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		route, stream, key := "soak-idem", false, ""
		body := soakBody(route, fmt.Sprintf("client %d request %d", id, n), false)
		switch kind {
		case "idempotency":
			key = fmt.Sprintf("soak-%d-%d", id, n)
			if n%10 == 9 && prevKey != "" {
				key, body = prevKey, prevBody
			}
			prevKey, prevBody = key, body
		case "cache":
			route = "soak-cache"
			body = soakBody(route, fmt.Sprintf("client %d request %d", id, n), false)
		case "buffered":
			route, stream = "soak-buf", true
			body = soakBody(route, "a buffered stream", true)
		}
		run.count(&run.requests, kind)
		if err := soakSend(c, base, body, key, stream, run); err != nil {
			run.fail(kind, err.Error())
		}
	}
}

// soakBody is a chat request to route whose user message is text.
func soakBody(route, text string, stream bool) []byte {
	return fmt.Appendf(nil, `{"model":%q,"stream":%v,"max_tokens":4096,"messages":[{"role":"user","content":%q}]}`, route, stream, text)
}

// soakSend posts body and checks the answer is whole: a 200 ending in
// [DONE] for a stream, a 200 with choices otherwise.
func soakSend(c *http.Client, base string, body []byte, key string, stream bool, run *soakRun) error {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return fmt.Errorf("reading the answer: %w", err)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, got)
	case stream && !bytes.HasSuffix(bytes.TrimSpace(got), []byte("data: [DONE]")):
		return fmt.Errorf("a stream ended without [DONE]: ...%.200s", got[max(0, len(got)-200):])
	case !stream && !bytes.Contains(got, []byte(`"choices"`)):
		return fmt.Errorf("an answer without choices: %.200s", got)
	}
	if resp.Header.Get("Idempotent-Replayed") == "true" {
		run.replayed.Add(1)
	}
	return nil
}

// rssSample is one reading of VmRSS.
type rssSample struct {
	at  time.Duration // since the soak began
	rss int64         // bytes
}

// sampleSoak reads pid's VmRSS every o.every for o.duration (or until
// the process exits) and returns the readings.
func (b *bench) sampleSoak(pid string, o soakOptions, exited <-chan struct{}) []rssSample {
	start := time.Now()
	var out []rssSample
	t := time.NewTicker(o.every)
	defer t.Stop()
	next := time.Minute
	for {
		if rss, _, err := memory(pid); err == nil {
			out = append(out, rssSample{at: time.Since(start), rss: rss})
		}
		if el := time.Since(start); el >= next {
			b.logf("soak: %s of %s, VmRSS %.1f MiB", el.Round(time.Second), o.duration, mib(out[len(out)-1].rss))
			next += time.Minute
		}
		if time.Since(start) >= o.duration {
			return out
		}
		select {
		case <-exited:
			return out
		case <-t.C:
		}
	}
}

// soakMetrics reads detour's /metrics (open: a gateway without client
// keys on loopback) as "name{labels}" -> value.
func soakMetrics(c *http.Client, base string) map[string]float64 {
	out := map[string]float64{}
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				out[line[:i]] = v
			}
		}
	}
	return out
}

// slopeKiBPerMin fits rss = a + b*t by least squares over samples and
// returns b in KiB per minute (0 for fewer than two samples).
func slopeKiBPerMin(samples []rssSample) float64 {
	n := float64(len(samples))
	if n < 2 {
		return 0
	}
	var st, sr float64
	for _, s := range samples {
		st += s.at.Minutes()
		sr += float64(s.rss) / 1024
	}
	mt, mr := st/n, sr/n
	var num, den float64
	for _, s := range samples {
		dt := s.at.Minutes() - mt
		num += dt * (float64(s.rss)/1024 - mr)
		den += dt * dt
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// soakResult is the soak's report and its verdict.
type soakResult struct {
	text string
	err  error
}

// soakReport writes the soak's markdown report and judges it.
func soakReport(o soakOptions, samples []rssSample, run *soakRun, m map[string]float64) soakResult {
	var w strings.Builder
	fmt.Fprintf(&w, "## Soak: %s of mixed traffic at the configured ceilings\n\n", o.duration)
	fmt.Fprintf(&w, "Ceilings: idempotency %d records / %s, cache %d answers / %s, buffered %s. "+
		"%d clients, answers of %d bytes.\n\n", o.idemRecords, o.idemBytes, o.cacheAnswers, o.cacheBytes, o.bufferedMax, o.conns, o.answer)
	fmt.Fprintln(&w, "| traffic | requests | errors |")
	fmt.Fprintln(&w, "|---|---:|---:|")
	var errs int64
	for _, k := range soakKinds {
		e := total(&run.errors, k)
		errs += e
		fmt.Fprintf(&w, "| %s | %d | %d |\n", k, total(&run.requests, k), e)
	}
	fmt.Fprintf(&w, "\nReplayed Idempotency-Key repeats: %d. Evicted: idempotency %.0f, answers %.0f. Buffered streams bypassed: %.0f.\n",
		run.replayed.Load(), m[`detour_records_evicted_total{store="idempotency"}`], m[`detour_records_evicted_total{store="answers"}`],
		m["detour_buffer_bypassed_total"])
	half := samples[len(samples)/2:]
	slope := slopeKiBPerMin(half)
	var peak int64
	for _, s := range samples {
		peak = max(peak, s.rss)
	}
	if len(samples) > 0 {
		fmt.Fprintf(&w, "\nVmRSS: %.1f MiB at the start, %.1f MiB after the warm-up, %.1f MiB at the end, %.1f MiB at the peak; "+
			"%d samples every %s. Slope over the second half (least squares): **%.1f KiB/min** (limit %.0f).\n",
			mib(samples[0].rss), mib(half[0].rss), mib(samples[len(samples)-1].rss), mib(peak), len(samples), o.every, slope, o.maxSlope)
	}
	res := soakResult{}
	switch {
	case errs > 0:
		res.err = fmt.Errorf("soak: %d requests failed; the first: %s", errs, *run.firstErr.Load())
	case len(samples) < 4:
		res.err = errors.New("soak: fewer than 4 readings of VmRSS: lengthen -soak or shorten -soak-sample")
	case slope > o.maxSlope:
		res.err = fmt.Errorf("soak: VmRSS grew %.1f KiB/min after the warm-up, over the limit of %.0f", slope, o.maxSlope)
	}
	verdict := "PASS"
	if res.err != nil {
		verdict = "FAIL: " + res.err.Error()
	}
	fmt.Fprintf(&w, "\n%s\n", verdict)
	res.text = w.String()
	return res
}
