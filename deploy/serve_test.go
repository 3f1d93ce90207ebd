package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	sim "github.com/detourhq/detour/simulate"
)

// lockedBuffer is a child's stderr, read while it is written.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served is a `detour serve` process on the sample config.
type served struct {
	base   string
	keys   map[string]string // every key variable's value
	stderr *lockedBuffer
	proc   *os.Process
	exited <-chan int
	sim    *sim.Server
}

// openParkFor is health.open_for in the config served: how long three
// failures in a row park a target. Short, so that the test sees the park
// end and the probe that follows.
const openParkFor = 2 * time.Second

// serveSample runs `detour serve` on deploy/detour.yaml as a process, with
// its providers' base URLs pointed at fake ones (scripts: per provider,
// served in order, then OK) and health.open_for at openParkFor, every key
// variable set, the health store in memory ($DETOUR_HEALTH_STORE=-, as
// systemd's unit overrides it) and the ledger in a temporary directory. It
// is stopped with SIGTERM (then killed) when t ends.
func serveSample(t *testing.T, scripts map[string][]sim.Fault) *served {
	t.Helper()
	c := sample(t)
	var providers []sim.Provider
	for _, name := range c.ProviderNames() {
		p, _ := c.Provider(name)
		providers = append(providers, sim.Provider{Name: name, Dialect: sim.Dialect(p.Dialect), Script: scripts[name]})
	}
	srv, err := sim.Start(providers...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	// The sample, as a generic document, with the fake base URLs.
	var doc map[string]any
	if err := yaml.Unmarshal(read(t, "detour.yaml"), &doc); err != nil {
		t.Fatal(err)
	}
	for name, p := range doc["providers"].(map[string]any) {
		p.(map[string]any)["base_url"] = srv.BaseURL(name)
	}
	doc["health"].(map[string]any)["open_for"] = openParkFor.String()
	text, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "detour.yaml")
	if err := os.WriteFile(cfg, text, 0o644); err != nil {
		t.Fatal(err)
	}

	all, _ := keyVars(c)
	keys := testKeys(all)
	args, _ := json.Marshal([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--log-level", "warn"})
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{childEnv + "=" + string(args), "PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"DETOUR_LEDGER=" + filepath.Join(dir, "ledger.jsonl"), "DETOUR_HEALTH_STORE=-"}
	for k, v := range keys {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &served{keys: keys, stderr: &lockedBuffer{}, sim: srv}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.proc = cmd.Process
	exited := make(chan int, 1)
	s.exited = exited
	go func() {
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		exited <- code
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
		select {
		case <-exited:
		case <-time.After(45 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // stuck
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed no URL: %v\n%s", err, s.stderr.String())
	}
	go io.Copy(io.Discard, out) //nolint:errcheck // the rest of stdout, until it ends
	s.base = strings.TrimSpace(line)
	return s
}

// do sends method path with body (none if "") and headers, and returns
// the status and the body.
func (s *served) do(t *testing.T, method, path, body string, headers ...string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrape reads /metrics with the metrics key and parses it.
func (s *served) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := s.do(t, http.MethodGet, "/metrics", "", "Authorization", "Bearer "+s.keys["DETOUR_METRICS_KEY"])
	if code != http.StatusOK {
		t.Fatalf("/metrics with DETOUR_METRICS_KEY: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return mfs
}

// badDay scripts the fake providers for badDayTraffic: three 503s from
// groq (the third parks it for openParkFor), a daily quota at gemini, an
// answer then a 402 at openrouter, an answer then a 429 asking for two
// minutes at deepseek (past the budget's max_server_wait: a park); the
// rest answer.
var badDay = map[string][]sim.Fault{
	"groq":       sim.Faults(sim.Unavailable, sim.Unavailable, sim.Unavailable),
	"gemini":     sim.Faults(sim.DailyQuota),
	"openrouter": sim.Faults(sim.OK, sim.NoCredits),
	"deepseek":   {{Kind: sim.OK}, {Kind: sim.RateLimit, RetryAfter: 2 * time.Minute}},
}

// badDayTraffic sends the requests that make every family of the
// dashboard show, on each surface, and returns the metrics scraped after
// them.
func badDayTraffic(t *testing.T, s *served) map[string]*dto.MetricFamily {
	t.Helper()
	app := s.keys["DETOUR_KEY_APP"]
	// 1. llama: groq 503, 503 (retried), then openrouter's llama: a failover.
	code, body := s.do(t, http.MethodPost, "/v1/chat/completions",
		`{"model":"llama","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer "+app)
	if code != http.StatusOK {
		t.Fatalf("OpenAI request: %d %s", code, body)
	}
	// 2. default, streamed to an Anthropic client: groq's third 503 parks
	// it, gemini's daily quota and openrouter's 402 are walls (each parks
	// its target until the reset it names), deepseek answers: a fallback.
	code, body = s.do(t, http.MethodPost, "/v1/messages",
		`{"model":"default","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		"x-api-key", app, "anthropic-version", "2023-06-01")
	if code != http.StatusOK || !strings.Contains(body, "message_stop") {
		t.Fatalf("Anthropic stream: %d %s", code, body)
	}
	// 3. default again at once: groq, gemini and openrouter are parked,
	// so skipped without a send; deepseek's long 429 parks it; anthropic
	// answers.
	code, body = s.do(t, http.MethodPost, "/v1/chat/completions",
		`{"model":"default","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer "+app)
	if code != http.StatusOK {
		t.Fatalf("OpenAI request: %d %s", code, body)
	}
	// 4. After groq's park, on the Gemini surface: groq's probe answers.
	time.Sleep(openParkFor + 200*time.Millisecond)
	code, body = s.do(t, http.MethodPost, "/v1beta/models/default:generateContent",
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "x-goog-api-key", app)
	if code != http.StatusOK {
		t.Fatalf("Gemini request: %d %s", code, body)
	}
	// 5. A client key detour does not know: rejected before routing.
	if code, _ := s.do(t, http.MethodPost, "/v1/chat/completions", `{"model":"default","messages":[]}`,
		"Authorization", "Bearer not-a-key-of-this-gateway"); code != http.StatusUnauthorized {
		t.Fatalf("an unknown key: %d, want 401", code)
	}
	mfs := s.scrape(t)
	// The traffic did what the comments say.
	for _, w := range []struct {
		name   string
		labels []string
	}{
		{"detour_requests_total", []string{"surface", "openai", "route", "llama", "outcome", "failover_recovery"}},
		{"detour_requests_total", []string{"surface", "anthropic", "route", "default", "outcome", "fallback_recovery"}},
		{"detour_requests_total", []string{"surface", "gemini", "route", "default", "outcome", "primary_success"}},
		{"detour_attempts_total", []string{"target", "openrouter/meta-llama/llama-3.3-70b-instruct", "status", "http_402"}},
		{"detour_probes_total", []string{"target", "groq/llama-3.3-70b-versatile", "result", "success"}},
		{"detour_skips_total", []string{"target", "groq/llama-3.3-70b-versatile", "reason", "skipped_parked"}},
		{"detour_target_parked_seconds", []string{"target", "deepseek/deepseek-chat"}},
		{"detour_rejected_requests_total", []string{"surface", "openai", "reason", "unauthorized"}},
	} {
		if v, ok := sampleValue(mfs, w.name, w.labels...); !ok || v <= 0 {
			t.Errorf("%s%v = %v (found %v), want more than 0", w.name, w.labels, v, ok)
		}
	}
	return mfs
}

// sampleValue returns the value of the series of family name whose labels
// include the name/value pairs labels.
func sampleValue(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	for _, m := range mfs[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && have[labels[i]] == labels[i+1]
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		}
	}
	return 0, false
}

// The sample config runs: serve starts on it (keys from the environment,
// the listener beyond loopback allowed by its client keys), answers on the
// probe paths the manifests use, keeps /metrics for the metrics key,
// reloads on SIGHUP (systemd's ExecReload), and on SIGTERM answers /readyz
// 503 at once while it drains, then exits 0.
func TestServe_SampleConfigRunsAsTheManifestsExpect(t *testing.T) {
	s := serveSample(t, nil)
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := s.do(t, http.MethodGet, p, ""); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
	if code, _ := s.do(t, http.MethodGet, "/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the metrics key: %d, want 401", code)
	}
	if code, _ := s.do(t, http.MethodGet, "/metrics", "", "Authorization", "Bearer "+s.keys["DETOUR_KEY_APP"]); code == http.StatusOK {
		t.Error("/metrics answers a client's key")
	}
	code, body := s.do(t, http.MethodGet, "/v1/models", "", "Authorization", "Bearer "+s.keys["DETOUR_KEY_APP"])
	if code != http.StatusOK || !strings.Contains(body, `"default"`) {
		t.Errorf("/v1/models with the client key: %d %s", code, body)
	}

	// systemctl reload: SIGHUP, and the journal says it took.
	if err := s.proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s.stderr, "config reloaded")

	// docker stop, kubectl delete, systemctl stop: SIGTERM.
	start := time.Now()
	if err := s.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s.stderr, "shutting down")
	// Within drain_delay, while requests are still served.
	code = 0
	for deadline := time.Now().Add(sample(t).Gateway.WithDefaults().DrainDelay); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if code, _ = s.do(t, http.MethodGet, "/readyz", ""); code == http.StatusServiceUnavailable {
			break
		}
	}
	if code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: %d, want 503 (the readiness probe takes the pod out)", code)
	}
	if code, _ := s.do(t, http.MethodGet, "/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want 200 (the liveness probe must not restart a draining pod)", code)
	}
	select {
	case code := <-s.exited:
		if code != 0 {
			t.Errorf("serve exited %d after SIGTERM, want 0\n%s", code, s.stderr.String())
		}
		if took := time.Since(start).Seconds(); took > drainSeconds(sample(t)) {
			t.Errorf("the drain took %.1fs, past drain_delay + drain_timeout", took)
		}
	case <-time.After(time.Duration(drainSeconds(sample(t))+5) * time.Second):
		t.Fatalf("serve still runs after SIGTERM\n%s", s.stderr.String())
	}
}

// waitFor waits up to 5 s for want on stderr.
func waitFor(t *testing.T, stderr *lockedBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(stderr.String(), want) {
			return
		}
	}
	t.Fatalf("stderr never said %q:\n%s", want, stderr.String())
}
