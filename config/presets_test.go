package config

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPresets_AreSound(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Presets() {
		t.Run(p.Name, func(t *testing.T) {
			if seen[p.Name] {
				t.Errorf("preset %q listed twice", p.Name)
			}
			seen[p.Name] = true
			u, err := url.Parse(p.BaseURL)
			if err != nil || u.Host == "" || strings.HasSuffix(p.BaseURL, "/") {
				t.Errorf("BaseURL %q: want an absolute URL without a trailing slash", p.BaseURL)
			}
			if u.Scheme != "https" && !(p.Pool == Local && isLoopback(u.Hostname())) {
				t.Errorf("BaseURL %q: want https for a remote provider", p.BaseURL)
			}
			if !strings.HasPrefix(p.Docs, "https://") {
				t.Errorf("Docs %q: want the source of the base URL", p.Docs)
			}
			if (p.KeyEnv == "") != (p.Pool == Local) || (p.KeyEnv != "" && !envVar.MatchString(p.KeyEnv)) {
				t.Errorf("KeyEnv %q with pool %s", p.KeyEnv, p.Pool)
			}
			if !slices.Contains(pools, string(p.Pool)) || !slices.Contains(dialects, string(p.Dialect)) {
				t.Errorf("pool %q, dialect %q", p.Pool, p.Dialect)
			}
			if p.Model == "" && p.Pool != Local && len(p.Models) == 0 {
				t.Error("no default model, and no models described")
			}
			for id, m := range p.Models {
				if m.Context <= 0 || m.MaxOutput <= 0 || m.Price.In < 0 || m.Price.Out < 0 || !strings.HasPrefix(m.Source, "https://") {
					t.Errorf("model %s: %+v: want its published context, output cap and source", id, m)
				}
			}
			if p.Price.In < 0 || p.Price.Out < 0 || (p.Pool == Free && p.Price != Price{}) {
				t.Errorf("price %+v in pool %s", p.Price, p.Pool)
			}
		})
	}
	// Every preset is usable by name in a file.
	var b strings.Builder
	b.WriteString("providers:\n")
	for _, p := range Presets() {
		b.WriteString("  " + p.Name + ":\n")
	}
	if _, err := Parse("detour.yaml", []byte(b.String())); err != nil {
		t.Errorf("declaring every preset by name: %v", err)
	}
}

func TestPresets_ReturnsACopy(t *testing.T) {
	Presets()[0].BaseURL = "http://evil.example"
	if p, _ := LookupPreset(Presets()[0].Name); p.BaseURL == "http://evil.example" {
		t.Error("changing Presets() changed the table")
	}
}

func TestDefault_FromEnvironment(t *testing.T) {
	all := map[string]string{}
	for _, p := range Presets() {
		if p.KeyEnv != "" {
			all[p.KeyEnv] = "k-" + p.Name
		}
	}
	tests := []struct {
		name      string
		env       map[string]string
		wantChain []string
		wantBase  map[string]string
	}{
		{name: "one free key", env: map[string]string{"GROQ_API_KEY": "k"},
			wantChain: []string{"groq/llama-3.3-70b-versatile"}},
		{name: "blank key counts as unset", env: map[string]string{"GROQ_API_KEY": "k", "OPENAI_API_KEY": "  "},
			wantChain: []string{"groq/llama-3.3-70b-versatile"}},
		{name: "pools in order, then cheapest first", env: all, wantChain: []string{
			"groq/llama-3.3-70b-versatile", "cerebras/llama-3.3-70b", "gemini/gemini-2.5-flash", // free
			"openrouter/meta-llama/llama-3.3-70b-instruct", // credit
			"mistral/mistral-small-latest", "openai/gpt-4o-mini", "xai/grok-3-mini",
			"fireworks/accounts/fireworks/models/llama-v3p3-70b-instruct", // payg
			"deepseek/deepseek-chat", "together/meta-llama/Llama-3.3-70B-Instruct-Turbo", "anthropic/claude-haiku-4-5", // prepaid
		}},
		{name: "ollama only when its model is named",
			env:       map[string]string{"DEEPSEEK_API_KEY": "k", "DETOUR_OLLAMA_MODEL": "qwen2.5:7b", "OLLAMA_HOST": "0.0.0.0:11500"},
			wantChain: []string{"deepseek/deepseek-chat", "ollama/qwen2.5:7b"},
			wantBase:  map[string]string{"ollama": "http://127.0.0.1:11500/v1", "deepseek": "https://api.deepseek.com"}},
		{name: "OLLAMA_HOST alone adds nothing", env: map[string]string{"XAI_API_KEY": "k", "OLLAMA_HOST": "127.0.0.1"},
			wantChain: []string{"xai/grok-3-mini"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Default(env(tt.env))
			if err != nil {
				t.Fatalf("Default: %v", err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("Default config does not validate: %v", err)
			}
			r := c.Routes[DefaultRoute]
			if diff := cmp.Diff(tt.wantChain, r.Chain); diff != "" {
				t.Errorf("chain (-want +got):\n%s", diff)
			}
			if r.BudgetName != "interactive" || len(c.Routes) != 1 {
				t.Errorf("routes = %+v", c.Routes)
			}
			for name, base := range tt.wantBase {
				if got := c.Providers[name].BaseURL; got != base {
					t.Errorf("%s base URL = %q, want %q", name, got, base)
				}
			}
		})
	}
}

func TestDefault_NoKeysSaysWhatToSet(t *testing.T) {
	_, err := Default(env(map[string]string{"OLLAMA_HOST": "127.0.0.1"}))
	if !errors.Is(err, ErrNoKeys) {
		t.Fatalf("err = %v, want ErrNoKeys", err)
	}
	for _, want := range []string{"GROQ_API_KEY (free tier)", "OPENROUTER_API_KEY", "DETOUR_OLLAMA_MODEL", "detour demo", "examples/detour.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%v", want, err)
		}
	}
}

func TestOllamaBaseURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"127.0.0.1:11434", "http://127.0.0.1:11434/v1"},
		{"0.0.0.0", "http://127.0.0.1:11434/v1"},
		{"[::]:8080", "http://127.0.0.1:8080/v1"},
		{"gpu.lan", "http://gpu.lan:11434/v1"},
		{"http://gpu.lan:8080/", "http://gpu.lan:8080/v1"},
		{"https://ollama.example.com/proxy", "https://ollama.example.com:443/proxy/v1"},
		{"http://ollama.example.com", "http://ollama.example.com:80/v1"},
	}
	for _, tt := range tests {
		if got := ollamaBaseURL(tt.in); got != tt.want {
			t.Errorf("ollamaBaseURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
