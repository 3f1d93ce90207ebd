package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary documents to the loader: it must never panic, a
// failure is always Errors of positioned problems (a limit passed, one
// problem at its line), and a success builds.
func FuzzLoad(f *testing.F) {
	if data, err := os.ReadFile("../examples/detour.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(buildSrc))
	f.Add([]byte("routes:\n  r: &a {chain: [groq/x]}\n  s: {<<: *a, fallback: false}\n"))
	f.Add([]byte("providers:\n  groq: {api_key: sk-abcdefghijklmnopqrstuvwxyz}\n"))
	f.Add([]byte("routes: {r: {chain: [a/b], budget: {deadline: 30, <<: [*x]}}}\n"))
	f.Add([]byte("a: &a [*a]\n---\n- x\n"))
	f.Add([]byte("defaults: {budget: {deadline: 30s}, idle_timeout: 0, fallback: false}\n" +
		"health: {failure_threshold: 2, open_for: 5s}\nroutes: {r: {chain: [groq/x, deepseek/y], budget: {max_attempts: 1}}}\n"))
	// The input limits, and the checks that came with them.
	f.Add([]byte("a: " + strings.Repeat("[", 70)))
	f.Add([]byte(strings.Repeat("- ", 70) + "x\n"))
	f.Add([]byte(nested(70)))
	f.Add([]byte("-\n0:\n-\n0:\n-\n0:\n"))
	f.Add([]byte("providers:\n  p: {base_url: https://p.example/v1, headers: {X-A: \"a\\r\\nb\", Host: x}}\n"))
	f.Add([]byte("routes:\n  r: {chain: [groq/x], budget: {deadline: 5s}}\n"))
	f.Add([]byte("gateway: {listen: \":8787\", keys: {app: {key_env: APP_KEY}}}\n"))
	f.Add([]byte("gateway: {idempotency_max_records: 10, idempotency_max_bytes: 1MiB, cache_max_answers: 0, " +
		"cache_max_bytes: 2KB, buffered_max_bytes: -1}\n"))
	f.Add([]byte("providers:\n  p: {base_url: https://p.example/v1, limits: {rpm: 3, tpd: -1}}\n" +
		"targets:\n  p/m: {limits: {rph: 99999999999999999999, rps: 1}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data)
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Parse error is %T %v, want non-empty Errors", err, err)
			}
			if errors.Is(err, ErrLimit) && (len(errs) != 1 || errs[0].Line < 1) {
				t.Fatalf("a limit passed is one problem with its line, got %v", err)
			}
			for _, e := range errs {
				if !strings.HasPrefix(e.Error(), "f.yaml") || e.Msg == "" {
					t.Fatalf("problem without file or message: %q", e.Error())
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config Validate refuses: %v", err)
		}
		_ = c.Warnings(env(nil))
		_ = c.Keys(env(nil))
		if err := c.CheckServe(func(string) string { return "k" }); err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("CheckServe error is %T %v, want non-empty Errors", err, err)
			}
		}
		if _, err := c.Build(BuildOptions{Getenv: env(nil)}); err != nil {
			t.Fatalf("Build of a valid config: %v", err)
		}
	})
}
