package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

// wantProblems checks that Parse of src fails with exactly the problems
// want lists (substrings, in file order).
func wantProblems(t *testing.T, src string, want ...string) {
	t.Helper()
	_, err := Parse("detour.yaml", []byte(src))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse: err = %v, want Errors", err)
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(errs), len(want), err)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("problem %d:\n got %s\nwant ...%s", i, errs[i], w)
		}
	}
}

func TestParse_RouteLimits(t *testing.T) {
	c := mustParse(t, `routes:
  absent: {chain: [groq/x]}
  set: {chain: [groq/x], header_timeout: 20s, first_token: 1m, idle_timeout: 15s, max_duration: 10m}
  off: {chain: [groq/x], header_timeout: 0, first_token: 0s, idle_timeout: 0, max_duration: "0"}
`)
	tests := []struct {
		route                        string
		header, first, idle, maxDur  time.Duration
		effHeader, effFirst, effIdle time.Duration // router.Route.Timeouts: 0 = none
	}{
		{"absent", 0, 0, 0, 0, router.DefaultHeaderTimeout, router.DefaultFirstToken, router.DefaultIdleTimeout},
		{"set", 20 * time.Second, time.Minute, 15 * time.Second, 10 * time.Minute, 20 * time.Second, time.Minute, 15 * time.Second},
		{"off", -1, -1, -1, -1, 0, 0, 0},
	}
	routes, err := c.Build(BuildOptions{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		r := c.Routes[tt.route]
		if r.HeaderTimeout != tt.header || r.FirstToken != tt.first || r.IdleTimeout != tt.idle || r.MaxDuration != tt.maxDur {
			t.Errorf("%s: config limits %v %v %v %v, want %v %v %v %v", tt.route,
				r.HeaderTimeout, r.FirstToken, r.IdleTimeout, r.MaxDuration, tt.header, tt.first, tt.idle, tt.maxDur)
		}
		rr := routes[tt.route]
		if rr.HeaderTimeout != tt.header || rr.FirstToken != tt.first || rr.IdleTimeout != tt.idle || rr.MaxDuration != tt.maxDur {
			t.Errorf("%s: built route limits %v %v %v %v, want %v %v %v %v", tt.route,
				rr.HeaderTimeout, rr.FirstToken, rr.IdleTimeout, rr.MaxDuration, tt.header, tt.first, tt.idle, tt.maxDur)
		}
		if h, f, i := rr.Timeouts(); h != tt.effHeader || f != tt.effFirst || i != tt.effIdle {
			t.Errorf("%s: effective limits %v %v %v, want %v %v %v", tt.route, h, f, i, tt.effHeader, tt.effFirst, tt.effIdle)
		}
	}
}

func TestParse_RouteLimitProblems(t *testing.T) {
	wantProblems(t, `routes:
  r:
    chain: [groq/x]
    header_timeout: -5s
    first_token: -1
    idle_timeout: 30
    max_duration: soon
    buffered:
`,
		`detour.yaml:4:21: routes.r.header_timeout: cannot be negative: write a duration like "30s", 0 for no limit, or leave the field out for the default (30s)`,
		`detour.yaml:5:18: routes.r.first_token: cannot be negative: write a duration like "30s", 0 for no limit, or leave the field out for the default (15s, 1m30s for a model known to reason)`,
		`detour.yaml:6:19: routes.r.idle_timeout: 30 has no unit: write "30s" for seconds (units: ms, s, m, h), or 0 for no limit`,
		`detour.yaml:7:19: routes.r.max_duration: "soon" is not a duration`,
		`detour.yaml:8:15: routes.r.buffered: expected true or false, got nothing`,
	)
}

func TestParse_RouteLimitNegativeDefaultNamesNoLimit(t *testing.T) {
	wantProblems(t, "routes:\n  r: {chain: [groq/x], max_duration: -1m}\n",
		`detour.yaml:2:38: routes.r.max_duration: cannot be negative: write a duration like "30s", 0 for no limit, or leave the field out for the default (no limit)`)
}

func TestParse_Defaults(t *testing.T) {
	c := mustParse(t, `routes:
  plain: {chain: [groq/x, deepseek/deepseek-chat]}
  inline: {chain: [groq/x], budget: {max_attempts: 4}}
  profile: {chain: [groq/x], budget: batch}
  inline-profile: {chain: [groq/x], budget: {profile: batch, max_attempts: 3}}
  override:
    chain: [groq/x]
    fail_closed_on: [invalid, policy, wall]
    fallback: true
    header_timeout: 5s
    first_token: 0
    idle_timeout: 1m
    max_duration: 0
    buffered: false
defaults:            # after routes: order does not matter
  budget: {deadline: 30s}
  fail_closed_on: [invalid, policy, context_overflow]
  fallback: false
  header_timeout: 10s
  first_token: 20s
  idle_timeout: 0
  max_duration: 5m
  buffered: true
`)
	fc := []classify.Kind{classify.Invalid, classify.Policy, classify.ContextOverflow}
	base := policy.Interactive()
	base.Deadline = 30 * time.Second
	wantDefaults := Defaults{RouteSettings{Budget: base, FailClosedOn: fc, NoFallback: true, HeaderTimeout: 10 * time.Second,
		FirstToken: 20 * time.Second, IdleTimeout: -1, MaxDuration: 5 * time.Minute, Buffered: true}}
	if d := cmp.Diff(wantDefaults, c.Defaults); d != "" {
		t.Errorf("Defaults (-want +got):\n%s", d)
	}
	inherited := func(name string, chain []string, b policy.Budget, budgetName string) Route {
		return Route{Name: name, Chain: chain, RouteSettings: RouteSettings{BudgetName: budgetName, Budget: b, FailClosedOn: fc,
			NoFallback: true, HeaderTimeout: 10 * time.Second, FirstToken: 20 * time.Second, IdleTimeout: -1,
			MaxDuration: 5 * time.Minute, Buffered: true}}
	}
	both := base
	both.MaxAttempts = 4
	batch3 := policy.Batch()
	batch3.MaxAttempts = 3
	want := map[string]Route{
		"plain":          inherited("plain", []string{"groq/x", "deepseek/deepseek-chat"}, base, ""),
		"inline":         inherited("inline", []string{"groq/x"}, both, ""),
		"profile":        inherited("profile", []string{"groq/x"}, policy.Batch(), "batch"),
		"inline-profile": inherited("inline-profile", []string{"groq/x"}, batch3, ""),
		"override": {Name: "override", Chain: []string{"groq/x"}, RouteSettings: RouteSettings{Budget: base,
			FailClosedOn:  []classify.Kind{classify.Invalid, classify.Policy, classify.Wall},
			HeaderTimeout: 5 * time.Second, FirstToken: -1, IdleTimeout: time.Minute, MaxDuration: -1}},
	}
	if d := cmp.Diff(want, c.Routes); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
	routes, err := c.Build(BuildOptions{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if r := routes["plain"]; r.Budget != base || !r.NoFallback || !r.Buffered || r.HeaderTimeout != 10*time.Second ||
		r.IdleTimeout != -1 || r.MaxDuration != 5*time.Minute || !cmp.Equal(r.FailClosedOn, fc) {
		t.Errorf("built route plain did not keep the defaults: %+v", r)
	}
}

func TestParse_DefaultsProfileAndInlineRoute(t *testing.T) {
	c := mustParse(t, `defaults:
  budget: batch
routes:
  a: {chain: [groq/x]}
  b: {chain: [groq/x], budget: {deadline: 1m}}
  c: {chain: [groq/x], budget: interactive}
`)
	b := policy.Batch()
	b.Deadline = time.Minute
	for name, want := range map[string]struct {
		budgetName string
		budget     policy.Budget
	}{"a": {"batch", policy.Batch()}, "b": {"", b}, "c": {"interactive", policy.Interactive()}} {
		if r := c.Routes[name]; r.BudgetName != want.budgetName || r.Budget != want.budget {
			t.Errorf("route %s: budget %q %+v, want %q %+v", name, r.BudgetName, r.Budget, want.budgetName, want.budget)
		}
	}
}

func TestTargetRoute_InheritsDefaults(t *testing.T) {
	c := mustParse(t, `defaults:
  budget: {deadline: 20s, reserve: 5s}
  header_timeout: 8s
  idle_timeout: 0
  buffered: true
routes:
  r: {chain: [groq/x]}
`)
	want := policy.Interactive()
	want.Deadline, want.Reserve = 20*time.Second, 5*time.Second
	for _, get := range []func() (*router.Route, error){
		func() (*router.Route, error) {
			return c.TargetRoute("deepseek/deepseek-chat", BuildOptions{Getenv: env(nil)})
		},
		func() (*router.Route, error) {
			return c.Lookup("deepseek/deepseek-chat", BuildOptions{Getenv: env(nil)})
		},
	} {
		r, err := get()
		if err != nil {
			t.Fatal(err)
		}
		if r.Budget != want || r.HeaderTimeout != 8*time.Second || r.IdleTimeout != -1 || !r.Buffered || r.Name != "deepseek/deepseek-chat" {
			t.Errorf("target route = %+v, want the defaults' budget and limits", r)
		}
	}
	if r, err := (&Config{}).TargetRoute("groq/x", BuildOptions{Getenv: env(nil)}); err != nil || r.Budget != policy.Interactive() {
		t.Errorf("with no defaults: %+v, %v; want the interactive budget", r, err)
	}
}

func TestParse_DefaultsProblems(t *testing.T) {
	wantProblems(t, `defaults:
  chain: [groq/x]
  budgett: batch
  fail_closed_on: [invalid, polcy]
  first_token: -3s
routes:
  a: {chain: [groq/x]}
  b: {chain: [groq/y]}
`,
		`detour.yaml:2:3: defaults.chain: a chain has no default: each route lists its own`,
		`detour.yaml:3:3: defaults.budgett: unknown field "budgett" (did you mean "budget"? fields are: budget, fail_closed_on, fallback, header_timeout, first_token, idle_timeout, max_duration, buffered, max_buffer, over_buffer, requires, cache_answers, static_answer, daily_cost_limit, adapt, lower_max_tokens, probe, eval_gate)`,
		// reported once, where it is written, not again for routes a and b
		`detour.yaml:4:29: defaults.fail_closed_on[1]: unknown failure kind "polcy" (did you mean "policy"?`,
		`detour.yaml:5:16: defaults.first_token: cannot be negative`,
	)
	wantProblems(t, "defaults:\n  budget: {profile: fast}\n",
		`detour.yaml:2:21: defaults.budget.profile: unknown budget profile "fast"`)
	wantProblems(t, "defaults: [a]\n", `detour.yaml:1:11: defaults: expected a mapping (key: value), got a list`)
}

func TestParse_Health(t *testing.T) {
	c := mustParse(t, `health:
  failure_threshold: 5
  open_for: 30s
  wall_cooldown: 10m
  max_park: 6h
  probe_timeout: 3m
`)
	want := Health{Settings: health.Settings{FailureThreshold: 5, OpenFor: 30 * time.Second,
		WallCooldown: 10 * time.Minute, MaxPark: 6 * time.Hour, ProbeTimeout: 3 * time.Minute}}
	if d := cmp.Diff(want, c.Health); d != "" {
		t.Errorf("Health (-want +got):\n%s", d)
	}
	// The breaker keeps what the file sets (its other settings take their
	// defaults, which the health package owns).
	got := health.New(c.Health.Settings).Settings()
	if got.FailureThreshold != 5 || got.OpenFor != 30*time.Second || got.WallCooldown != 10*time.Minute ||
		got.MaxPark != 6*time.Hour || got.ProbeTimeout != 3*time.Minute {
		t.Errorf("breaker settings %+v, want those of %+v", got, want.Settings)
	}
	if got := mustParse(t, "routes: {}\n").Health; got != (Health{}) {
		t.Errorf("no health: section: %+v, want the zero Health (every default)", got)
	}
}

func TestParse_HealthProblems(t *testing.T) {
	wantProblems(t, `health:
  failure_threshold: 0
  open_for: 10
  wall_cooldown: 0s
  max_park: -1h
  threshold: 3
`,
		`detour.yaml:2:22: health.failure_threshold: must be at least 1 (failures in a row that park a target); leave the field out to take the default (3)`,
		`detour.yaml:3:13: health.open_for: 10 has no unit`,
		`detour.yaml:4:18: health.wall_cooldown: must be more than 0`,
		`detour.yaml:5:13: health.max_park: must be more than 0`,
		`detour.yaml:6:3: health.threshold: unknown field "threshold" (did you mean "failure_threshold"? fields are: failure_threshold, open_for, wall_cooldown, max_park, probe_timeout, forget, store, store_password_env, namespace)`,
	)
	wantProblems(t, "health:\n  failure_threshold: many\n", `detour.yaml:2:22: health.failure_threshold: expected a whole number, got text`)
	wantProblems(t, "breaker: {open_for: 5s}\ndefault: {buffered: true}\n",
		`detour.yaml:1:1: breaker: unknown field "breaker" (did you mean "health"?`,
		`detour.yaml:2:1: default: unknown field "default" (did you mean "defaults"?`)
}

func TestBuild_AccountAndEndpoint(t *testing.T) {
	c := mustParse(t, `providers:
  a: {base_url: https://API.Example.com/v1, key_env: A_KEY}
  b: {base_url: "https://api.example.com:443/other", key_env: B_KEY}
  c: {base_url: http://10.0.0.5/v1, key_env: ""}
  d: {base_url: "http://[::1]:8080/v1", key_env: ""}
  ant: {dialect: anthropic, key_env: ANT_KEY}
routes:
  r: {chain: [a/m, b/m, c/m, d/m, ant/m, gemini/gemini-2.5-flash]}
`)
	routes, err := c.Build(BuildOptions{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ account, endpoint string }{
		{"a", "api.example.com:443"},
		{"b", "api.example.com:443"}, // same host and port: one endpoint
		{"c", "10.0.0.5:80"},
		{"d", "[::1]:8080"},
		{"ant", "api.anthropic.com:443"}, // the dialect's default root
		{"gemini", "generativelanguage.googleapis.com:443"},
	}
	for i, w := range want {
		got := routes["r"].Chain[i]
		if got.Account != w.account || got.Endpoint != w.endpoint {
			t.Errorf("chain[%d] %s: account %q endpoint %q, want %q %q", i, got.ID(), got.Account, got.Endpoint, w.account, w.endpoint)
		}
	}
	if p := (Provider{BaseURL: "ftp://x.example"}).endpoint(); p != "" {
		t.Errorf("endpoint of an ftp URL = %q, want none", p)
	}
	if p := (Provider{Name: "mine"}).endpoint(); p != "api.openai.com:443" {
		t.Errorf("endpoint of an openai provider with no base_url (built in code) = %q, want the client's default root", p)
	}
}

func TestValidate_DefaultsBuiltInCode(t *testing.T) {
	bad := []classify.Kind{"bogus"}
	c := &Config{
		Defaults: Defaults{RouteSettings{FailClosedOn: bad, Budget: policy.Budget{Deadline: -time.Second}}},
		Routes: map[string]Route{
			// a inherits the defaults' bad kind: reported once; b has its own
			"a": {Name: "a", Chain: []string{"groq/x"}, RouteSettings: RouteSettings{FailClosedOn: bad}},
			"b": {Name: "b", Chain: []string{"groq/x"}, RouteSettings: RouteSettings{FailClosedOn: []classify.Kind{"nope"}}},
		},
	}
	err := c.Validate()
	want := "defaults.fail_closed_on[0]: unknown failure kind \"bogus\""
	if err == nil || strings.Count(err.Error(), `"bogus"`) != 1 || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), `routes.b.fail_closed_on[0]: unknown failure kind "nope"`) ||
		!strings.Contains(err.Error(), "defaults.budget: budget fields cannot be negative") {
		t.Errorf("Validate:\n%v\nwant %q once, route b's own problem and the negative budget", err, want)
	}
}
