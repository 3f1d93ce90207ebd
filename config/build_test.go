package config

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/wire/anthropic"
	"github.com/detourhq/detour/wire/gemini"
	"github.com/detourhq/detour/wire/openai"
)

const buildSrc = `providers:
  groq: {}
  mine: {base_url: https://llm.example/v1/, key_env: MINE_KEY, pool: prepaid, headers: {X-Title: detour}}
  local: {base_url: http://127.0.0.1:11434/v1, key_env: "", pool: local}
targets:
  mine/org/model-a: {family: fam, context: 1000, max_output: 100, price: {in: 1, out: 2}}
routes:
  default:
    chain: [groq/llama-3.3-70b-versatile, mine/org/model-a, local/qwen2.5:7b, openrouter/meta-llama/llama-3.3-70b-instruct]
    budget: batch
    fail_closed_on: [invalid]
    fallback: false
  other: {chain: [mine/org/model-a]}
`

func TestBuild_TargetsFromConfigPresetsAndEnv(t *testing.T) {
	c := mustParse(t, buildSrc)
	hc := &http.Client{}
	getenv := env(map[string]string{"GROQ_API_KEY": "gsk-test", "MINE_KEY": " mine-key\n"})
	routes, err := c.Build(BuildOptions{Getenv: getenv, HTTPClient: hc})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if len(routes) != 2 {
		t.Fatalf("Build made %d routes, want 2", len(routes))
	}
	r := routes["default"]
	want := &router.Route{
		Name: "default", Budget: policy.Batch(), FailClosedOn: []classify.Kind{classify.Invalid}, NoFallback: true,
		Chain: []router.Target{
			{Provider: "groq", Model: "llama-3.3-70b-versatile", Family: "llama-3.3-70b", Pool: "free", Dialect: "openai",
				KeyEnv: "GROQ_API_KEY", Context: 131072, MaxOutput: 32768, Account: "groq", Endpoint: "api.groq.com:443",
				Quotas: []router.Quota{{Key: "groq/llama-3.3-70b-versatile", Source: "the groq preset's free tier",
					Limits: router.Limits{RPM: 30, RPD: 1000, TPM: 12000, TPD: 100000}}}},
			{Provider: "mine", Model: "org/model-a", Family: "fam", Pool: "prepaid", Dialect: "openai", KeyEnv: "MINE_KEY",
				PriceIn: 1, PriceOut: 2, Context: 1000, MaxOutput: 100, Account: "mine", Endpoint: "llm.example:443"},
			{Provider: "local", Model: "qwen2.5:7b", Pool: "local", Dialect: "openai", Account: "local", Endpoint: "127.0.0.1:11434"},
			{Provider: "openrouter", Model: "meta-llama/llama-3.3-70b-instruct", Family: "llama-3.3-70b", Pool: "credit",
				Dialect: "openai", KeyEnv: "OPENROUTER_API_KEY", PriceIn: 0.12, PriceOut: 0.30, Context: 131072,
				Account: "openrouter", Endpoint: "openrouter.ai:443"},
		},
	}
	if diff := cmp.Diff(want, r, cmpopts.IgnoreFields(router.Target{}, "Client")); diff != "" {
		t.Errorf("route (-want +got):\n%s", diff)
	}
	wantClients := []*openai.Client{
		{BaseURL: "https://api.groq.com/openai/v1", APIKey: "gsk-test", HTTPClient: hc},
		{BaseURL: "https://llm.example/v1", APIKey: "mine-key", HTTPClient: hc, Header: http.Header{"X-Title": {"detour"}}},
		{BaseURL: "http://127.0.0.1:11434/v1", HTTPClient: hc},
		nil, // OPENROUTER_API_KEY is unset: the router skips the target
	}
	for i, w := range wantClients {
		got := r.Chain[i].Client
		if w == nil {
			if got != nil {
				t.Errorf("chain[%d].Client = %#v, want nil (key unset)", i, got)
			}
			continue
		}
		oc, ok := got.(*openai.Client)
		if !ok {
			t.Fatalf("chain[%d].Client is %T, want *openai.Client", i, got)
		}
		if diff := cmp.Diff(w, oc, cmp.Comparer(func(a, b *http.Client) bool { return a == b })); diff != "" {
			t.Errorf("chain[%d] client (-want +got):\n%s", i, diff)
		}
	}
	if got := routes["other"].Budget; got != policy.Interactive() {
		t.Errorf("other: budget %+v, want interactive", got)
	}
}

func TestBuild_EachDialectGetsItsClient(t *testing.T) {
	c := mustParse(t, `providers:
  gem: {dialect: gemini, key_env: GEMINI_API_KEY, pool: free}
  ant: {dialect: anthropic, key_env: ANTHROPIC_API_KEY, pool: prepaid}
  oai: {dialect: openai, base_url: https://api.example.com/v1, key_env: OAI_KEY}
routes:
  default: {chain: [gem/gemini-2.5-flash, ant/claude-haiku-4-5, oai/m]}
`)
	routes, err := c.Build(BuildOptions{Getenv: env(map[string]string{"GEMINI_API_KEY": "g-key-123456", "ANTHROPIC_API_KEY": "a-key-123456", "OAI_KEY": "o-key-123456"})})
	if err != nil {
		t.Fatal(err)
	}
	chain := routes["default"].Chain
	if _, ok := chain[0].Client.(*gemini.Client); !ok {
		t.Errorf("gem: client %T, want *gemini.Client", chain[0].Client)
	}
	if _, ok := chain[1].Client.(*anthropic.Client); !ok {
		t.Errorf("ant: client %T, want *anthropic.Client", chain[1].Client)
	}
	if _, ok := chain[2].Client.(*openai.Client); !ok {
		t.Errorf("oai: client %T, want *openai.Client", chain[2].Client)
	}
	for i, want := range []string{"gemini", "anthropic", "openai"} {
		if chain[i].Dialect != want {
			t.Errorf("chain[%d].Dialect = %q, want %q", i, chain[i].Dialect, want)
		}
	}
}

func TestTargetRoute_ModelWithSlashes(t *testing.T) {
	c := mustParse(t, buildSrc)
	getenv := env(map[string]string{"OPENROUTER_API_KEY": "sk-or-v1-test", "MINE_KEY": "mine-key-1"})
	tests := []struct {
		addr, provider, model string
	}{
		{"openrouter/meta-llama/llama-3.3-70b-instruct", "openrouter", "meta-llama/llama-3.3-70b-instruct"},
		{"mine/org/model-a", "mine", "org/model-a"},
		{"fireworks/accounts/fireworks/models/llama-v3p3-70b-instruct", "fireworks", "accounts/fireworks/models/llama-v3p3-70b-instruct"},
		{"local/qwen2.5:7b", "local", "qwen2.5:7b"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			r, err := c.TargetRoute(tt.addr, BuildOptions{Getenv: getenv})
			if err != nil {
				t.Fatalf("TargetRoute: %v", err)
			}
			if r.Name != tt.addr || len(r.Chain) != 1 || r.Budget != policy.Interactive() {
				t.Fatalf("route = %+v", r)
			}
			if got := r.Chain[0]; got.Provider != tt.provider || got.Model != tt.model || got.ID() != tt.addr {
				t.Errorf("target = %s + %s, want %s + %s", got.Provider, got.Model, tt.provider, tt.model)
			}
		})
	}
	if r, _ := c.TargetRoute("mine/org/model-a", BuildOptions{Getenv: getenv}); r.Chain[0].Family != "fam" {
		t.Errorf("TargetRoute ignored the targets: entry: %+v", r.Chain[0])
	}
	for _, bad := range []struct {
		addr string
		is   error
		msg  string
	}{
		{"nope/x", ErrUnknownProvider, `unknown provider "nope"`},
		{"groqq/x", ErrUnknownProvider, `did you mean "groq"?`},
		{"llama", ErrUnknownRoute, `"llama" is not a target: write provider/model`},
		{"groq/", ErrUnknownRoute, `is not a target`},
	} {
		_, err := c.TargetRoute(bad.addr, BuildOptions{Getenv: getenv})
		if !errors.Is(err, bad.is) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("TargetRoute(%q): err = %v, want %v containing %q", bad.addr, err, bad.is, bad.msg)
		}
	}
}

func TestLookup(t *testing.T) {
	c := mustParse(t, buildSrc)
	opts := BuildOptions{Getenv: env(nil)}
	r, err := c.Lookup("default", opts)
	if err != nil || r.Name != "default" || len(r.Chain) != 4 {
		t.Fatalf("Lookup(default) = %+v, %v", r, err)
	}
	r, err = c.Lookup("deepseek/deepseek-chat", opts)
	if err != nil || r.Name != "deepseek/deepseek-chat" || r.Chain[0].Pool != "prepaid" {
		t.Fatalf("Lookup(deepseek/deepseek-chat) = %+v, %v", r, err)
	}
	_, err = c.Lookup("defualt", opts)
	if !errors.Is(err, ErrUnknownRoute) {
		t.Fatalf("Lookup(defualt): err = %v, want ErrUnknownRoute", err)
	}
	want := `detour.yaml: unknown route "defualt" (did you mean "default"? routes are: default, other); name a route, or a target as provider/model`
	if err.Error() != want {
		t.Errorf("Lookup(defualt):\n got %v\nwant %s", err, want)
	}
	if _, err := c.Lookup("grq/x", opts); !errors.Is(err, ErrUnknownProvider) || !strings.Contains(err.Error(), `did you mean "groq"?`) {
		t.Errorf("Lookup(grq/x): err = %v, want ErrUnknownProvider with a suggestion", err)
	}
}

func TestBuild_DefaultConfig(t *testing.T) {
	c, err := Default(env(map[string]string{"CEREBRAS_API_KEY": "csk-test", "TOGETHER_API_KEY": "tk"}))
	if err != nil {
		t.Fatal(err)
	}
	routes, err := c.Build(BuildOptions{Getenv: env(map[string]string{"CEREBRAS_API_KEY": "csk-test"})})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	ch := routes[DefaultRoute].Chain
	if len(ch) != 2 || ch[0].ID() != "cerebras/llama-3.3-70b" || ch[0].Client == nil || ch[1].Client != nil {
		t.Errorf("chain = %+v", ch)
	}
	if ch[1].PriceIn != 0.88 || ch[1].Family != "llama-3.3-70b" {
		t.Errorf("together target lacks the preset's detail: %+v", ch[1])
	}
}
