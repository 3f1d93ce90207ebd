package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/health"
	sim "github.com/detourhq/detour/simulate"
)

// metricsKey is the admin key of /metrics in fixtures made withMetricsKey.
const metricsKey = "detour-metrics-key-for-tests-0001"

// withMetricsKey returns s with gateway.metrics_key_env naming a variable
// that holds metricsKey.
func withMetricsKey(s setup) setup {
	if s.gateway == "" {
		s.gateway = defaultGateway
	}
	s.gateway += "  metrics_key_env: DETOUR_TEST_METRICS_KEY\n"
	env := map[string]string{"DETOUR_TEST_METRICS_KEY": metricsKey}
	maps.Copy(env, s.env)
	s.env = env
	return s
}

// getMetrics GETs url with "Authorization: Bearer key" (none if key is
// "") and returns the response and its body.
func getMetrics(t *testing.T, url, key string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// scrape returns the metrics of a fixture made withMetricsKey as
// "name{labels}" -> value, and their text.
func scrape(t *testing.T, f *fixture) (map[string]float64, string) {
	t.Helper()
	resp, body := getMetrics(t, f.ts.URL+"/metrics", metricsKey)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q", line)
		}
		out[line[:i]] = v
	}
	return out, body
}

func TestMetrics_OutcomesAfterScriptedRequests(t *testing.T) {
	u := sim.Fault{Kind: sim.Unavailable}
	f := newFixture(t, withMetricsKey(setup{
		// 1 primary success; 2 retry recovery; 3 failover recovery (p1
		// twice, then p2); 4 fail closed; 5 fallback recovery (p1 opens
		// at its third straight failure and is left at once, p2 twice,
		// then p3); 6 all failed (p1 parked, p2 opens and is left at
		// once, p3 twice).
		p1: []sim.Fault{{}, {Kind: sim.RateLimit}, {}, u, u, {Kind: sim.BadRequest}, u},
		p2: []sim.Fault{{}, u, u, u},
		p3: []sim.Fault{{}, u, u},
	}))
	want := []int{200, 200, 200, 400, 200, 503}
	for i, status := range want {
		resp, body := f.post("/v1/chat/completions", chatBody)
		if resp.StatusCode != status {
			t.Fatalf("request %d: %d, want %d: %s", i+1, resp.StatusCode, status, body)
		}
		if status == 503 {
			ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || ra < 1 || ra > 60 {
				t.Errorf("503 Retry-After %q: want the earliest parked reset, 1..60 s", resp.Header.Get("Retry-After"))
			}
		}
	}
	m, body := scrape(t, f)
	outcomes := map[string]float64{
		"primary_success": 1, "retry_recovery": 1, "failover_recovery": 1, "fallback_recovery": 1,
		"fail_closed": 1, "all_failed": 1,
	}
	for o, n := range outcomes {
		key := `detour_requests_total{outcome="` + o + `",route="default",surface="openai"}`
		if m[key] != n {
			t.Errorf("%s = %v, want %v", key, m[key], n)
		}
	}
	for _, o := range []string{"degraded", "static"} {
		if _, ok := m[`detour_requests_total{outcome="`+o+`",route="solo",surface="anthropic"}`]; !ok {
			t.Errorf("outcome %s is not exported", o)
		}
	}
	checks := map[string]float64{
		`detour_attempts_total{status="ok",target="p1/m"}`:                       2,
		`detour_attempts_total{status="http_503",target="p1/m"}`:                 3,
		`detour_attempts_total{status="http_429",target="p1/m"}`:                 1,
		`detour_attempts_total{status="http_400",target="p1/m"}`:                 1,
		`detour_attempts_total{status="http_503",target="p2/m"}`:                 3,
		`detour_skips_total{reason="skipped_parked",target="p2/m"}`:              0,
		`detour_attempts_total{status="ok",target="p3/other"}`:                   1,
		`detour_skips_total{reason="skipped_parked",target="p1/m"}`:              1,
		`detour_parked_targets`:                                                  2,
		`detour_parked_scopes{scope="account"}`:                                  0,
		`detour_parked_scopes{scope="endpoint"}`:                                 0,
		`detour_park_duration_seconds_count`:                                     2,
		`detour_recovery_added_seconds_count`:                                    3,
		`detour_request_duration_seconds_count{stream="false",surface="openai"}`: 6,
		`detour_inflight_requests`:                                               0,
	}
	for k, v := range checks {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if m[`detour_upstream_cost_usd_total{target="p1/m"}`] <= 0 || m[`detour_recovery_added_cost_usd_total`] <= 0 {
		t.Errorf("costs not counted:\n%s", body)
	}
	if _, ok := m[`detour_target_parked_seconds{target="p1/m"}`]; !ok {
		t.Errorf("p1/m's park is not exported")
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

func TestMetrics_ProbeAndStream(t *testing.T) {
	f := newFixture(t, withMetricsKey(setup{p1: sim.Faults(sim.NoCredits)}))
	if resp, _ := f.post("/v1/chat/completions", chatBody); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	// OpenRouter's 402 "requires more credits, or fewer max_tokens" is
	// about this model's price: it parked the target p1/m, not p1's
	// account, for 5 minutes. Only a probe may reach it, later.
	m, _ := scrape(t, f)
	if m[`detour_parked_targets`] != 1 || m[`detour_parked_scopes{scope="account"}`] != 0 ||
		m[`detour_probes_total{result="success",target="p1/m"}`] != 0 {
		t.Errorf("parked targets %v, accounts %v", m[`detour_parked_targets`], m[`detour_parked_scopes{scope="account"}`])
	}
	resp, _ := f.post("/v1/chat/completions", `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	m, _ = scrape(t, f)
	if m[`detour_time_to_first_token_seconds_count{surface="openai"}`] != 1 ||
		m[`detour_requests_total{outcome="failover_recovery",route="default",surface="openai"}`] != 2 {
		t.Errorf("stream metrics: %v", m)
	}
}

// An account's park (insufficient_quota) is no target's: it shows under
// detour_parked_scopes, the targets it skips are not counted as parked,
// and the send that ends it counts as a probe of the target that carried it.
func TestMetrics_AccountParkIsNoTargetAndItsProbeCounts(t *testing.T) {
	clk := clock.NewFake(time.Now())
	hb := health.New(health.Settings{})
	f := newFixture(t, withMetricsKey(setup{clock: clk, health: hb,
		routes: `  acct:
    chain: [p1/m, p1/x, p2/m]
`,
		p1: []sim.Fault{{Kind: sim.InsufficientQuota}, {}}}))
	body := strings.Replace(chatBody, "default", "acct", 1)
	for i := range 2 { // the quota parks p1's account; then both p1 targets are skipped
		if resp, b := f.post("/v1/chat/completions", body); resp.StatusCode != 200 || resp.Header.Get("X-Detour-Provider") != "p2" {
			t.Fatalf("request %d: %d %s", i+1, resp.StatusCode, b)
		}
	}
	m, text := scrape(t, f)
	for k, v := range map[string]float64{
		`detour_parked_targets`:                                      0,
		`detour_parked_scopes{scope="account"}`:                      1,
		`detour_parked_scopes{scope="endpoint"}`:                     0,
		`detour_park_duration_seconds_count`:                         1,
		`detour_skips_total{reason="skipped_parked",target="p1/m"}`:  1,
		`detour_skips_total{reason="skipped_parked",target="p1/x"}`:  1,
		`detour_probes_total{result="success",target="p1/m"}`:        0,
		`detour_attempts_total{status="http_429",target="p1/m"}`:     1,
		`detour_skips_total{reason="skipped_account",target="p1/x"}`: 1,
	} {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if strings.Contains(text, `target="account:`) || strings.Contains(text, `target="endpoint:`) {
		t.Errorf("a health key poses as a target:\n%s", text)
	}
	// Past the park, p1/m's send is the account's probe.
	until := hb.Get("account:p1", clk.Now()).Until
	if !until.After(clk.Now()) {
		t.Fatalf("account p1 is not parked: %+v", hb.Snapshot(clk.Now()))
	}
	clk.Advance(until.Sub(clk.Now()) + time.Second)
	if resp, b := f.post("/v1/chat/completions", body); resp.StatusCode != 200 || resp.Header.Get("X-Detour-Provider") != "p1" {
		t.Fatalf("after the park: %d %s", resp.StatusCode, b)
	}
	m, text = scrape(t, f)
	if m[`detour_probes_total{result="success",target="p1/m"}`] != 1 || m[`detour_parked_scopes{scope="account"}`] != 0 {
		t.Errorf("probe not counted:\n%s", text)
	}
}

// parseMetrics parses an exposition with Prometheus's own parser, failing
// the test if it is not valid.
func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, text)
	}
	return mfs
}

func TestMetrics_GoRuntimeAndProcessFamiliesOverHTTP(t *testing.T) {
	f := newFixture(t, withMetricsKey(setup{}))
	if resp, _ := f.post("/v1/chat/completions", chatBody); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	_, text := scrape(t, f)
	mfs := parseMetrics(t, text)
	want := map[string]dto.MetricType{
		"detour_requests_total":         dto.MetricType_COUNTER,
		"go_goroutines":                 dto.MetricType_GAUGE,
		"go_threads":                    dto.MetricType_GAUGE,
		"go_gc_duration_seconds":        dto.MetricType_SUMMARY,
		"go_info":                       dto.MetricType_GAUGE,
		"go_memstats_alloc_bytes":       dto.MetricType_GAUGE,
		"go_memstats_heap_alloc_bytes":  dto.MetricType_GAUGE,
		"go_memstats_heap_inuse_bytes":  dto.MetricType_GAUGE,
		"go_memstats_sys_bytes":         dto.MetricType_GAUGE,
		"go_memstats_heap_objects":      dto.MetricType_GAUGE,
		"go_memstats_gc_sys_bytes":      dto.MetricType_GAUGE,
		"go_memstats_alloc_bytes_total": dto.MetricType_COUNTER,
	}
	if runtime.GOOS == "linux" {
		for name, typ := range map[string]dto.MetricType{
			"process_resident_memory_bytes": dto.MetricType_GAUGE, "process_virtual_memory_bytes": dto.MetricType_GAUGE,
			"process_cpu_seconds_total": dto.MetricType_COUNTER, "process_open_fds": dto.MetricType_GAUGE,
			"process_max_fds": dto.MetricType_GAUGE, "process_start_time_seconds": dto.MetricType_GAUGE,
		} {
			want[name] = typ
		}
	}
	for name, typ := range want {
		if mf := mfs[name]; mf == nil || mf.GetType() != typ {
			t.Errorf("%s: %v, want a %v", name, mf, typ)
		}
	}
	if t.Failed() {
		return
	}
	m, _ := scrape(t, f)
	if v := m[`go_info{version="`+runtime.Version()+`"}`]; v != 1 {
		t.Errorf("go_info for %s = %v, want 1", runtime.Version(), v)
	}
	// The gateway runs handlers, the test's server and its connections.
	if m["go_goroutines"] < 3 || m["go_threads"] < 1 || m["go_memstats_heap_alloc_bytes"] <= 0 ||
		m["go_memstats_heap_inuse_bytes"] < m["go_memstats_heap_alloc_bytes"] || m["go_memstats_sys_bytes"] < m["go_memstats_heap_inuse_bytes"] {
		t.Errorf("implausible runtime figures: %v", m)
	}
	if runtime.GOOS == "linux" {
		if rss := m["process_resident_memory_bytes"]; rss < 1<<20 || rss > m["process_virtual_memory_bytes"] {
			t.Errorf("resident %v, virtual %v", rss, m["process_virtual_memory_bytes"])
		}
		if m["process_open_fds"] < 3 || m["process_max_fds"] < m["process_open_fds"] {
			t.Errorf("open fds %v of %v", m["process_open_fds"], m["process_max_fds"])
		}
		if started := time.Unix(int64(m["process_start_time_seconds"]), 0); time.Since(started) > 24*time.Hour || time.Until(started) > time.Second {
			t.Errorf("process started at %v", started)
		}
	}
}

func TestMetrics_WhoMayScrape(t *testing.T) {
	keyless := "  max_body: 8MiB\n" // a gateway: section without keys
	withKey := "  metrics_key_env: DETOUR_TEST_METRICS_KEY\n"
	env := map[string]string{"DETOUR_TEST_METRICS_KEY": metricsKey}
	tests := []struct {
		name    string
		gateway string
		key     string // sent as Bearer
		status  int
		want    string // in the body
	}{
		{"no client keys: open", keyless, "", 200, "go_goroutines"},
		{"client keys, no admin key: closed", defaultGateway, "", 403, "set gateway.metrics_key_env"},
		{"client keys, no admin key: a client key does not open it", defaultGateway, clientKey, 403, `"code":"metrics_closed"`},
		{"admin key: asked for", defaultGateway + withKey, "", 401, "missing metrics key"},
		{"admin key: a client key is not it", defaultGateway + withKey, clientKey, 401, "invalid metrics key"},
		{"admin key: sent", defaultGateway + withKey, metricsKey, 200, "detour_requests_total"},
		{"admin key without client keys: still asked for", keyless + withKey, "", 401, "missing metrics key"},
		{"served apart: not here", keyless + "  metrics_listen: 127.0.0.1:0\n", "", 404, "gateway.metrics_listen"},
		{"served apart: not here, whatever the key", defaultGateway + withKey + "  metrics_listen: 127.0.0.1:0\n", metricsKey, 404, "unknown_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, setup{gateway: tt.gateway, env: env})
			resp, body := getMetrics(t, f.ts.URL+"/metrics", tt.key)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("%d %.300s; want %d with %q", resp.StatusCode, body, tt.status, tt.want)
			}
			if got := resp.Header.Get("WWW-Authenticate"); (tt.status == 401) != (got != "") {
				t.Errorf("WWW-Authenticate %q with %d", got, tt.status)
			}
			if strings.Contains(body, metricsKey) || strings.Contains(body, clientKey) {
				t.Errorf("a key in the answer: %s", body)
			}
		})
	}
}

func TestMetrics_ServedApartOnTheirOwnListener(t *testing.T) {
	for _, tt := range []struct {
		name, gateway, key string
		status             int
	}{
		{"loopback without a key", defaultGateway + "  metrics_listen: 127.0.0.1:0\n", "", 200},
		{"behind the admin key: without it", defaultGateway + "  metrics_listen: 127.0.0.1:0\n  metrics_key_env: DETOUR_TEST_METRICS_KEY\n", "", 401},
		{"behind the admin key: with it", defaultGateway + "  metrics_listen: 127.0.0.1:0\n  metrics_key_env: DETOUR_TEST_METRICS_KEY\n", metricsKey, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, setup{gateway: tt.gateway, env: map[string]string{"DETOUR_TEST_METRICS_KEY": metricsKey}})
			if f.gw.MetricsAddr() != "127.0.0.1:0" {
				t.Fatalf("MetricsAddr %q", f.gw.MetricsAddr())
			}
			ln, err := net.Listen("tcp", f.gw.MetricsAddr())
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- f.gw.ServeMetrics(ln) }()
			base := "http://" + ln.Addr().String()
			resp, body := getMetrics(t, base+"/metrics", tt.key)
			if resp.StatusCode != tt.status || tt.status == 200 && (!strings.Contains(body, "\ndetour_requests_total") ||
				!strings.Contains(body, "\ngo_goroutines ")) {
				t.Errorf("%d %.300s, want %d", resp.StatusCode, body, tt.status)
			}
			if tt.status == 200 {
				parseMetrics(t, body)
			}
			if resp, body := getMetrics(t, base+"/v1/models", clientKey); resp.StatusCode != 404 || !strings.Contains(body, "GET /metrics only") {
				t.Errorf("the metrics listener serves more than /metrics: %d %s", resp.StatusCode, body)
			}
			if err := f.gw.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("ServeMetrics after Shutdown: %v", err)
			}
			if _, err := http.Get(base + "/metrics"); err == nil {
				t.Error("the metrics listener still accepts after Shutdown")
			}
		})
	}
}

func TestNew_MetricsKeyMustBeSetAndNoClientsKey(t *testing.T) {
	for _, tt := range []struct {
		name, value, want string
	}{
		{"unset", "", "DETOUR_TEST_METRICS_KEY is not set"},
		{"a client's key", clientKey, `holds the key of client "app"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("detour.yaml", []byte("gateway:\n  keys: {app: {key_env: K}}\n  metrics_key_env: DETOUR_TEST_METRICS_KEY\n"))
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"K": clientKey, "DETOUR_TEST_METRICS_KEY": tt.value}
			_, err = gateway.New(gateway.Config{File: cfg, Getenv: func(k string) string { return env[k] }})
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), clientKey) {
				t.Errorf("New: %v, want an error saying %q, without the key", err, tt.want)
			}
		})
	}
}

// A group member's send counts under detour_group_picks_total by why the
// group put it where it was: p2/m, with p1/m busy, is least_busy's pick.
func TestMetrics_GroupPicks(t *testing.T) {
	f := newFixture(t, withMetricsKey(setup{routes: `  pair:
    chain:
      - group: [p1/m, p2/m]
        pick: least_busy
`}))
	for range 2 {
		if resp, _ := f.post("/v1/chat/completions", `{"model":"pair","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
	}
	m, _ := scrape(t, f)
	if n := m[`detour_group_picks_total{pick="least_busy",target="p1/m"}`] + m[`detour_group_picks_total{pick="least_busy",target="p2/m"}`]; n != 2 {
		t.Errorf("group picks counted %v, want 2 sends picked by least_busy", n)
	}
}
