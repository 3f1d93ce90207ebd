package config

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

// Preset is a built-in provider: what detour knows about a common
// endpoint (OpenAI-compatible, Gemini or Anthropic), and the model Default
// puts in its chain.
type Preset struct {
	// Name is the preset's name; a provider of that name (or with
	// preset: NAME) starts from it.
	Name string
	// Dialect is the wire format: OpenAI for most, Gemini and Anthropic for
	// their vendors' APIs.
	Dialect Dialect
	// BaseURL is the API root the provider documents.
	BaseURL string
	// KeyEnv is the conventional variable for the key; empty means none.
	KeyEnv string
	// Pool is how the provider bills.
	Pool Pool
	// Model is the model Default chains for this provider; empty means the
	// preset has no default model (Default leaves it out).
	Model string
	// Family, Context, MaxOutput and Price describe Model (approximate; see
	// the table). Zero means unknown.
	Family    string
	Context   int
	MaxOutput int
	Price     Price
	// Docs is where the provider documents BaseURL.
	Docs string
	// Limits are the free tier's published quotas for Model (zero: none
	// published, or not a free tier), from LimitsSource: what a target
	// of Model gets unless the file's targets: entry says otherwise.
	Limits router.Limits
	// FreeSuffix and FreeLimits: the models whose name ends in FreeSuffix
	// share FreeLimits across the account, apart from its other models
	// (OpenRouter's ":free" variants). Empty: no such pool.
	FreeSuffix string
	FreeLimits router.Limits
	// LimitsSource is the page that publishes Limits or FreeLimits.
	LimitsSource string
	// Reasoning lists the prefixes of the provider's model IDs known to
	// think before their first visible token (matched without regard to
	// case): their targets get the long first-token limit by default
	// (router.DefaultReasoningFirstToken). Only models that reason on
	// every request are listed; one that reasons only when asked (Claude's
	// extended thinking) is not. An entry "!P" excepts the models whose
	// ID starts with P (a non-reasoning variant of a reasoning line).
	Reasoning []string
	// Models describe models of the provider other than Model, by ID: what
	// a target of one gets (its family, context and output caps, price)
	// unless the file's targets: entry says otherwise. Default does not
	// chain them. Nil: none.
	Models map[string]PresetModel
}

// PresetModel is what a preset knows of one of its Models, as its
// provider publishes it (Source).
type PresetModel struct {
	Family    string
	Context   int
	MaxOutput int
	Price     Price
	// Source is the page that publishes the figures.
	Source string
}

// Reasons reports whether model, at this preset's provider, is one the
// preset knows to reason (Reasoning).
func (ps Preset) Reasons(model string) bool {
	m := strings.ToLower(model)
	for _, p := range ps.Reasoning {
		if ex, ok := strings.CutPrefix(p, "!"); ok && strings.HasPrefix(m, strings.ToLower(ex)) {
			return false
		}
	}
	for _, p := range ps.Reasoning {
		if !strings.HasPrefix(p, "!") && strings.HasPrefix(m, strings.ToLower(p)) {
			return true
		}
	}
	return false
}

// provider returns the Provider a file gets by naming this preset.
func (ps Preset) provider(name string) Provider {
	return Provider{Name: name, Preset: ps.Name, Dialect: ps.Dialect,
		BaseURL: ps.BaseURL, KeyEnv: ps.KeyEnv, Pool: ps.Pool}
}

// presetTable holds the built-in presets. Prices are approximate list prices
// in USD per million tokens (input, output) as published by each provider in
// 2025; they drift, so a file may override them under targets:. A free tier
// is priced 0. Context and output caps are approximate too.
//
// Limits are the free tiers' published quotas, each with the page that
// publishes it (LimitsSource), so that detour skips a free model whose
// window is spent instead of sending a request that must fail. They are
// the published floor: an account may have more (a targets: entry with
// its own limits: replaces them) and providers change them. Mistral
// publishes no figure for its free tier, and the paid presets none that
// holds for every account: they declare nothing.
var presetTable = []Preset{
	{
		// Free tier; paid "developer" tier lists about $0.59 / $0.79.
		Name: "groq", Dialect: OpenAI, BaseURL: "https://api.groq.com/openai/v1",
		KeyEnv: "GROQ_API_KEY", Pool: Free,
		Model: "llama-3.3-70b-versatile", Family: "llama-3.3-70b",
		Context: 131072, MaxOutput: 32768,
		Docs: "https://console.groq.com/docs/openai",
		// Free plan, per model and organization: 30 RPM, 1K RPD, 12K TPM,
		// 100K TPD.
		Limits:       router.Limits{RPM: 30, RPD: 1000, TPM: 12000, TPD: 100000},
		LimitsSource: "https://console.groq.com/docs/rate-limits",
		// Groq's reasoning models: https://console.groq.com/docs/reasoning
		Reasoning: []string{"deepseek-r1", "qwen/qwen3", "qwen-qwq", "openai/gpt-oss"},
	},
	{
		// Free tier (context capped near 64k there); paid about $0.85 / $1.20.
		Name: "cerebras", Dialect: OpenAI, BaseURL: "https://api.cerebras.ai/v1",
		KeyEnv: "CEREBRAS_API_KEY", Pool: Free,
		Model: "llama-3.3-70b", Family: "llama-3.3-70b",
		Context: 65536,
		Docs:    "https://inference-docs.cerebras.ai/resources/openai",
		// Free tier, per model and organization: 60K TPM, 1M TPH, 1M TPD,
		// 30 RPM, 900 RPH, 14.4K RPD (token buckets: a window refills as
		// it goes).
		Limits:       router.Limits{RPM: 30, RPH: 900, RPD: 14400, TPM: 60000, TPH: 1000000, TPD: 1000000},
		LimitsSource: "https://inference-docs.cerebras.ai/support/rate-limits",
		Reasoning:    []string{"qwen-3-235b-a22b-thinking", "qwen-3-32b", "gpt-oss"},
	},
	{
		// Credit balance; price varies with the upstream OpenRouter picks.
		Name: "openrouter", Dialect: OpenAI, BaseURL: "https://openrouter.ai/api/v1",
		KeyEnv: "OPENROUTER_API_KEY", Pool: Credit,
		Model: "meta-llama/llama-3.3-70b-instruct", Family: "llama-3.3-70b",
		Context: 131072, Price: Price{In: 0.12, Out: 0.30},
		Docs: "https://openrouter.ai/docs/quickstart",
		// The ":free" variants share 20 requests a minute across the
		// account, whatever model; their day is 50 requests, or 1000 once
		// 10 credits were bought: not declared, since it depends on the
		// account (the day's 429 parks them until its reset).
		FreeSuffix: ":free", FreeLimits: router.Limits{RPM: 20},
		LimitsSource: "https://openrouter.ai/docs/guides/routing/model-variants/free",
		Reasoning: []string{"deepseek/deepseek-r1", "openai/o1", "openai/o3", "openai/o4", "!openai/gpt-5-chat", "openai/gpt-5", "openai/gpt-oss",
			"qwen/qwq", "qwen/qwen3", "x-ai/grok-3-mini", "x-ai/grok-4", "!google/gemini-2.5-flash-lite", "google/gemini-2.5", "mistralai/magistral"},
	},
	{
		Name: "openai", Dialect: OpenAI, BaseURL: "https://api.openai.com/v1",
		KeyEnv: "OPENAI_API_KEY", Pool: Payg,
		Model: "gpt-4o-mini", Family: "gpt-4o-mini",
		Context: 128000, MaxOutput: 16384, Price: Price{In: 0.15, Out: 0.60},
		Docs: "https://platform.openai.com/docs/api-reference/introduction",
		// The o-series and GPT-5 reason by default:
		// https://platform.openai.com/docs/guides/reasoning
		Reasoning: []string{"!gpt-5-chat", "o1", "o3", "o4", "gpt-5", "gpt-oss"},
	},
	{
		// OpenAI's Responses API, for the models it alone serves (the pro
		// models: "available in the Responses API only", each model's
		// page), with the same key as the openai preset. No default
		// model: Default leaves it out, so a key set for the openai
		// preset does not put a model priced per million output tokens
		// in the hundreds in the no-file chain. Name a model: a target
		// like openai-responses/gpt-5-pro.
		Name: "openai-responses", Dialect: OpenAIResponses, BaseURL: "https://api.openai.com/v1",
		KeyEnv: "OPENAI_API_KEY", Pool: Payg,
		Docs:      "https://platform.openai.com/docs/api-reference/responses",
		Reasoning: []string{"!gpt-5-chat", "o1", "o3", "o4", "gpt-5", "codex"},
		Models: map[string]PresetModel{
			"gpt-5-pro": {Family: "gpt-5-pro", Context: 400000, MaxOutput: 272000, Price: Price{In: 15, Out: 120},
				Source: "https://platform.openai.com/docs/models/gpt-5-pro"},
			"o3-pro": {Family: "o3-pro", Context: 200000, MaxOutput: 100000, Price: Price{In: 20, Out: 80},
				Source: "https://platform.openai.com/docs/models/o3-pro"},
		},
	},
	{
		Name: "mistral", Dialect: OpenAI, BaseURL: "https://api.mistral.ai/v1",
		KeyEnv: "MISTRAL_API_KEY", Pool: Payg,
		Model: "mistral-small-latest", Family: "mistral-small",
		Context: 131072, Price: Price{In: 0.10, Out: 0.30},
		Docs:      "https://docs.mistral.ai/api/",
		Reasoning: []string{"magistral"},
	},
	{
		Name: "xai", Dialect: OpenAI, BaseURL: "https://api.x.ai/v1",
		KeyEnv: "XAI_API_KEY", Pool: Payg,
		Model: "grok-3-mini", Family: "grok-3-mini",
		Context: 131072, Price: Price{In: 0.30, Out: 0.50},
		Docs: "https://docs.x.ai/docs/api-reference",
		// grok-3-mini and Grok 4 think on every request:
		// https://docs.x.ai/docs/guides/reasoning
		Reasoning: []string{"grok-3-mini", "grok-4"},
	},
	{
		Name: "fireworks", Dialect: OpenAI, BaseURL: "https://api.fireworks.ai/inference/v1",
		KeyEnv: "FIREWORKS_API_KEY", Pool: Payg,
		Model: "accounts/fireworks/models/llama-v3p3-70b-instruct", Family: "llama-3.3-70b",
		Context: 131072, Price: Price{In: 0.90, Out: 0.90},
		Docs: "https://docs.fireworks.ai/tools-sdks/openai-compatibility",
		Reasoning: []string{"accounts/fireworks/models/deepseek-r1", "accounts/fireworks/models/qwq", "accounts/fireworks/models/qwen3",
			"accounts/fireworks/models/gpt-oss"},
	},
	{
		// DeepSeek documents https://api.deepseek.com and, as an alias for
		// OpenAI clients, https://api.deepseek.com/v1 (the "v1" is not a
		// model version). Price is the cache-miss input price.
		Name: "deepseek", Dialect: OpenAI, BaseURL: "https://api.deepseek.com",
		KeyEnv: "DEEPSEEK_API_KEY", Pool: Prepaid,
		Model: "deepseek-chat", Family: "deepseek-chat",
		Context: 131072, MaxOutput: 8192, Price: Price{In: 0.28, Out: 0.42},
		Docs:      "https://api-docs.deepseek.com/",
		Reasoning: []string{"deepseek-reasoner"},
	},
	{
		Name: "together", Dialect: OpenAI, BaseURL: "https://api.together.xyz/v1",
		KeyEnv: "TOGETHER_API_KEY", Pool: Prepaid,
		Model: "meta-llama/Llama-3.3-70B-Instruct-Turbo", Family: "llama-3.3-70b",
		Context: 131072, Price: Price{In: 0.88, Out: 0.88},
		Docs:      "https://docs.together.ai/docs/openai-api-compatibility",
		Reasoning: []string{"deepseek-ai/deepseek-r1", "qwen/qwq", "qwen/qwen3", "openai/gpt-oss"},
	},
	{
		// Gemini's native API (generateContent); the key goes in
		// x-goog-api-key. Free tier with per-minute and per-day quotas.
		Name: "gemini", Dialect: Gemini, BaseURL: "https://generativelanguage.googleapis.com/v1beta",
		KeyEnv: "GEMINI_API_KEY", Pool: Free,
		Model: "gemini-2.5-flash", Family: "gemini-2.5-flash",
		Context: 1048576, MaxOutput: 65536,
		Docs: "https://ai.google.dev/api/generate-content",
		// Free tier, per project and model: 10 RPM, 250K TPM, 250 RPD, as
		// the rate-limits page published it in 2025 (its day ends at
		// midnight Pacific). Google now shows each project's figures in AI
		// Studio, and reports since December 2025 give a lower day: the
		// day's 429 is a wall that parks the target until its reset.
		Limits:       router.Limits{RPM: 10, RPD: 250, TPM: 250000},
		LimitsSource: "https://ai.google.dev/gemini-api/docs/rate-limits",
		// 2.5 Pro and Flash think by default (Flash-Lite does not):
		// https://ai.google.dev/gemini-api/docs/thinking
		Reasoning: []string{"!gemini-2.5-flash-lite", "gemini-2.5-pro", "gemini-2.5-flash", "gemini-3"},
	},
	{
		// Messages API on a prepaid credit balance; paid list price about
		// $1 / $5 for Haiku 4.5.
		Name: "anthropic", Dialect: Anthropic, BaseURL: "https://api.anthropic.com",
		KeyEnv: "ANTHROPIC_API_KEY", Pool: Prepaid,
		Model: "claude-haiku-4-5", Family: "claude-haiku-4-5",
		Context: 200000, MaxOutput: 64000, Price: Price{In: 1, Out: 5},
		Docs: "https://docs.claude.com/en/api/messages",
	},
	{
		// llama.cpp's llama-server: OpenAI-compatible on port 8080, no key,
		// serves whatever model it loaded (the name is not checked).
		Name: "llamacpp", Dialect: OpenAI, BaseURL: "http://127.0.0.1:8080/v1",
		Pool: Local,
		Docs: "https://github.com/ggml-org/llama.cpp/tree/master/tools/server",
	},
	{
		// vLLM's OpenAI-compatible server (vllm serve), port 8000, no key
		// unless started with --api-key.
		Name: "vllm", Dialect: OpenAI, BaseURL: "http://127.0.0.1:8000/v1",
		Pool: Local,
		Docs: "https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html",
	},
	{
		// No key and no default model: Default adds it only when
		// DETOUR_OLLAMA_MODEL names the model to use.
		Name: "ollama", Dialect: OpenAI, BaseURL: "http://127.0.0.1:11434/v1",
		Pool:      Local,
		Docs:      "https://github.com/ollama/ollama/blob/main/docs/openai.md",
		Reasoning: []string{"deepseek-r1", "qwq", "qwen3", "gpt-oss", "magistral"},
	},
}

// Presets returns a copy of the built-in presets in table order: the
// hosted OpenAI-compatible ones (free tiers first), then Gemini and
// Anthropic, then the local servers.
func Presets() []Preset { return slices.Clone(presetTable) }

// LookupPreset returns the built-in preset called name.
func LookupPreset(name string) (Preset, bool) {
	for _, p := range presetTable {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// presetNames returns the presets' names in table order.
func presetNames() []string {
	names := make([]string, len(presetTable))
	for i, p := range presetTable {
		names[i] = p.Name
	}
	return names
}

// Environment variables Default reads besides the presets' key variables.
const (
	// EnvOllamaModel names the Ollama model Default adds at the end of its
	// chain (e.g. "qwen2.5:7b"); unset leaves Ollama out.
	EnvOllamaModel = "DETOUR_OLLAMA_MODEL"
	// EnvOllamaHost is Ollama's own address variable ("127.0.0.1:11434",
	// "http://host:11434"); unset means the preset's address.
	EnvOllamaHost = "OLLAMA_HOST"
)

// Default builds the config used when there is no file: one provider per
// preset whose key variable is set, and one route "default" chaining their
// default models, free tiers first, then credit, pay-as-you-go, prepaid and
// local (cheapest first within a pool). Ollama joins only when
// DETOUR_OLLAMA_MODEL is set. With nothing set the error wraps ErrNoKeys and
// says which variables to set. A nil getenv means os.Getenv.
func Default(getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := &Config{Providers: map[string]Provider{}, Routes: map[string]Route{}}
	var chosen []Preset
	for _, ps := range presetTable {
		switch {
		case ps.Model == "" && ps.Name != "ollama":
			continue // no default model to chain
		case ps.KeyEnv != "" && strings.TrimSpace(getenv(ps.KeyEnv)) != "":
		case ps.Name == "ollama" && getenv(EnvOllamaModel) != "":
			ps.Model = getenv(EnvOllamaModel)
			if h := getenv(EnvOllamaHost); h != "" {
				ps.BaseURL = ollamaBaseURL(h)
			}
		default:
			continue
		}
		chosen = append(chosen, ps)
		c.Providers[ps.Name] = ps.provider(ps.Name)
	}
	if len(chosen) == 0 {
		return nil, &Error{Err: ErrNoKeys, Msg: noKeysMsg()}
	}
	slices.SortStableFunc(chosen, func(a, b Preset) int {
		return cmp.Or(cmp.Compare(poolRank(a.Pool), poolRank(b.Pool)),
			cmp.Compare(a.Price.In+a.Price.Out, b.Price.In+b.Price.Out))
	})
	r := Route{Name: DefaultRoute, RouteSettings: RouteSettings{BudgetName: "interactive", Budget: policy.Interactive()}}
	for _, ps := range chosen {
		r.Chain = append(r.Chain, ps.Name+"/"+ps.Model)
	}
	c.Routes[DefaultRoute] = r
	return c, nil
}

// noKeysMsg tells the user what to set when Default finds nothing.
func noKeysMsg() string {
	var vars []string
	for _, ps := range presetTable {
		if ps.KeyEnv == "" || ps.Model == "" {
			continue // no key, or no model to chain (a second preset of one key)
		}
		v := ps.KeyEnv
		if ps.Pool == Free {
			v += " (free tier)"
		}
		vars = append(vars, v)
	}
	return fmt.Sprintf("no config file and no provider key in the environment: "+
		"export at least one of %s; or set %s=MODEL to use a local Ollama; "+
		"or write %s (see examples/detour.yaml) and point %s or --config at it; "+
		"or run `detour demo` to try detour against simulated providers",
		strings.Join(vars, ", "), EnvOllamaModel, FileName, EnvConfig)
}

// ollamaBaseURL turns an OLLAMA_HOST value into the base URL of Ollama's
// OpenAI-compatible API, reading it as Ollama does: no scheme means http on
// port 11434; http:// and https:// without a port mean 80 and 443; a path is
// kept. An unspecified address (0.0.0.0, ::) means loopback.
func ollamaBaseURL(host string) string {
	host = strings.TrimSpace(host)
	scheme, port := "http", "11434"
	if s, rest, ok := strings.Cut(host, "://"); ok {
		scheme, host, port = s, rest, "80"
		if s == "https" {
			port = "443"
		}
	}
	hostport, path, _ := strings.Cut(host, "/")
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		h, p = strings.Trim(hostport, "[]"), port
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		h = "127.0.0.1"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(h, p),
		Path: strings.TrimRight("/"+path, "/") + "/v1"}
	return u.String()
}
