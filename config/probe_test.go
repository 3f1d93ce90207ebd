package config

import (
	"strings"
	"testing"
	"time"
)

func TestParse_ProbeSection(t *testing.T) {
	c := mustParse(t, `providers:
  groq: {key_env: GROQ_API_KEY}
routes:
  default:
    chain: [groq/llama-3.3-70b-versatile]
    probe: generate
  plain:
    chain: [groq/llama-3.3-70b-versatile]
probe:
  every: 5m
  timeout: 3s
  generate_every: 2h
`)
	if c.Probe != (Probe{Every: 5 * time.Minute, Timeout: 3 * time.Second, GenerateEvery: 2 * time.Hour}) {
		t.Fatalf("Probe = %+v", c.Probe)
	}
	if !c.Routes["default"].ProbeGenerate || c.Routes["plain"].ProbeGenerate {
		t.Fatalf("ProbeGenerate: default %v, plain %v; want true, false", c.Routes["default"].ProbeGenerate, c.Routes["plain"].ProbeGenerate)
	}
	if d := (Probe{}).WithDefaults(); d.Timeout != DefaultProbeTimeout || d.GenerateEvery != DefaultGenerateEvery || d.Every != 0 {
		t.Fatalf("Probe{}.WithDefaults() = %+v", d)
	}
}

func TestParse_ProbeProblems(t *testing.T) {
	head := "providers:\n  groq: {key_env: GROQ_API_KEY}\nroutes:\n  default:\n    chain: [groq/m]\n"
	for _, c := range []struct{ src, want string }{
		{"probe: {every: 5s}", "probe.every: 5s is too often"},
		{"probe: {generate_every: 1m}", "probe.generate_every: 1m0s is too often"},
		{"probe: {timeout: 10m}", "probe.timeout: 10m0s is not a wait"},
		{"probe: {evry: 5m}", `unknown field "evry" (did you mean "every"?`},
		{"", ""},
	} {
		src := head + c.src + "\n"
		if c.src == "" {
			src = strings.Replace(head, "chain: [groq/m]", "chain: [groq/m]\n    probe: always", 1)
			c.want = "routes.default.probe"
		}
		_, err := Parse("detour.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.src, err, c.want)
		}
	}
}
