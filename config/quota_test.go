package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/router"
)

// limits: under a target and a provider become the target's quotas: its
// own, its account's, and the free pool a preset keeps apart; a preset's
// default model comes with its free tier's figures, which a targets:
// entry replaces.
func TestBuild_LimitsBecomeQuotas(t *testing.T) {
	c := mustParse(t, `providers:
  groq: {}
  cerebras: {}
  openrouter: {}
  mine: {base_url: https://llm.example/v1, key_env: MINE_KEY, limits: {rpd: 500, tpm: 40000}}
targets:
  mine/a: {limits: {rpm: 3, rph: 100, tph: 9000, tpd: 100000}}
  cerebras/llama-3.3-70b: {context: 8192}
routes:
  default:
    chain: [mine/a, mine/b, groq/llama-3.3-70b-versatile, cerebras/llama-3.3-70b, openrouter/meta-llama/llama-3.3-70b-instruct:free]
`)
	routes, err := c.Build(BuildOptions{Getenv: env(map[string]string{"MINE_KEY": "mine-key-0123456789"})})
	if err != nil {
		t.Fatal(err)
	}
	account := router.Quota{Key: "account:mine", Source: "providers.mine.limits", Limits: router.Limits{RPD: 500, TPM: 40000}}
	want := [][]router.Quota{
		{{Key: "mine/a", Source: "targets.mine/a.limits", Limits: router.Limits{RPM: 3, RPH: 100, TPH: 9000, TPD: 100000}}, account},
		{account},
		{{Key: "groq/llama-3.3-70b-versatile", Source: "the groq preset's free tier",
			Limits: router.Limits{RPM: 30, RPD: 1000, TPM: 12000, TPD: 100000}}},
		nil, // the file's targets: entry replaces the preset's detail, limits included
		{{Key: "account:openrouter:free", Source: "the openrouter preset's :free models", Limits: router.Limits{RPM: 20}}},
	}
	var got [][]router.Quota
	for _, tg := range routes["default"].Chain {
		got = append(got, tg.Quotas)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("quotas (-want +got):\n%s", diff)
	}
}

// A limit is a whole number, 0 or more, of a known window; anything else
// is refused with its line and the windows there are.
func TestParse_LimitsErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"negative", "targets:\n  groq/m: {limits: {rpm: -1}}\n", `detour.yaml:2:26: targets["groq/m"].limits.rpm: rpm is negative`},
		{"not a number", "providers:\n  groq: {limits: {tpd: lots}}\n", "detour.yaml:2:24: providers.groq.limits.tpd: expected a whole number"},
		{"unknown window", "providers:\n  groq: {limits: {rps: 1}}\n",
			`providers.groq.limits.rps: unknown field "rps" (did you mean "rpm"? fields are: rpm, rph, rpd, tpm, tph, tpd)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("detour.yaml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// Every preset's limits come with the page that publishes them, and only
// a free tier declares any.
func TestPresets_LimitsHaveTheirSource(t *testing.T) {
	for _, p := range Presets() {
		has := !p.Limits.IsZero() || !p.FreeLimits.IsZero()
		if has != (p.LimitsSource != "") || has && !strings.HasPrefix(p.LimitsSource, "https://") {
			t.Errorf("%s: limits %+v, free %+v, source %q: want limits and their https source together", p.Name, p.Limits,
				p.FreeLimits, p.LimitsSource)
		}
		if !p.Limits.IsZero() && p.Pool != Free {
			t.Errorf("%s: limits on pool %s: only free tiers publish a floor every account has", p.Name, p.Pool)
		}
		if (p.FreeSuffix == "") != p.FreeLimits.IsZero() {
			t.Errorf("%s: FreeSuffix %q with FreeLimits %+v", p.Name, p.FreeSuffix, p.FreeLimits)
		}
	}
}
