package config

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/detourhq/detour/evalresults"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/wire/anthropic"
	"github.com/detourhq/detour/wire/gemini"
	"github.com/detourhq/detour/wire/openai"
	"github.com/detourhq/detour/wire/responses"
)

// BuildOptions are what building the runtime needs from outside. The zero
// value is ready to use.
type BuildOptions struct {
	// Getenv reads the key variables; nil means os.Getenv.
	Getenv func(string) string
	// HTTPClient carries every provider call; nil means the clients' default.
	HTTPClient *http.Client
}

// builder makes router targets, one client per provider.
type builder struct {
	c       *Config
	opts    BuildOptions
	clients map[string]llm.Client
}

func (c *Config) builder(opts BuildOptions) *builder {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	return &builder{c: c, opts: opts, clients: map[string]llm.Client{}}
}

// Build makes every route for the router. A target whose key variable is
// unset gets a nil Client (the router skips it and records the skip). c is
// validated first; then every provider key that is set (of the providers
// declared and those the routes use) must be MinKeyLen characters or more,
// unless the provider is Local (ErrShortKey).
func (c *Config) Build(opts BuildOptions) (map[string]*router.Route, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if err := sorted(c.keyErrors(getenv)); err != nil {
		return nil, err
	}
	b := c.builder(opts)
	out := make(map[string]*router.Route, len(c.Routes))
	var errs Errors
	for _, name := range c.RouteNames() {
		r, err := b.route(c.Routes[name])
		if err != nil {
			errs = appendErr(errs, err)
			continue
		}
		out[name] = r
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// Lookup makes the route a request's model names: a route of the config,
// else a "provider/model" target as a route of one (see TargetRoute). An
// unknown name is an error wrapping ErrUnknownRoute that lists the routes
// (ErrUnknownProvider for an address whose provider is unknown). Each call
// makes new clients; a server builds its routes once with Build and calls
// TargetRoute only for addresses.
func (c *Config) Lookup(name string, opts BuildOptions) (*router.Route, error) {
	if r, ok := c.Routes[name]; ok {
		if errs := c.validate(nil); len(errs) > 0 {
			return nil, errs
		}
		return c.builder(opts).route(r)
	}
	if prov, _, ok := splitAddr(name); ok {
		if _, known := c.Provider(prov); known {
			return c.TargetRoute(name, opts)
		}
	}
	names := c.RouteNames()
	msg := fmt.Sprintf("unknown route %s%s; name a route, or a target as provider/model",
		quote(name), didYouMean(name, names, "routes"))
	if prov, _, ok := splitAddr(name); ok {
		msg = c.unknownProviderMsg(prov) + fmt.Sprintf(" (in %s)", quote(name))
		return nil, &Error{File: c.File, Msg: msg, Err: ErrUnknownProvider}
	}
	return nil, &Error{File: c.File, Msg: msg, Err: ErrUnknownRoute}
}

// TargetRoute makes a route of the one target addr ("provider/model"; the
// model may contain "/"), named addr, with the settings of the defaults:
// section (the interactive budget and the router's timeouts when there is
// none). The provider may be declared or a preset; target detail comes from
// the file's targets: entry or the preset.
func (c *Config) TargetRoute(addr string, opts BuildOptions) (*router.Route, error) {
	prov, _, ok := splitAddr(addr)
	if !ok {
		return nil, &Error{File: c.File, Err: ErrUnknownRoute,
			Msg: fmt.Sprintf("%s is not a target: write provider/model, like groq/llama-3.3-70b-versatile", quote(addr))}
	}
	if _, known := c.Provider(prov); !known {
		return nil, &Error{File: c.File, Err: ErrUnknownProvider,
			Msg: c.unknownProviderMsg(prov) + fmt.Sprintf(" (in %s)", quote(addr))}
	}
	return c.builder(opts).route(c.Defaults.route(addr, []string{addr}))
}

// route makes one router.Route.
func (b *builder) route(r Route) (*router.Route, error) {
	out := &router.Route{Name: r.Name, Budget: r.Budget, NoFallback: r.NoFallback,
		FailClosedOn:  slices.Clone(r.FailClosedOn),
		HeaderTimeout: r.HeaderTimeout, FirstToken: r.FirstToken, IdleTimeout: r.IdleTimeout,
		MaxDuration: r.MaxDuration, Buffered: r.Buffered, MaxBuffer: r.MaxBuffer,
		FailOverPastBuffer: r.FailOverPastBuffer, Requires: slices.Clone(r.Requires),
		CacheAnswers: r.CacheAnswers, StaticAnswer: r.StaticAnswer, DailyCost: r.DailyCost, Adapt: r.Adapt,
		LowerMaxTokens: r.LowerMaxTokens}
	var errs Errors
	if r.EvalGate != nil {
		approve, err := b.evalGate(r.Name, r.EvalGate)
		if err != nil {
			errs = appendErr(errs, err)
		}
		out.Approve = approve
	}
	groups := make([]*router.Group, len(r.Groups))
	for i, g := range r.Groups {
		groups[i] = &router.Group{Pick: g.Pick, Weights: g.Weights, Affinity: g.Affinity}
	}
	for i, addr := range r.Chain {
		t, err := b.target(addr)
		if err != nil {
			errs = appendErr(errs, err)
			continue
		}
		if k := r.groupOf(i); k >= 0 {
			t.Group = groups[k]
		}
		out.Chain = append(out.Chain, t)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// appendErr adds err's problems to errs, once each.
func appendErr(errs Errors, err error) Errors {
	add := func(e *Error) {
		for _, x := range errs {
			if *x == *e {
				return
			}
		}
		errs = append(errs, e)
	}
	switch e := err.(type) {
	case Errors:
		for _, x := range e {
			add(x)
		}
	case *Error:
		add(e)
	default:
		add(&Error{Msg: err.Error()})
	}
	return errs
}

// target makes one router.Target.
func (b *builder) target(addr string) (router.Target, error) {
	t := b.c.target(addr)
	p, ok := b.c.Provider(t.Provider)
	if !ok {
		return router.Target{}, &Error{File: b.c.File, Err: ErrUnknownProvider,
			Msg: b.c.unknownProviderMsg(t.Provider) + fmt.Sprintf(" (in %s)", quote(addr))}
	}
	client, err := b.client(p)
	if err != nil {
		return router.Target{}, err
	}
	return router.Target{
		Provider: t.Provider, Model: t.Model, Family: t.Family,
		Pool: string(p.pool()), Dialect: string(p.dialect()), KeyEnv: p.KeyEnv,
		Client: client, PriceIn: t.Price.In, PriceOut: t.Price.Out,
		Context: t.Context, MaxOutput: t.MaxOutput,
		Account: p.Name, Endpoint: p.endpoint(), Offers: capabilities(p.Offers, t.Offers), Terms: terms(p.Offers, t.Offers),
		Disabled: disabledBy(p, t), Quotas: quotas(p, t), Reasoning: reasons(p, t),
	}, nil
}

// quotas are the declared limits of t (of provider p): its own, then its
// account's, then the pool a preset keeps apart for some of its models
// (OpenRouter's free variants). Nil when none.
func quotas(p Provider, t Target) []router.Quota {
	var out []router.Quota
	if !t.Limits.IsZero() {
		src := t.LimitsSource
		if src == "" {
			src = "targets." + t.ID() + ".limits"
		}
		out = append(out, router.Quota{Key: t.ID(), Source: src, Limits: t.Limits})
	}
	if !p.Limits.IsZero() {
		out = append(out, router.Quota{Key: "account:" + p.Name, Source: "providers." + p.Name + ".limits", Limits: p.Limits})
	}
	if ps, ok := LookupPreset(p.Preset); ok && ps.FreeSuffix != "" && strings.HasSuffix(t.Model, ps.FreeSuffix) {
		out = append(out, router.Quota{Key: "account:" + p.Name + ps.FreeSuffix, Limits: ps.FreeLimits,
			Source: "the " + ps.Name + " preset's " + ps.FreeSuffix + " models"})
	}
	return out
}

// reasons reports whether t (of provider p) is a model p's preset knows
// to reason: its streams then get the long first-token limit by default.
// A target's offers: [reasoning] says the same (router.Target.Reasons).
func reasons(p Provider, t Target) bool {
	ps, ok := LookupPreset(p.Preset)
	return ok && ps.Reasons(t.Model)
}

// disabledBy names the setting that turns t (of provider p) off, or "".
func disabledBy(p Provider, t Target) string {
	switch {
	case p.Disabled:
		return "providers." + p.Name + ".disabled"
	case t.Disabled:
		return "targets." + t.ID() + ".disabled"
	}
	return ""
}

// capabilities are the capabilities a provider's and a target's offers
// declare, merged (router.Target.Offers); nil, unknown, when neither
// declares one: a list of data terms alone says nothing of them. An empty
// list (offers: []) declares none.
func capabilities(provider, target []string) []string {
	var out []string
	for _, list := range [][]string{provider, target} {
		for _, w := range list {
			if !IsTerm(w) && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
		if list != nil && len(list) == 0 && out == nil {
			out = []string{}
		}
	}
	return out
}

// terms are the data terms a provider's and a target's offers state,
// merged (router.Target.Terms); nil when neither states one.
func terms(provider, target []string) []string {
	var out []string
	for _, w := range slices.Concat(provider, target) {
		if IsTerm(w) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// endpoint returns the "host:port" p is served from, lower-cased: its
// base_url's (or its dialect's default API root's), with port 443 for https
// and 80 for http when none is written. Two providers on one host share an
// endpoint, so a host that is down parks them both. Empty when the URL
// cannot be read.
func (p Provider) endpoint() string {
	base := p.BaseURL
	if base == "" {
		switch p.dialect() {
		case Anthropic:
			base = anthropic.DefaultBaseURL
		case Gemini:
			base = gemini.DefaultBaseURL
		case OpenAIResponses:
			base = responses.DefaultBaseURL
		default:
			base = openai.DefaultBaseURL
		}
	}
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		default:
			return ""
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// client returns p's client: nil when p's key variable is unset; an error
// wrapping ErrShortKey when the key is shorter than MinKeyLen and p is not
// Local.
func (b *builder) client(p Provider) (llm.Client, error) {
	if cl, ok := b.clients[p.Name]; ok {
		return cl, nil
	}
	var key string
	if p.KeyEnv != "" {
		key = strings.TrimSpace(b.opts.Getenv(p.KeyEnv))
		if key == "" {
			return nil, nil
		}
		if e := b.c.shortKey(p, key); e != nil {
			return nil, e
		}
	}
	var h http.Header
	if len(p.Headers) > 0 {
		h = make(http.Header, len(p.Headers))
		for k, v := range p.Headers {
			h.Set(k, v)
		}
	}
	cl := NewClient(p.dialect(), strings.TrimRight(p.BaseURL, "/"), key, b.opts.HTTPClient, h)
	b.clients[p.Name] = cl
	return cl, nil
}

// NewClient returns the client of dialect d; an unknown dialect gets the
// OpenAI-compatible one (validation refuses those in a file). An empty
// baseURL means the dialect's default endpoint, an empty key sends none, a
// nil hc means the client's default.
func NewClient(d Dialect, baseURL, key string, hc *http.Client, h http.Header) llm.Client {
	switch d {
	case Anthropic:
		return &anthropic.Client{BaseURL: baseURL, APIKey: key, HTTPClient: hc, Header: h}
	case Gemini:
		return &gemini.Client{BaseURL: baseURL, APIKey: key, HTTPClient: hc, Header: h}
	case OpenAIResponses:
		return &responses.Client{BaseURL: baseURL, APIKey: key, HTTPClient: hc, Header: h}
	}
	return &openai.Client{BaseURL: baseURL, APIKey: key, HTTPClient: hc, Header: h}
}

// evalGate reads the results file of route's eval_gate and returns the
// route's Approve. The file is read once, when the config is built (each
// load and reload); a file that cannot be read is a config error, since
// without it no fallback target would serve.
func (b *builder) evalGate(route string, g *EvalGate) (func(*router.Target) (bool, string), error) {
	path := g.Results
	if !filepath.IsAbs(path) && b.c.File != "" {
		path = filepath.Join(filepath.Dir(b.c.File), path)
	}
	field := "routes." + route + ".eval_gate.results"
	recs, err := evalresults.Read(path)
	if err != nil {
		pos := b.c.where(field, false)
		return nil, &Error{File: b.c.File, Line: pos.line, Column: pos.col, Field: field,
			Msg: fmt.Sprintf("%v: run detour eval --route %s --results %s first, or leave eval_gate out", err, route, g.Results)}
	}
	ok := evalresults.Gate(recs, evalresults.GateSettings{Suite: g.Suite, MinAccuracy: g.MinAccuracy, MinAnswers: g.MinAnswers}, g.Results)
	return func(t *router.Target) (bool, string) { return ok(t.ID()) }, nil
}
