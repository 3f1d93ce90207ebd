package gateway_test

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/health"
	sim "github.com/detourhq/detour/simulate"
)

// scrape returns the gateway's metrics as "name{labels}" -> value.
func scrape(t *testing.T, f *fixture) (map[string]float64, string) {
	t.Helper()
	resp, body := f.get("/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
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
	f := newFixture(t, setup{
		// 1 primary success; 2 retry recovery; 3 failover recovery (p1
		// twice, then p2); 4 fail closed; 5 fallback recovery (p1 opens
		// at its third straight failure and is left at once, p2 twice,
		// then p3); 6 all failed (p1 parked, p2 opens and is left at
		// once, p3 twice).
		p1: []sim.Fault{{}, {Kind: sim.RateLimit}, {}, u, u, {Kind: sim.BadRequest}, u},
		p2: []sim.Fault{{}, u, u, u},
		p3: []sim.Fault{{}, u, u},
	})
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
	f := newFixture(t, setup{p1: sim.Faults(sim.NoCredits)})
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
	f := newFixture(t, setup{clock: clk, health: hb,
		routes: `  acct:
    chain: [p1/m, p1/x, p2/m]
`,
		p1: []sim.Fault{{Kind: sim.InsufficientQuota}, {}}})
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
