package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// wantErr is one expected problem: the message starts with at (file, line,
// column and field) and contains hint (how to fix it).
type wantErr struct {
	at, hint string
}

func TestParse_Errors(t *testing.T) {
	const key = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"
	tests := []struct {
		name string
		src  string
		want []wantErr
		is   error
	}{
		{
			name: "unknown provider in a chain",
			src: `providers:
  groq: {}
  openrouter: {}
routes:
  default:
    chain: [groq/llama, openrouter/x, groqq/llama-3.3]
`,
			want: []wantErr{{`detour.yaml:6:39: routes.default.chain[2]: unknown provider "groqq"`,
				`(did you mean "groq"? providers are: groq, openrouter; presets: cerebras,`}},
			is: ErrUnknownProvider,
		},
		{
			name: "key written in an api_key field",
			src:  "providers:\n  groq:\n    api_key: " + key + "\n",
			want: []wantErr{{`detour.yaml:3:5: providers.groq.api_key: keys never go in this file`,
				`export GROQ_API_KEY=...) and write key_env: GROQ_API_KEY`}},
			is: ErrKeyInFile,
		},
		{
			name: "key written as the key_env value",
			src:  "providers:\n  groq: {key_env: gsk_abcdefghijklmnopqrstuvwxyz}\n",
			want: []wantErr{{`detour.yaml:2:19: providers.groq.key_env: this looks like an API key`,
				`write key_env: GROQ_API_KEY`}},
			is: ErrKeyInFile,
		},
		{
			name: "key without a known prefix in key_env",
			src:  "providers:\n  mistral: {key_env: Ab3dEfGh1jKlMn0pQrStUvWxYz12}\n",
			want: []wantErr{{`detour.yaml:2:22: providers.mistral.key_env: key_env takes the NAME of an environment variable`,
				`export MISTRAL_API_KEY=... and write key_env: MISTRAL_API_KEY`}},
			is: ErrKeyInFile,
		},
		{
			name: "key in an Authorization header",
			src:  "providers:\n  openrouter:\n    headers: {Authorization: secret}\n",
			want: []wantErr{{`detour.yaml:3:15: providers.openrouter.headers.Authorization: header Authorization carries a key`,
				`write key_env: OPENROUTER_API_KEY`}},
			is: ErrKeyInFile,
		},
		{
			name: "key in the base_url query",
			src:  "providers:\n  g: {base_url: \"https://example.com/v1?key=abc\"}\n",
			want: []wantErr{{`detour.yaml:2:17: providers.g.base_url: base_url carries a key in ?key=`,
				`write key_env: G_API_KEY`}},
			is: ErrKeyInFile,
		},
		{
			name: "bad dialect",
			src:  "providers:\n  x: {dialect: opnai, base_url: https://x.example/v1}\n",
			want: []wantErr{{`detour.yaml:2:16: providers.x.dialect: unknown dialect "opnai"`,
				`(did you mean "openai"? dialects are: openai, anthropic, gemini, openai-responses)`}},
		},
		{
			name: "missing base_url for a provider that is not a preset",
			src:  "providers:\n  mine: {key_env: MINE_KEY, pool: payg}\n",
			want: []wantErr{{`detour.yaml:2:3: providers.mine: base_url is missing`,
				`like base_url: https://api.example.com/v1 (or copy a preset with preset: NAME`}},
		},
		{
			name: "base_url that is not a URL, and one with the endpoint path",
			src:  "providers:\n  a: {base_url: api.example.com}\n  b: {base_url: https://b.example/v1/chat/completions}\n",
			want: []wantErr{
				{`detour.yaml:2:17: providers.a.base_url: base_url "api.example.com" is not an http(s) URL`, `like https://api.example.com/v1`},
				{`detour.yaml:3:17: providers.b.base_url: base_url is the API root, without /chat/completions`, `write https://b.example/v1`},
			},
		},
		{
			name: "bad pool",
			src:  "providers:\n  groq: {pool: fre}\n",
			want: []wantErr{{`detour.yaml:2:16: providers.groq.pool: unknown pool "fre"`,
				`(did you mean "free"? pools are: free, credit, payg, prepaid, local)`}},
		},
		{
			name: "unknown preset",
			src:  "providers:\n  grok2: {preset: grok}\n",
			want: []wantErr{{`detour.yaml:2:19: providers.grok2.preset: unknown preset "grok"`,
				`(did you mean "groq"? presets are: groq, cerebras,`}},
		},
		{
			name: "empty chain and missing chain",
			src:  "routes:\n  a:\n    chain: []\n  b: {fallback: false}\n",
			want: []wantErr{
				{`detour.yaml:3:5: routes.a.chain: chain is empty`, `like chain: [groq/llama-3.3-70b-versatile, deepseek/deepseek-chat]`},
				{`detour.yaml:4:3: routes.b.chain: chain is empty`, `as provider/model`},
			},
		},
		{
			name: "chain entries that are not targets",
			src:  "routes:\n  r: {chain: [groq, other, groq/x, groq/x]}\n  other: {chain: [groq/y]}\n",
			want: []wantErr{
				{`detour.yaml:2:15: routes.r.chain[0]: "groq" names a provider`, `groq/MODEL, like groq/llama-3.3-70b-versatile`},
				{`detour.yaml:2:21: routes.r.chain[1]: "other" is a route`, `a chain lists targets (provider/model), not routes`},
				{`detour.yaml:2:36: routes.r.chain[3]: "groq/x" is already chain[2]`, `list each target once`},
			},
		},
		{
			name: "chain that is not a list",
			src:  "routes:\n  r:\n    chain: groq/x\n",
			want: []wantErr{{`detour.yaml:3:12: routes.r.chain: expected a list, got text`,
				`write it like [groq/llama-3.3-70b-versatile, deepseek/deepseek-chat]`}},
		},
		{
			name: "fail_closed_on with unknown kinds",
			src:  "routes:\n  r:\n    chain: [groq/x]\n    fail_closed_on: [invalid, polcy, auth]\n",
			want: []wantErr{
				{`detour.yaml:4:31: routes.r.fail_closed_on[1]: unknown failure kind "polcy"`, `(did you mean "policy"? kinds are: transient, wall,`},
				{`detour.yaml:4:38: routes.r.fail_closed_on[2]: unknown failure kind "auth"`, `401/403, 402 and quota 429s are kind wall`},
			},
		},
		{
			name: "negative prices and sizes",
			src:  "targets:\n  groq/x: {context: -1, price: {in: -0.5, out: 1}}\n",
			want: []wantErr{
				{`detour.yaml:2:21: targets["groq/x"].context: context is negative`, `or leave it out if unknown`},
				{`detour.yaml:2:37: targets["groq/x"].price.in: price.in is -0.5`, `prices are USD per million tokens, 0 or more`},
			},
		},
		{
			name: "targets key that is not an address, and of an unknown provider",
			src:  "targets:\n  llama: {}\n  nope/m: {}\n",
			want: []wantErr{
				{`detour.yaml:2:3: targets.llama: "llama" is not an address`, `write provider/model`},
				{`detour.yaml:3:3: targets["nope/m"]: unknown provider "nope"`, `declare it under providers: or fix the name`},
			},
			is: ErrUnknownProvider,
		},
		{
			name: "duplicate route names and duplicate fields",
			src:  "routes:\n  default: {chain: [groq/a]}\n  default: {chain: [groq/b]}\nproviders:\n  groq: {pool: free, pool: payg}\n",
			want: []wantErr{
				{`detour.yaml:3:3: routes.default: route "default" is defined twice (first at line 2)`, `give each route its own name`},
				{`detour.yaml:5:22: providers.groq.pool: field "pool" is defined twice (first at line 5)`, `keep one`},
			},
		},
		{
			name: "unknown fields with suggestions",
			src:  "route:\n  r: {chain: [groq/x]}\nproviders:\n  groq: {base_ur: https://x.example, model_family: x}\n",
			want: []wantErr{
				{`detour.yaml:1:1: route: unknown field "route"`, `(did you mean "routes"? fields are: providers, targets, routes, defaults, health, gateway, telemetry, probe)`},
				{`detour.yaml:4:10: providers.groq.base_ur: unknown field "base_ur"`, `(did you mean "base_url"? fields are: preset, dialect,`},
				{`detour.yaml:4:38: providers.groq.model_family: unknown field "model_family"`, `fields are: preset, dialect, base_url, key_env, pool, headers, offers, disabled, limits)`},
			},
		},
		{
			name: "synonym suggestion",
			src:  "targets:\n  groq/x: {model_family: llama}\n",
			want: []wantErr{{`detour.yaml:2:12: targets["groq/x"].model_family: unknown field "model_family"`, `(did you mean "family"?`}},
		},
		{
			name: "budget problems",
			src: `routes:
  r:
    chain: [groq/x]
    budget: {deadline: 30, max_attempts: 0, reserve: 5x, max_extra_cost: -1, profile: bach, retries: 2}
  s: {chain: [groq/x], budget: fast}
`,
			want: []wantErr{
				{`detour.yaml:4:24: routes.r.budget.deadline: 30 has no unit`, `write "30s" for seconds`},
				{`detour.yaml:4:42: routes.r.budget.max_attempts: must be at least 1`, `leave the field out to take the default`},
				{`detour.yaml:4:54: routes.r.budget.reserve: "5x" is not a duration`, `like "30s", "1m30s" or "500ms"`},
				{`detour.yaml:4:74: routes.r.budget.max_extra_cost: must be 0 (no ceiling) or more`, `USD`},
				{`detour.yaml:4:87: routes.r.budget.profile: unknown budget profile "bach"`, `(did you mean "batch"? profiles are: interactive, batch)`},
				{`detour.yaml:4:93: routes.r.budget.retries: unknown field "retries"`, `(did you mean "max_per_target"?`},
				{`detour.yaml:5:32: routes.s.budget: unknown budget profile "fast"`, `or write the fields inline, like budget: {deadline: 30s, max_attempts: 4}`},
			},
		},
		{
			name: "wrong value types",
			src:  "routes:\n  r: {chain: [groq/x], fallback: sometimes}\ntargets:\n  groq/x: {context: 1.5k, price: cheap}\n",
			want: []wantErr{
				{`detour.yaml:2:34: routes.r.fallback: expected true or false, got text`, ``},
				{`detour.yaml:4:21: targets["groq/x"].context: expected a whole number, got text`, ``},
				{`detour.yaml:4:34: targets["groq/x"].price: expected a mapping (key: value), got text`, ``},
			},
		},
		{
			name: "YAML syntax error",
			src:  "routes:\n  r: {chain: [groq/x}\n",
			want: []wantErr{{`detour.yaml:2:`, `YAML syntax:`}},
		},
		{
			name: "two documents",
			src:  "routes: {}\n---\nroutes: {}\n",
			want: []wantErr{{`detour.yaml:3:1: a second YAML document`, `remove the '---'`}},
		},
		{
			name: "top level is a list",
			src:  "- groq/x\n",
			want: []wantErr{{`detour.yaml:1:1: expected a mapping with providers:, targets: and routes: at the top, got a list`, `examples/detour.yaml`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("detour.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse succeeded (%+v); want %d problems", c, len(tt.want))
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse error is %T, want Errors: %v", err, err)
			}
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(errs), len(tt.want), err)
			}
			for i, w := range tt.want {
				got := errs[i].Error()
				if !strings.HasPrefix(got, w.at) || !strings.Contains(got, w.hint) {
					t.Errorf("problem %d:\n got %s\nwant %s ...%s", i, got, w.at, w.hint)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(err, %v) = false", tt.is)
			}
			if strings.Contains(err.Error(), key[8:]) || strings.Contains(err.Error(), "abcdefghijklmnop") {
				t.Errorf("a key leaked into the error:\n%v", err)
			}
		})
	}
}

func TestParse_SyntaxErrorHidesKey(t *testing.T) {
	src := "providers:\n  groq: {key_env: \"sk-abcdefghijklmnopqrstuvwxyz\n"
	_, err := Parse("detour.yaml", []byte(src))
	if err == nil {
		t.Fatal("want a syntax error")
	}
	if strings.Contains(err.Error(), "abcdefghijklmnop") {
		t.Errorf("a key leaked into the error: %v", err)
	}
}

func TestError_Format(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "d.yaml", Line: 7, Column: 12, Field: "routes.r", Msg: "m"}, "d.yaml:7:12: routes.r: m"},
		{Error{File: "d.yaml", Field: "routes.r", Msg: "m"}, "d.yaml: routes.r: m"},
		{Error{Field: "routes.r", Msg: "m"}, "routes.r: m"},
		{Error{File: "d.yaml", Line: 3, Column: 1, Msg: "m"}, "d.yaml:3:1: m"},
		{Error{Msg: "m"}, "m"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		word       string
		candidates []string
		want       string
	}{
		{"groqq", []string{"groq", "openrouter"}, "groq"},
		{"base_ur", providerFields, "base_url"},
		{"Base-URL", providerFields, "base_url"},
		{"model_family", targetFields, "family"},
		{"zzz", []string{"groq"}, ""},
		{"", []string{"groq"}, ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.word, tt.candidates); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

func TestLooksSecret(t *testing.T) {
	secret := []string{"sk-proj-abcdefghijklmnopqrstuv", "gsk_abcdefghijklmnopqrstuvwx", "xai-abcdefghijklmnopqrstuv",
		"sk-or-v1-0123456789abcdef0123", "csk-abcdefghijklmnopqrstu", "Bearer abcdefghijk", "AIzaSyA-abcdefghijklmnopqrs"}
	plain := []string{"GROQ_API_KEY", "groq/llama-3.3-70b-versatile", "https://api.groq.com/openai/v1", "sk-short",
		"meta-llama/Llama-3.3-70B-Instruct-Turbo", "accounts/fireworks/models/llama-v3p3-70b-instruct", "llama-3.3-70b-versatile",
		"deepseek-chat", "qwen2.5:7b", "interactive"}
	for _, s := range secret {
		if !looksSecret(s) {
			t.Errorf("looksSecret(%q) = false, want true", s)
		}
	}
	for _, s := range plain {
		if looksSecret(s) || looksRandom(s) {
			t.Errorf("looksSecret or looksRandom(%q) = true, want false", s)
		}
	}
	if !looksRandom("Ab3dEfGh1jKlMn0pQrStUvWxYz12") || looksRandom("MY_OPENAI_KEY_FOR_PROJECT_2") {
		t.Error("looksRandom: wrong on a Mistral-style key or a long variable name")
	}
}

func TestParse_MergeKeyBombIsBounded(t *testing.T) {
	src := "a: &a {x: 1}\n"
	for i := range 8 {
		prev := string(rune('a' + i))
		cur := string(rune('b' + i))
		src += cur + ": &" + cur + " {"
		for range 8 {
			src += "<<: *" + prev + ", "
		}
		src += "y: 2}\n"
	}
	src += "routes:\n  r:\n    <<: *i\n    chain: [groq/x]\n"
	done := make(chan error, 1)
	go func() { _, err := Parse("detour.yaml", []byte(src)); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Parse: want errors (unknown fields, too many merges)")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Parse did not bound merge-key expansion")
	}
}

func TestParse_KeyAsFieldNameIsHidden(t *testing.T) {
	src := "providers:\n  sk-abcdefghijklmnopqrstuvwxyz: {}\n  groq: {sk-abcdefghijklmnopqrstuvwxyz: true}\n"
	_, err := Parse("detour.yaml", []byte(src))
	if err == nil || !errors.Is(err, ErrKeyInFile) {
		t.Fatalf("err = %v, want ErrKeyInFile", err)
	}
	if strings.Contains(err.Error(), "abcdefghijklmnop") {
		t.Errorf("a key leaked into the error:\n%v", err)
	}
}
