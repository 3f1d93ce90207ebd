package config

import (
	"testing"
	"time"
)

// max_buffer reaches the route, from the route or from defaults:, with a
// unit; health.forget reaches the breaker's settings.
func TestParse_MaxBufferAndForget(t *testing.T) {
	c := mustParse(t, `providers:
  local: {dialect: openai, base_url: "http://127.0.0.1:9/v1", key_env: ""}
defaults:
  max_buffer: 512KiB
routes:
  a: {chain: [local/m], buffered: true, max_buffer: 2MiB, over_buffer: fail_over}
  b: {chain: [local/m], buffered: true}
health:
  forget: 20m
`)
	routes, err := c.Build(BuildOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if got := routes["a"].MaxBuffer; got != 2<<20 {
		t.Errorf("route a max_buffer %d, want 2 MiB", got)
	}
	if !routes["a"].FailOverPastBuffer || routes["b"].FailOverPastBuffer {
		t.Errorf("over_buffer: a fails over %v, b %v; want only a", routes["a"].FailOverPastBuffer, routes["b"].FailOverPastBuffer)
	}
	if got := routes["b"].MaxBuffer; got != 512<<10 {
		t.Errorf("route b max_buffer %d, want the defaults' 512 KiB", got)
	}
	if c.Health.Settings.Forget != 20*time.Minute {
		t.Errorf("health.forget %s, want 20m", c.Health.Settings.Forget)
	}
	wantProblems(t, "routes:\n  a: {chain: [groq/m], over_buffer: failover}\n",
		`detour.yaml:2:37: routes.a.over_buffer: "failover" is not what a buffered stream can do past max_buffer: write stream (send what it holds, stream the rest) or fail_over (drop it, try the next candidate) (did you mean "fail_over"?)`)
	wantProblems(t, "routes:\n  a: {chain: [groq/m], max_buffer: lots}\n", `detour.yaml:2:36: routes.a.max_buffer: "lots" is not a size: write bytes, or a number and a unit (B, KB, KiB, MB, MiB, GB, GiB), like 8MiB`)
}
