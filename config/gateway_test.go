package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParse_GatewaySectionAndRouteStreams(t *testing.T) {
	c := mustParse(t, `routes:
  default:
    chain: [groq/llama-3.3-70b-versatile]
    first_token: 5s
    idle_timeout: 30s
    buffered: true
gateway:
  listen: 0.0.0.0:9000
  max_body: 4MiB
  drain_timeout: 10s
  keepalive: 20s
  keys:
    web: {key_env: DETOUR_KEY_WEB, routes: [default, groq/llama-3.3-70b-versatile], max_concurrent: 8,
          requests_per_minute: 600, burst: 20}
    ci: {sha256: 9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08}
`)
	want := Gateway{Listen: "0.0.0.0:9000", MaxBody: 4 << 20, DrainTimeout: 10 * time.Second, KeepAlive: 20 * time.Second,
		Keys: []ClientKey{
			{Name: "ci", SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
			{Name: "web", KeyEnv: "DETOUR_KEY_WEB", Routes: []string{"default", "groq/llama-3.3-70b-versatile"},
				MaxConcurrent: 8, RequestsPerMinute: 600, Burst: 20},
		}}
	if d := cmp.Diff(want, c.Gateway); d != "" {
		t.Errorf("gateway (-want +got):\n%s", d)
	}
	routes, err := c.Build(BuildOptions{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	r := routes["default"]
	if r.FirstToken != 5*time.Second || r.IdleTimeout != 30*time.Second || !r.Buffered {
		t.Errorf("route streams: %v %v %v", r.FirstToken, r.IdleTimeout, r.Buffered)
	}
	if got := (Gateway{}).WithDefaults(); got.Listen != DefaultListen || got.MaxBody != DefaultMaxBody ||
		got.DrainTimeout != DefaultDrainTimeout || got.KeepAlive != DefaultKeepAlive || got.DrainDelay != DefaultDrainDelay ||
		got.BodyTimeout != DefaultBodyTimeout || got.WriteTimeout != DefaultWriteTimeout || got.MaxDirectModels != DefaultMaxDirectModels {
		t.Errorf("defaults %+v", got)
	}
	if s := c.Gateway.Keys[0].String(); strings.Contains(s, "0f00a08") {
		t.Errorf("String shows the whole digest: %s", s)
	}
}

func TestParse_GatewayProblems(t *testing.T) {
	tests := []struct {
		name, src, want string
		sentinel        error
	}{
		{"plaintext key", "gateway:\n  keys:\n    web: {key: sk-proj-abcdefghijklmnopqrstuvwx}\n",
			"detour.yaml:3:11: gateway.keys.web.key: keys never go in this file", ErrKeyInFile},
		{"key as key_env", "gateway:\n  keys:\n    web: {key_env: Abcdefghijklmnop1234567890xyz}\n",
			"gateway.keys.web.key_env: key_env takes the NAME", ErrKeyInFile},
		{"neither", "gateway:\n  keys:\n    web: {routes: [default]}\n", "gateway.keys.web: the key needs key_env", nil},
		{"both", "gateway:\n  keys:\n    web: {key_env: K, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}\n",
			"write key_env or sha256, not both", nil},
		{"bad digest", "gateway:\n  keys:\n    web: {sha256: abc}\n", "detour.yaml:3:19: gateway.keys.web.sha256: sha256 takes the 64 hex digits", nil},
		{"unknown route", "routes:\n  default: {chain: [groq/x]}\ngateway:\n  keys:\n    web: {key_env: K, routes: [defualt]}\n",
			`gateway.keys.web.routes[0]: unknown route "defualt" (did you mean "default"?`, ErrUnknownRoute},
		{"negative", "gateway:\n  keys:\n    web: {key_env: K, max_concurrent: -1}\n", "max_concurrent cannot be negative", nil},
		{"listen", "gateway:\n  listen: localhost\n", "gateway.listen: listen \"localhost\" is not host:port", nil},
		{"size", "gateway:\n  max_body: 4 megs\n", "gateway.max_body: \"4 megs\" is not a size", nil},
		{"size zero", "gateway:\n  max_body: 0\n", "gateway.max_body: must be more than 0", nil},
		{"unknown field", "gateway:\n  port: 8080\n", `gateway.port: unknown field "port"`, nil},
		{"route duration", "routes:\n  r: {chain: [groq/x], first_token: 5}\n", "routes.r.first_token: 5 has no unit", nil},
		{"direct models negative", "gateway:\n  max_direct_models: -1\n", "gateway.max_direct_models: max_direct_models cannot be negative", nil},
		{"body timeout zero", "gateway:\n  body_timeout: 0s\n", "gateway.body_timeout: must be more than 0", nil},
		{"drain delay without unit", "gateway:\n  drain_delay: 5\n", `gateway.drain_delay: 5 has no unit: write "5s"`, nil},
		{"drain delay negative", "gateway:\n  drain_delay: -1s\n", "gateway.drain_delay: cannot be negative", nil},
		{"drain delay not a duration", "gateway:\n  drain_delay: soon\n", `gateway.drain_delay: "soon" is not a duration`, nil},
		{"metrics listen", "gateway:\n  metrics_listen: 9090\n", `gateway.metrics_listen: metrics_listen "9090" is not host:port`, nil},
		{"metrics listen wide without a key", "gateway:\n  metrics_listen: 0.0.0.0:9090\n",
			`gateway.metrics_listen: metrics_listen "0.0.0.0:9090" is beyond loopback`, nil},
		{"metrics listen on every interface without a key", "gateway:\n  metrics_listen: :9090\n", "set metrics_key_env", nil},
		{"metrics key in the file", "gateway:\n  metrics_key_env: Abcdefghijklmnop1234567890xyz\n",
			"gateway.metrics_key_env: metrics_key_env takes the NAME", ErrKeyInFile},
		{"metrics key env not a name", "gateway:\n  metrics_key_env: METRICS-KEY\n",
			`metrics_key_env "METRICS-KEY" is not an environment variable name`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("detour.yaml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("err does not match %v", tt.sentinel)
			}
			if strings.Contains(err.Error(), "sk-proj-abcdefghijklmnopqrstuvwx") {
				t.Errorf("the key is repeated in the message: %v", err)
			}
		})
	}
}

func TestParse_GatewayDrainDelayAndMetrics(t *testing.T) {
	tests := []struct {
		name, src string
		want      Gateway
		delay     time.Duration // after WithDefaults
	}{
		{"left out: the default", "gateway:\n  drain_timeout: 10s\n", Gateway{DrainTimeout: 10 * time.Second}, DefaultDrainDelay},
		{"a duration", "gateway:\n  drain_delay: 2s\n", Gateway{DrainDelay: 2 * time.Second}, 2 * time.Second},
		{"0 turns it off", "gateway:\n  drain_delay: 0\n", Gateway{DrainDelay: -1}, -1},
		{"0s turns it off", "gateway:\n  drain_delay: 0s\n", Gateway{DrainDelay: -1}, -1},
		{"metrics on loopback", "gateway:\n  metrics_listen: 127.0.0.1:9090\n",
			Gateway{MetricsListen: "127.0.0.1:9090"}, DefaultDrainDelay},
		{"metrics on localhost", "gateway:\n  metrics_listen: localhost:0\n",
			Gateway{MetricsListen: "localhost:0"}, DefaultDrainDelay},
		{"metrics wide behind a key", "gateway:\n  metrics_listen: 0.0.0.0:9090\n  metrics_key_env: DETOUR_METRICS_KEY\n",
			Gateway{MetricsListen: "0.0.0.0:9090", MetricsKeyEnv: "DETOUR_METRICS_KEY"}, DefaultDrainDelay},
		{"metrics key alone", "gateway:\n  metrics_key_env: DETOUR_METRICS_KEY\n",
			Gateway{MetricsKeyEnv: "DETOUR_METRICS_KEY"}, DefaultDrainDelay},
		{"slow clients' limits", "gateway:\n  body_timeout: 300ms\n  write_timeout: 2s\n",
			Gateway{BodyTimeout: 300 * time.Millisecond, WriteTimeout: 2 * time.Second}, DefaultDrainDelay},
		{"direct models cap", "gateway:\n  max_direct_models: 16\n", Gateway{MaxDirectModels: 16}, DefaultDrainDelay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.src)
			if d := cmp.Diff(tt.want, c.Gateway); d != "" {
				t.Errorf("gateway (-want +got):\n%s", d)
			}
			if got := c.Gateway.WithDefaults().DrainDelay; got != tt.delay {
				t.Errorf("DrainDelay with defaults = %v, want %v", got, tt.delay)
			}
		})
	}
}
