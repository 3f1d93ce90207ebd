package config

import (
	"fmt"
	"github.com/detourhq/detour/fit"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

// FileName is the config file looked for in the working directory.
const FileName = "detour.yaml"

// EnvConfig is the environment variable that names the config file.
const EnvConfig = "DETOUR_CONFIG"

// DefaultRoute is the route used when a request names none.
const DefaultRoute = "default"

// Dialect is the wire format a provider speaks.
type Dialect string

// The dialects a provider may declare.
const (
	// OpenAI is the chat-completions format most providers speak.
	OpenAI Dialect = "openai"
	// Anthropic is the Messages API format (POST {base_url}/v1/messages;
	// base_url defaults to https://api.anthropic.com).
	Anthropic Dialect = "anthropic"
	// Gemini is Google's generateContent format (base_url defaults to
	// https://generativelanguage.googleapis.com/v1beta).
	Gemini Dialect = "gemini"
	// OpenAIResponses is OpenAI's Responses API (POST {base_url}/responses;
	// base_url defaults to https://api.openai.com/v1), the only one some
	// models are served in.
	OpenAIResponses Dialect = "openai-responses"
)

// dialects lists the valid dialects in the order messages show them.
var dialects = []string{string(OpenAI), string(Anthropic), string(Gemini), string(OpenAIResponses)}

// Pool is how a provider bills, which decides what a failure there costs and
// how likely the next candidate is to fail for the same reason.
type Pool string

// The billing pools, cheapest to use first.
const (
	// Free is a free tier: no money, tight and structural limits.
	Free Pool = "free"
	// Credit is a prepaid credit balance at a router (402 when it runs dry).
	Credit Pool = "credit"
	// Payg is pay-as-you-go billing against a card; the default pool.
	Payg Pool = "payg"
	// Prepaid is a prepaid balance at the provider itself.
	Prepaid Pool = "prepaid"
	// Local is a model on this machine or network: no bill, no key.
	Local Pool = "local"
)

// pools lists the valid pools in the order Default chains them.
var pools = []string{string(Free), string(Credit), string(Payg), string(Prepaid), string(Local)}

// poolRank returns p's place in pools (payg for an empty pool).
func poolRank(p Pool) int {
	if p == "" {
		p = Payg
	}
	if i := slices.Index(pools, string(p)); i >= 0 {
		return i
	}
	return len(pools)
}

// Provider is an endpoint, the variable holding its key, its wire dialect and
// its billing pool.
type Provider struct {
	// Name is the provider's name, the first segment of "provider/model".
	Name string
	// Preset names the built-in preset the provider started from; empty when
	// it is declared from scratch.
	Preset string
	// Dialect is the wire format; empty means OpenAI.
	Dialect Dialect
	// BaseURL is the API root, e.g. "https://api.groq.com/openai/v1"
	// (without "/chat/completions"). Required for an openai provider.
	BaseURL string
	// KeyEnv names the environment variable that holds the key; empty means
	// the provider needs no key (a local server).
	KeyEnv string
	// Pool is the billing pool; empty means Payg.
	Pool Pool
	// Headers are extra HTTP headers sent with every request (for example
	// OpenRouter's HTTP-Referer and X-Title). Never credentials.
	Headers map[string]string
	// Disabled turns the provider off: every target of it is skipped
	// (skipped_disabled) until the config says otherwise; a kill switch,
	// with a reload of `detour serve`.
	Disabled bool
	// Offers are what every target of the provider offers (Offers words):
	// its data terms (zero_retention, no_training, region-eu) and the
	// capabilities all its models share. The two are read apart
	// (IsTerm): terms alone leave capabilities unknown. Nil means both
	// unknown.
	Offers []string
	// Limits are the account's quotas (limits: in the file: rpm, rph,
	// rpd, tpm, tph, tpd), shared by every target billed to its key: each
	// send and its tokens count once, in the health store, whatever
	// model and whichever process sent it. Zero: none.
	Limits router.Limits
}

// dialect returns Dialect, or OpenAI when it is empty.
func (p Provider) dialect() Dialect {
	if p.Dialect == "" {
		return OpenAI
	}
	return p.Dialect
}

// pool returns Pool, or Payg when it is empty.
func (p Provider) pool() Pool {
	if p.Pool == "" {
		return Payg
	}
	return p.Pool
}

// Price is what a target costs, in USD per million tokens.
type Price struct {
	// In is the price of input (prompt) tokens.
	In float64
	// Out is the price of output (completion) tokens.
	Out float64
}

// Target is the optional detail of one model at one provider. A chain may
// name any provider/model without one; missing detail is zero (unknown),
// except where a preset knows its default model.
type Target struct {
	// Provider and Model split the address at its first "/"; Model may
	// itself contain "/".
	Provider string
	Model    string
	// Family names the model across providers ("llama-3.3-70b"); empty
	// means Model. Moving within a family is a failover, across is a fallback.
	Family string
	// Context is the context window in tokens; 0 means unknown.
	Context int
	// MaxOutput is the output cap in tokens; 0 means unknown.
	MaxOutput int
	// Price is the list price; zero means free or unknown.
	Price Price
	// Disabled turns the target off: it is skipped (skipped_disabled).
	Disabled bool
	// Offers are what the model offers beyond its provider's (Offers
	// words: images, documents, audio, tools, json_schema, reasoning; a
	// data term too). Capabilities declared by neither, here nor by the
	// provider, are unknown: requests are sent on and the provider judges
	// them. Data terms say nothing of capabilities.
	Offers []string
	// Limits are the model's own quotas (limits: in the file: rpm, rph,
	// rpd, tpm, tph, tpd): a send its window cannot take is skipped
	// (skipped_quota) rather than sent to fail. Zero: none. A preset's
	// default model comes with its free tier's published figures; a
	// targets: entry replaces them, as it does the rest of the preset's
	// detail.
	Limits router.Limits
	// LimitsSource says where Limits come from, for reasons and `detour
	// check`: empty for a targets: entry, else the preset's.
	LimitsSource string
}

// ID returns "provider/model".
func (t Target) ID() string { return t.Provider + "/" + t.Model }

// Route is a name clients ask for and the ordered chain of targets behind it.
type Route struct {
	// Name is what a request's model field says to use this route.
	Name string
	// Chain lists target addresses ("provider/model") in the order tried.
	Chain []string
	// Groups are the groups of equals in Chain (a chain entry
	// "- group: [...]"), in chain order; their members are in Chain.
	Groups []ChainGroup
	// Embeddings marks a route for embeddings (embeddings: true in the
	// file): its chain must hold one model family, since vectors of
	// different models do not mix, and a config whose chain mixes
	// families is refused. The router keeps any route's embeddings
	// request within its first candidate's family, marked or not.
	Embeddings bool
	// RouteSettings are everything else: what a route inherits from
	// defaults: and may override.
	RouteSettings
}

// RouteSettings are a route's settings besides its name and chain: the
// fields a route may write and defaults: sets for every route.
type RouteSettings struct {
	// BudgetName is the profile the budget came from ("interactive" or
	// "batch"); empty when the budget was written out field by field.
	BudgetName string
	// Budget bounds each request; zero fields take policy's defaults.
	Budget policy.Budget
	// FailClosedOn lists the failure kinds that end a request at once. Nil
	// means the router's default (invalid and policy); empty means none.
	FailClosedOn []classify.Kind
	// NoFallback (fallback: false in the file) allows only failover within
	// the first target's model family.
	NoFallback bool
	// HeaderTimeout, FirstToken, IdleTimeout and MaxDuration bound each
	// attempt's phases, as in router.Route: zero means the router's default
	// (router.DefaultHeaderTimeout, DefaultFirstToken, DefaultIdleTimeout;
	// no MaxDuration), negative means no limit. In the file a field left
	// out is zero and an explicit 0 (or 0s) is -1: no limit.
	HeaderTimeout, FirstToken, IdleTimeout, MaxDuration time.Duration
	// Buffered holds each stream until it is complete (see router.Route).
	Buffered bool
	// MaxBuffer caps what a Buffered stream holds, in bytes (see
	// router.Route); 0 means router.DefaultMaxBuffer.
	MaxBuffer int
	// FailOverPastBuffer (over_buffer: fail_over in the file) drops a
	// Buffered stream past MaxBuffer and fails over (see router.Route);
	// false (over_buffer: stream) sends what it holds and streams the rest.
	FailOverPastBuffer bool
	// LowerMaxTokens lets a request's max_tokens be lowered to pass a cost
	// ceiling (router.Route.LowerMaxTokens).
	LowerMaxTokens bool
	// Adapt is how a request may be shortened for a target with a smaller
	// context window (router.Route.Adapt); nil: it is not.
	Adapt *fit.Adaptation
	// DailyCost caps what the route spends in a UTC day, in USD
	// (router.Route.DailyCost); 0: no cap.
	DailyCost float64
	// CacheAnswers keeps each answer this long to give the same request
	// again when every candidate fails (router.Route.CacheAnswers); 0: none.
	CacheAnswers time.Duration
	// StaticAnswer is the route's answer when every candidate fails and no
	// kept answer serves (router.Route.StaticAnswer); "": none.
	StaticAnswer string
	// Requires are the Offers words every target of the route must state
	// (data terms, most often: zero_retention, no_training, region-eu); a
	// target that does not state one is skipped.
	Requires []string
	// ProbeGenerate (probe: generate in the file) lets `detour probe` check
	// the route's parked targets with a one-token generation when a free
	// model list cannot tell (a quota or credit wall), at most once per
	// Probe.GenerateEvery per target; false (probe: metadata) never bills.
	ProbeGenerate bool
	// EvalGate, when set, lets a fallback target serve the route only when
	// its `detour eval` results pass the gate (router.Route.Approve); nil:
	// no gate.
	EvalGate *EvalGate
}

// EvalGate is a route's eval_gate: in the file, {results: FILE, suite:
// NAME, min_accuracy: 0.8, min_answers: 5}.
type EvalGate struct {
	// Results is the results file of `detour eval`, relative to the config
	// file's directory; read when the config is built (load, reload).
	Results string
	// Suite names the suite whose results count; "" means any.
	Suite string
	// MinAccuracy is the accuracy a fallback target must have shown, 0 to 1.
	MinAccuracy float64
	// MinAnswers is the answered calls needed; 0 means
	// eval.DefaultGateMinAnswers.
	MinAnswers int
}

// Defaults is the defaults: section: the settings every route of the file
// starts from, each overridden by the route's own field. A route's inline
// budget fields apply on top of the defaults' budget; a route's budget
// profile (budget: batch, or profile: inside) starts over from that
// profile. Parse applies Defaults to the file's routes as it reads them, so
// Config.Routes already hold the result; Defaults itself still shapes the
// route made for a bare provider/model target (TargetRoute, Lookup). A
// Config built in code gets its Routes used as they are. The zero value
// means the interactive budget and the router's defaults.
type Defaults struct {
	// RouteSettings are as in Route; a zero Budget means the interactive
	// profile, a nil FailClosedOn the router's default, a zero limit the
	// router's default and a negative one no limit.
	RouteSettings
}

// route returns a route named name over chain with d's settings.
func (d Defaults) route(name string, chain []string) Route {
	r := Route{Name: name, Chain: chain, RouteSettings: d.RouteSettings}
	r.FailClosedOn = slices.Clone(d.FailClosedOn)
	if r.Budget == (policy.Budget{}) {
		r.BudgetName, r.Budget = "interactive", policy.Interactive()
	}
	return r
}

// Health is the health: section: how the breaker parks a failing target.
// Its zero value means every default of health.Settings.
type Health struct {
	// Settings shape the breaker (health.New); a zero field means its
	// default.
	health.Settings
	// Store is where the breaker's state lives, as written (see
	// health.StoreSpec): "" (the command's default), "memory", "sqlite",
	// "sqlite:PATH", or a redis:// or rediss:// URL.
	Store string
	// StorePasswordEnv names the environment variable holding the Redis
	// password; a password is never written in the file.
	StorePasswordEnv string
	// Namespace is the deployment's name in a shared store: replicas with
	// the same store and namespace share health. "" means "detour".
	Namespace string
}

// Config is one detour.yaml, or the config Default builds from the
// environment. A Config is not changed by its methods and is safe for
// concurrent use once built.
type Config struct {
	// File is the file the config came from, used in messages; empty when
	// built by Default or in code.
	File string
	// Providers are the providers the file declares, by name. A preset that
	// is not declared can still be named in a chain.
	Providers map[string]Provider
	// Targets holds optional target detail, by "provider/model".
	Targets map[string]Target
	// Routes are the routes, by name.
	Routes map[string]Route
	// Defaults is the defaults: section, which every route starts from.
	Defaults Defaults
	// Health is the health: section: the breaker's settings, for whoever
	// builds the breaker (health.New(c.Health.Settings)).
	Health Health
	// Gateway is the gateway: section, read by `detour serve`.
	Gateway Gateway
	// Telemetry is the telemetry: section: where traces go (see Tracing,
	// which adds the environment's say).
	Telemetry Telemetry
	// Probe is the probe: section: background probes and their limits.
	Probe Probe

	// pos and keyPos hold the source position of each field's value and key,
	// by field path; nil for a config built in code.
	pos, keyPos map[string]position
}

// position is a 1-based line and column in the file.
type position struct{ line, col int }

// Path returns the config file to use: flag when set, else $DETOUR_CONFIG,
// else "detour.yaml" when it exists in the working directory, else "" (no
// file: use Default). A nil getenv means os.Getenv.
func Path(flag string, getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if flag != "" {
		return flag
	}
	if p := getenv(EnvConfig); p != "" {
		return p
	}
	if st, err := os.Stat(FileName); err == nil && st.Mode().IsRegular() {
		return FileName
	}
	return ""
}

// Open loads the file Path finds, or, when there is none, builds the config
// Default makes from the environment. A nil getenv means os.Getenv.
func Open(flag string, getenv func(string) string) (*Config, error) {
	p := Path(flag, getenv)
	if p == "" {
		return Default(getenv)
	}
	return Load(p)
}

// Load reads and validates the config file at path. A file that is wrong
// yields Errors listing every problem found. At most MaxFileSize bytes (and
// one more) are read: a larger file is refused unread (ErrLimit).
func Load(path string) (*Config, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and validates one YAML document; name is used in messages.
// Unknown fields are errors. A document that is wrong yields Errors listing
// every problem found, in file order. A document past an input limit
// (MaxFileSize, MaxDepth, MaxNodes, MaxEntries) is refused before it is
// parsed, with one problem wrapping ErrLimit.
func Parse(name string, data []byte) (*Config, error) {
	c, errs, bad := decode(name, data)
	if c != nil {
		errs = append(errs, c.validate(bad)...)
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return c, nil
}

// Validate reports every problem in c (a config built in code, or one
// changed after loading); nil when there is none.
func (c *Config) Validate() error {
	if errs := c.validate(nil); len(errs) > 0 {
		sortErrors(errs)
		return errs
	}
	return nil
}

// Provider returns the provider called name: a declared one, else the
// preset of that name.
func (c *Config) Provider(name string) (Provider, bool) {
	if p, ok := c.Providers[name]; ok {
		return p, true
	}
	if ps, ok := LookupPreset(name); ok {
		return ps.provider(name), true
	}
	return Provider{}, false
}

// RouteNames returns the route names, sorted.
func (c *Config) RouteNames() []string { return sortedKeys(c.Routes) }

// ProviderNames returns the declared providers' names, sorted.
func (c *Config) ProviderNames() []string { return sortedKeys(c.Providers) }

// target returns the detail known for addr: the file's targets entry, else
// the preset's knowledge of its default model, else just the address.
func (c *Config) target(addr string) Target {
	prov, model, _ := splitAddr(addr)
	if t, ok := c.Targets[addr]; ok {
		t.Provider, t.Model = prov, model
		return t
	}
	if p, ok := c.Provider(prov); ok {
		if ps, ok := LookupPreset(p.Preset); ok && ps.Model == model {
			t := Target{Provider: prov, Model: model, Family: ps.Family,
				Context: ps.Context, MaxOutput: ps.MaxOutput, Price: ps.Price, Limits: ps.Limits}
			if !ps.Limits.IsZero() {
				t.LimitsSource = "the " + ps.Name + " preset's free tier"
			}
			return t
		} else if m, ok := ps.Models[model]; ok {
			return Target{Provider: prov, Model: model, Family: m.Family, Context: m.Context, MaxOutput: m.MaxOutput, Price: m.Price}
		}
	}
	return Target{Provider: prov, Model: model}
}

// splitAddr splits "provider/model" at its first "/". ok is false when
// either part is empty.
func splitAddr(addr string) (provider, model string, ok bool) {
	provider, model, found := strings.Cut(addr, "/")
	return provider, model, found && provider != "" && model != ""
}

// knownProviders returns the declared provider names, then the presets not
// declared, for messages.
func (c *Config) knownProviders() (declared, presets []string) {
	declared = c.ProviderNames()
	for _, p := range presetTable {
		if _, ok := c.Providers[p.Name]; !ok {
			presets = append(presets, p.Name)
		}
	}
	return declared, presets
}

// unknownProviderMsg explains that name is not a provider and what is.
func (c *Config) unknownProviderMsg(name string) string {
	declared, presets := c.knownProviders()
	all := append(slices.Clone(declared), presets...)
	msg := fmt.Sprintf("unknown provider %s", quote(name))
	var parts []string
	if s := suggest(name, all); s != "" {
		parts = append(parts, fmt.Sprintf("did you mean %q?", s))
	}
	if len(declared) > 0 {
		parts = append(parts, "providers are: "+strings.Join(declared, ", ")+";")
	}
	parts = append(parts, "presets: "+strings.Join(presets, ", "))
	return msg + " (" + strings.TrimSuffix(strings.Join(parts, " "), ";") +
		"); declare it under providers: or fix the name"
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
