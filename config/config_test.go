package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/policy"
)

// env returns a getenv reading m; the real environment is never read.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// mustParse parses src as detour.yaml or fails the test.
func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	c, err := Parse("detour.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

var ignorePos = cmpopts.IgnoreUnexported(Config{})

func TestParse_GoodConfigs(t *testing.T) {
	interactive := policy.Interactive()
	batch := policy.Batch()
	tests := []struct {
		name string
		src  string
		want *Config
	}{
		{
			name: "empty file",
			src:  "# nothing yet\n",
			want: &Config{File: "detour.yaml", Providers: map[string]Provider{}, Targets: map[string]Target{}, Routes: map[string]Route{}},
		},
		{
			name: "preset used without declaring it",
			src:  "routes:\n  default:\n    chain: [groq/llama-3.3-70b-versatile]\n",
			want: &Config{File: "detour.yaml", Providers: map[string]Provider{}, Targets: map[string]Target{},
				Routes: map[string]Route{"default": {Name: "default", Chain: []string{"groq/llama-3.3-70b-versatile"},
					RouteSettings: RouteSettings{BudgetName: "interactive", Budget: interactive}}}},
		},
		{
			name: "preset fields overridden, second account, no key, model with slashes and colons",
			src: `providers:
  groq: {pool: payg}
  groq2: {preset: groq, key_env: GROQ_API_KEY_2}
  local: {base_url: http://127.0.0.1:11434/v1/, key_env: "", pool: local}
  ollama:
    key_env: null
targets:
  openrouter/meta-llama/llama-3.3-70b-instruct: {family: llama-3.3-70b, context: 131072, max_output: 4096, price: {in: 0.12, out: 0.3}}
  "local/qwen2.5:7b": {family: qwen}
routes:
  r:
    chain:
      - groq2/llama-3.3-70b-versatile
      - openrouter/meta-llama/llama-3.3-70b-instruct
      - local/qwen2.5:7b
    fallback: false
    fail_closed_on: []
`,
			want: &Config{File: "detour.yaml",
				Providers: map[string]Provider{
					"groq":   {Name: "groq", Preset: "groq", Dialect: OpenAI, BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY", Pool: Payg},
					"groq2":  {Name: "groq2", Preset: "groq", Dialect: OpenAI, BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY_2", Pool: Free},
					"local":  {Name: "local", Dialect: OpenAI, BaseURL: "http://127.0.0.1:11434/v1/", Pool: Local},
					"ollama": {Name: "ollama", Preset: "ollama", Dialect: OpenAI, BaseURL: "http://127.0.0.1:11434/v1", Pool: Local},
				},
				Targets: map[string]Target{
					"openrouter/meta-llama/llama-3.3-70b-instruct": {Provider: "openrouter", Model: "meta-llama/llama-3.3-70b-instruct",
						Family: "llama-3.3-70b", Context: 131072, MaxOutput: 4096, Price: Price{In: 0.12, Out: 0.3}},
					"local/qwen2.5:7b": {Provider: "local", Model: "qwen2.5:7b", Family: "qwen"},
				},
				Routes: map[string]Route{"r": {Name: "r", Chain: []string{"groq2/llama-3.3-70b-versatile",
					"openrouter/meta-llama/llama-3.3-70b-instruct", "local/qwen2.5:7b"},
					RouteSettings: RouteSettings{BudgetName: "interactive", Budget: interactive, NoFallback: true,
						FailClosedOn: []classify.Kind{}}}},
			},
		},
		{
			name: "anchors and merge keys",
			src: `routes:
  a: &r
    chain: [groq/x, deepseek/deepseek-chat]
    budget: &b {profile: batch, reserve: 1m, max_attempts: 3}
    fail_closed_on: [wall, policy]
  b:
    <<: *r
    budget: *b
    fallback: false
  c: {chain: [groq/x], budget: {deadline: 90s, max_per_target: 1, max_extra_cost: 0.25, queue: true, max_retry_wait: 2s}}
`,
			want: func() *Config {
				b := batch
				b.Reserve, b.MaxAttempts = time.Minute, 3
				c := interactive
				c.Deadline, c.MaxPerTarget, c.MaxExtraCost, c.Queue = 90*time.Second, 1, 0.25, true
				c.MaxRetryWait = 2 * time.Second
				fc := []classify.Kind{classify.Wall, classify.Policy}
				return &Config{File: "detour.yaml", Providers: map[string]Provider{}, Targets: map[string]Target{},
					Routes: map[string]Route{
						"a": {Name: "a", Chain: []string{"groq/x", "deepseek/deepseek-chat"},
							RouteSettings: RouteSettings{Budget: b, FailClosedOn: fc}},
						"b": {Name: "b", Chain: []string{"groq/x", "deepseek/deepseek-chat"},
							RouteSettings: RouteSettings{Budget: b, FailClosedOn: fc, NoFallback: true}},
						"c": {Name: "c", Chain: []string{"groq/x"}, RouteSettings: RouteSettings{Budget: c}},
					}}
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("detour.yaml", []byte(tt.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, c, ignorePos); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoad_ExampleFile(t *testing.T) {
	c, err := Load("../examples/detour.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := c.RouteNames(), []string{"default", "llama-only", "nightly"}; !cmp.Equal(got, want) {
		t.Errorf("routes = %v, want %v", got, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	keys := map[string]string{"GROQ_API_KEY": "gsk_test", "GROQ_API_KEY_2": "gsk_test2", "OPENROUTER_API_KEY": "sk-or-test",
		"DEEPSEEK_API_KEY": "sk-ds-test", "CEREBRAS_API_KEY": "csk-test"}
	if w := c.Warnings(env(keys)); len(w) != 0 {
		t.Errorf("the example should draw no warning with every key set; got:\n%v", w)
	}
	routes, err := c.Build(BuildOptions{Getenv: env(keys)})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if n := len(routes["default"].Chain); n != 5 {
		t.Errorf("default chain has %d targets, want 5", n)
	}
	if r := routes["llama-only"]; r.Budget.Deadline != 45*time.Second || r.HeaderTimeout != 20*time.Second || r.FirstToken != 30*time.Second {
		t.Errorf("llama-only did not take the example's defaults: %+v", r)
	}
	if r := routes["nightly"]; r.Budget.Deadline != 30*time.Minute || r.IdleTimeout != -1 || r.MaxDuration != 10*time.Minute || !r.Buffered {
		t.Errorf("nightly: %+v", r)
	}
	if c.Health.FailureThreshold != 3 || c.Health.OpenFor != 10*time.Second || c.Health.ProbeTimeout != 2*time.Minute {
		t.Errorf("health: %+v", c.Health)
	}
}

func TestLoad_MissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: err = %v, want os.ErrNotExist", err)
	}
}

func TestPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	tests := []struct {
		name   string
		flag   string
		env    map[string]string
		create bool
		want   string
	}{
		{name: "flag wins", flag: "a.yaml", env: map[string]string{"DETOUR_CONFIG": "b.yaml"}, create: true, want: "a.yaml"},
		{name: "env next", env: map[string]string{"DETOUR_CONFIG": "b.yaml"}, create: true, want: "b.yaml"},
		{name: "working dir file", create: true, want: "detour.yaml"},
		{name: "nothing", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(FileName)
			if tt.create {
				if err := os.WriteFile(FileName, []byte("routes: {}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got := Path(tt.flag, env(tt.env)); got != tt.want {
				t.Errorf("Path = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOpen_FileOrDefault(t *testing.T) {
	t.Chdir(t.TempDir())
	c, err := Open("", env(map[string]string{"GROQ_API_KEY": "k"}))
	if err != nil {
		t.Fatalf("Open without a file: %v", err)
	}
	if c.File != "" || len(c.Routes[DefaultRoute].Chain) != 1 {
		t.Errorf("Open without a file: want the Default config, got %+v", c)
	}
	if err := os.WriteFile("mine.yaml", []byte("routes: {r: {chain: [groq/x]}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Open("mine.yaml", env(nil))
	if err != nil {
		t.Fatalf("Open(mine.yaml): %v", err)
	}
	if _, ok := c.Routes["r"]; !ok || c.File != "mine.yaml" {
		t.Errorf("Open(mine.yaml) = %+v", c)
	}
}

func TestValidate_ConfigBuiltInCode(t *testing.T) {
	c := &Config{
		Providers: map[string]Provider{"mine": {Name: "mine", KeyEnv: "sk-abcdefghijklmnopqrstuvwxyz"}},
		Routes:    map[string]Route{"r": {Name: "r", Chain: []string{"nope/x"}}},
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate: want errors")
	}
	want := "providers.mine: base_url is missing"
	if got := err.Error(); !contains(got, want) || !contains(got, "routes.r.chain[0]: unknown provider \"nope\"") {
		t.Errorf("Validate:\n%s\nwant lines without positions, like %q", got, want)
	}
	if contains(err.Error(), "abcdefghijklmnop") {
		t.Errorf("the key leaked into the error: %v", err)
	}
	if !errors.Is(err, ErrKeyInFile) {
		t.Errorf("errors.Is(err, ErrKeyInFile) = false")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
