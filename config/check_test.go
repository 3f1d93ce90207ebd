package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWarnings(t *testing.T) {
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want []string // substrings, one per warning, in order
	}{
		{
			name: "a healthy route draws none",
			src:  "routes:\n  r: {chain: [groq/llama-3.3-70b-versatile, deepseek/deepseek-chat]}\n",
			env:  map[string]string{"GROQ_API_KEY": "k", "DEEPSEEK_API_KEY": "k"},
		},
		{
			name: "one pool only",
			src:  "routes:\n  r: {chain: [groq/llama-3.3-70b-versatile, cerebras/llama-3.3-70b]}\n",
			env:  map[string]string{"GROQ_API_KEY": "k"},
			want: []string{`detour.yaml:2:3: route "r": every target bills from pool free`},
		},
		{
			name: "one target",
			src:  "routes:\n  r: {chain: [groq/llama-3.3-70b-versatile]}\n",
			env:  map[string]string{"GROQ_API_KEY": "k"},
			want: []string{`route "r" has one target`},
		},
		{
			name: "paid before free",
			src:  "routes:\n  r: {chain: [openai/gpt-4o-mini, deepseek/deepseek-chat, groq/llama-3.3-70b-versatile]}\n",
			env:  map[string]string{"GROQ_API_KEY": "k"},
			want: []string{`detour.yaml:2:15: route "r": chain[0] openai/gpt-4o-mini (payg, $0.15/$0.60 per M tokens) comes before the free chain[2] groq/llama-3.3-70b-versatile`},
		},
		{
			name: "no key at all",
			src:  "routes:\n  r: {chain: [groq/llama-3.3-70b-versatile, openrouter/meta-llama/llama-3.3-70b-instruct]}\n",
			want: []string{`route "r": no target has its key set, so every request fails: export GROQ_API_KEY or OPENROUTER_API_KEY`},
		},
		{
			name: "fallback false leaves other families unreachable, fail_closed_on without policy",
			src: "routes:\n  r:\n    chain: [groq/llama-3.3-70b-versatile, deepseek/deepseek-chat, openrouter/meta-llama/llama-3.3-70b-instruct]\n" +
				"    fallback: false\n    fail_closed_on: [invalid]\n",
			env: map[string]string{"GROQ_API_KEY": "k"},
			want: []string{
				`detour.yaml:4:5: route "r" has fallback: false, so only family llama-3.3-70b is used; never reached: deepseek/deepseek-chat`,
				`detour.yaml:5:5: route "r": fail_closed_on leaves out policy`,
			},
		},
		{
			name: "plain http key to a remote host",
			src: "providers:\n  gem: {dialect: gemini, key_env: GEMINI_API_KEY, pool: free}\n  lan: {base_url: http://10.0.0.5/v1, key_env: LAN_KEY}\n" +
				"routes:\n  r: {chain: [gem/gemini-2.5-flash, lan/m]}\n",
			env: map[string]string{"GEMINI_API_KEY": "k", "LAN_KEY": "k"},
			want: []string{
				`provider "lan": base_url is plain http to a remote host`,
			},
		},
		{
			name: "no routes",
			src:  "providers:\n  groq: {}\n",
			want: []string{`no routes: every request must name a target as provider/model`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustParse(t, tt.src).Warnings(env(tt.env))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d warnings, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d:\n got %s\nwant ...%s", i, got[i], w)
				}
			}
		})
	}
}

func TestKeys(t *testing.T) {
	c := mustParse(t, buildSrc)
	got := c.Keys(env(map[string]string{"GROQ_API_KEY": "secret-value"}))
	want := []KeyStatus{
		{Target: "groq/llama-3.3-70b-versatile", Provider: "groq", KeyEnv: "GROQ_API_KEY", State: KeySet},
		{Target: "mine/org/model-a", Provider: "mine", KeyEnv: "MINE_KEY", State: KeyMissing},
		{Target: "local/qwen2.5:7b", Provider: "local", State: KeyNotNeeded},
		{Target: "openrouter/meta-llama/llama-3.3-70b-instruct", Provider: "openrouter", KeyEnv: "OPENROUTER_API_KEY", State: KeyMissing},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Keys (-want +got):\n%s", diff)
	}
	var lines []string
	for _, k := range got {
		lines = append(lines, k.String())
	}
	wantLines := []string{"set (GROQ_API_KEY)", "missing MINE_KEY", "not needed", "missing OPENROUTER_API_KEY"}
	if diff := cmp.Diff(wantLines, lines); diff != "" {
		t.Errorf("KeyStatus.String (-want +got):\n%s", diff)
	}
}
