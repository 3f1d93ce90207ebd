package config

import (
	"github.com/detourhq/detour/fit"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/yamlnode"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

// The fields each mapping accepts, in the order messages list them.
var (
	topFields      = []string{"providers", "targets", "routes", "defaults", "health", "gateway", "telemetry", "probe"}
	providerFields = []string{"preset", "dialect", "base_url", "key_env", "pool", "headers", "offers", "disabled", "limits"}
	targetFields   = []string{"family", "context", "max_output", "price", "offers", "disabled", "limits"}
	priceFields    = []string{"in", "out"}
	routeFields    = []string{"chain", "budget", "fail_closed_on", "fallback",
		"header_timeout", "first_token", "idle_timeout", "max_duration", "buffered", "max_buffer", "over_buffer", "requires",
		"cache_answers", "static_answer", "daily_cost_limit", "adapt", "lower_max_tokens", "probe", "eval_gate"}
	defaultsFields = routeFields[1:]
	// routeOnlyFields are the fields of a route that defaults: has not.
	routeOnlyFields = []string{"embeddings"}
	healthFields    = []string{"failure_threshold", "open_for", "wall_cooldown", "max_park", "probe_timeout", "forget",
		"store", "store_password_env", "namespace"}
	budgetFields = []string{"profile", "max_attempts", "max_per_target", "deadline", "reserve",
		"max_server_wait", "max_retry_wait", "base_backoff", "max_backoff", "max_extra_cost", "queue"}
	profiles = []string{"interactive", "batch"}
	// limitFields are the windows of a limits: mapping.
	limitFields = []string{"rpm", "rph", "rpd", "tpm", "tph", "tpd"}
	// adaptFields are the fields of a route's adapt:.
	adaptFields = []string{"keep_last_turns", "short_system", "drop_tool_results"}
	// evalGateFields are the fields of a route's eval_gate:.
	evalGateFields = []string{"results", "suite", "min_accuracy", "min_answers"}
	// overBuffer are the words of over_buffer: what a buffered stream does
	// past max_buffer.
	overBuffer = []string{"stream", "fail_over"}
)

// top decodes the document's root mapping. defaults: is read first,
// wherever it stands, since every route starts from it.
func (d *decoder) top(n ast.Node) {
	switch d.resolve(n).(type) {
	case nil, *ast.NullNode, *ast.MappingNode, *ast.MappingValueNode:
	default:
		d.failf(n, "", "expected a mapping with providers:, targets: and routes: at the top, got %s (see examples/detour.yaml)",
			yamlnode.Describe(d.resolve(n)))
		return
	}
	pairs, _ := d.mapping(n, "", "field")
	for _, p := range pairs {
		if p.key == "defaults" {
			d.mark(p.key, p)
			d.defaults(p.val)
		}
	}
	for _, p := range pairs {
		d.mark(p.key, p)
		switch p.key {
		case "providers":
			d.providers(p.val)
		case "targets":
			d.targets(p.val)
		case "routes":
			d.routes(p.val)
		case "defaults":
		case "health":
			d.health(p.val)
		case "gateway":
			d.gateway(p.val)
		case "telemetry":
			d.telemetry(p.val)
		case "probe":
			d.probe(p.val)
		default:
			d.unknown(p, "", topFields)
		}
	}
}

// providers decodes the providers: mapping.
func (d *decoder) providers(n ast.Node) {
	pairs, _ := d.mapping(n, "providers", "provider")
	for _, p := range pairs {
		path := child("providers", p.key)
		d.mark(path, p)
		d.provider(p.key, path, p.val)
	}
	d.keyHint = "PROVIDER_API_KEY"
}

// provider decodes one provider, starting from its preset (preset: NAME, or
// a preset of the same name) and overriding the fields it writes.
func (d *decoder) provider(name, path string, n ast.Node) {
	d.keyHint = envName(name)
	pairs, ok := d.mapping(n, path, "field")
	if !ok {
		return
	}
	prov := Provider{Name: name}
	if ps, ok := LookupPreset(name); ok {
		prov = ps.provider(name)
	}
	for _, p := range pairs { // the preset first: the other fields override it
		if p.key != "preset" {
			continue
		}
		fp := child(path, p.key)
		d.mark(fp, p)
		s, ok := d.str(p.val, fp)
		if !ok {
			continue
		}
		ps, found := LookupPreset(s)
		if !found {
			d.failf(p.val, fp, "unknown preset %s%s", quote(s), didYouMean(s, presetNames(), "presets"))
			continue
		}
		prov = ps.provider(name)
	}
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
		switch p.key {
		case "preset":
		case "dialect":
			s, _ := d.str(p.val, fp)
			prov.Dialect = Dialect(s)
		case "base_url":
			prov.BaseURL, _ = d.str(p.val, fp)
		case "key_env":
			prov.KeyEnv, _ = d.str(p.val, fp)
		case "pool":
			s, _ := d.str(p.val, fp)
			prov.Pool = Pool(s)
		case "headers":
			hs, _ := d.mapping(p.val, fp, "field")
			prov.Headers = map[string]string{}
			for _, h := range hs {
				hp := child(fp, h.key)
				d.mark(hp, h)
				prov.Headers[h.key], _ = d.str(h.val, hp)
			}
		case "offers":
			prov.Offers = d.offers(p.val, fp)
		case "disabled":
			prov.Disabled, _ = d.boolean(p.val, fp)
		case "limits":
			prov.Limits = d.limits(p.val, fp)
		default:
			d.unknown(p, path, providerFields)
		}
	}
	if prov.Dialect == "" {
		prov.Dialect = OpenAI
	}
	if prov.Pool == "" {
		prov.Pool = Payg
	}
	d.c.Providers[name] = prov
}

// envName returns the key variable to suggest for a provider: its preset's,
// else NAME_API_KEY.
func envName(name string) string {
	if ps, ok := LookupPreset(name); ok && ps.KeyEnv != "" {
		return ps.KeyEnv
	}
	up := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, name)
	if up == "" || (up[0] >= '0' && up[0] <= '9') {
		up = "P" + up
	}
	return up + "_API_KEY"
}

// targets decodes the targets: mapping of optional detail.
func (d *decoder) targets(n ast.Node) {
	pairs, _ := d.mapping(n, "targets", "target")
	for _, p := range pairs {
		path := child("targets", p.key)
		d.mark(path, p)
		prov, model, _ := splitAddr(p.key)
		t := Target{Provider: prov, Model: model}
		fields, _ := d.mapping(p.val, path, "field")
		for _, f := range fields {
			fp := child(path, f.key)
			d.mark(fp, f)
			switch f.key {
			case "family":
				t.Family, _ = d.str(f.val, fp)
			case "context":
				t.Context, _ = d.integer(f.val, fp)
			case "max_output":
				t.MaxOutput, _ = d.integer(f.val, fp)
			case "price":
				ps, _ := d.mapping(f.val, fp, "field")
				for _, q := range ps {
					qp := child(fp, q.key)
					d.mark(qp, q)
					switch q.key {
					case "in":
						t.Price.In, _ = d.number(q.val, qp)
					case "out":
						t.Price.Out, _ = d.number(q.val, qp)
					default:
						d.unknown(q, fp, priceFields)
					}
				}
			case "offers":
				t.Offers = d.offers(f.val, fp)
			case "disabled":
				t.Disabled, _ = d.boolean(f.val, fp)
			case "limits":
				t.Limits = d.limits(f.val, fp)
			default:
				d.unknown(f, path, targetFields)
			}
		}
		d.c.Targets[p.key] = t
	}
}

// limits decodes a limits: mapping of windows (rpm: 30, tpd: 100000):
// whole numbers, 0 (no limit) or more.
func (d *decoder) limits(n ast.Node, path string) router.Limits {
	var l router.Limits
	fields, _ := d.mapping(n, path, "field")
	for _, f := range fields {
		fp := child(path, f.key)
		d.mark(fp, f)
		dst := map[string]*int{"rpm": &l.RPM, "rph": &l.RPH, "rpd": &l.RPD, "tpm": &l.TPM, "tph": &l.TPH, "tpd": &l.TPD}[f.key]
		if dst == nil {
			d.unknown(f, path, limitFields)
			continue
		}
		v, ok := d.integer(f.val, fp)
		if ok && v < 0 {
			d.failf(f.val, fp, "%s is negative: write the most per window, or leave it out for no limit", f.key)
			v = 0
		}
		*dst = v
	}
	return l
}

// routes decodes the routes: mapping. Each route starts from the defaults.
func (d *decoder) routes(n ast.Node) {
	pairs, _ := d.mapping(n, "routes", "route")
	for _, p := range pairs {
		path := child("routes", p.key)
		d.mark(path, p)
		r := d.c.Defaults.route(p.key, nil)
		fields, _ := d.mapping(p.val, path, "field")
		for _, f := range fields {
			fp := child(path, f.key)
			d.mark(fp, f)
			if f.key == "embeddings" {
				r.Embeddings, _ = d.boolean(f.val, fp)
				continue
			}
			if f.key != "chain" {
				d.routeField(&r, f, fp, path, slices.Concat(routeFields, routeOnlyFields))
				continue
			}
			items, _ := d.list(f.val, fp, "[groq/llama-3.3-70b-versatile, deepseek/deepseek-chat]")
			r.Chain = make([]string, 0, len(items))
			for i, it := range items {
				ip := index(fp, i)
				if d.isMappingNode(it) {
					d.chainGroup(&r, it, ip, fp)
					continue
				}
				d.c.pos[index(fp, len(r.Chain))] = startPos(it)
				s, _ := d.str(it, ip)
				r.Chain = append(r.Chain, s)
			}
		}
		d.c.Routes[p.key] = r
	}
}

// defaults decodes the defaults: section: the fields of a route but chain.
func (d *decoder) defaults(n ast.Node) {
	const path = "defaults"
	var r Route
	pairs, _ := d.mapping(n, path, "field")
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
		if p.key == "chain" {
			d.fail(startPos(p.keyN), fp, nil, "a chain has no default: each route lists its own; "+
				"to share one, anchor it in the first route (chain: &main [...]) and write chain: *main in the others")
			continue
		}
		d.routeField(&r, p, fp, path, defaultsFields)
	}
	d.c.Defaults = Defaults{RouteSettings: r.RouteSettings}
}

// routeField decodes one field f (at fp) of a route or of defaults: (at
// path) into r, which holds what the route starts from; allowed lists the
// fields for an unknown one.
func (d *decoder) routeField(r *Route, f pair, fp, path string, allowed []string) {
	switch f.key {
	case "budget":
		name, base := r.BudgetName, r.Budget
		if base == (policy.Budget{}) { // defaults: starts from interactive
			name, base = "interactive", policy.Interactive()
		}
		r.BudgetName, r.Budget = d.budget(f.val, fp, name, base)
	case "fail_closed_on":
		items, ok := d.list(f.val, fp, "[invalid, policy]")
		r.FailClosedOn = nil
		if ok && items != nil {
			r.FailClosedOn = make([]classify.Kind, 0, len(items))
		}
		for i, it := range items {
			ip := index(fp, i)
			d.c.pos[ip] = startPos(it)
			s, _ := d.str(it, ip)
			r.FailClosedOn = append(r.FailClosedOn, classify.Kind(s))
		}
	case "requires":
		r.Requires = d.offers(f.val, fp)
	case "fallback":
		if fb, ok := d.boolean(f.val, fp); ok {
			r.NoFallback = !fb
		}
	case "header_timeout":
		r.HeaderTimeout = d.limitOr(r.HeaderTimeout, f.val, fp, router.DefaultHeaderTimeout)
	case "first_token":
		r.FirstToken = d.limitOr(r.FirstToken, f.val, fp, router.DefaultFirstToken)
	case "idle_timeout":
		r.IdleTimeout = d.limitOr(r.IdleTimeout, f.val, fp, router.DefaultIdleTimeout)
	case "max_duration":
		r.MaxDuration = d.limitOr(r.MaxDuration, f.val, fp, 0)
	case "buffered":
		if b, ok := d.boolean(f.val, fp); ok {
			r.Buffered = b
		}
	case "max_buffer":
		if n, ok := d.size(f.val, fp, router.DefaultMaxBuffer); ok {
			if n > math.MaxInt32 {
				d.failf(f.val, fp, "%d bytes is more than a stream may hold; at most 2GiB", n)
			} else {
				r.MaxBuffer = int(n)
			}
		}
	case "lower_max_tokens":
		r.LowerMaxTokens, _ = d.boolean(f.val, fp)
	case "adapt":
		r.Adapt = d.adapt(f.val, fp)
	case "eval_gate":
		r.EvalGate = d.evalGate(f.val, fp)
	case "daily_cost_limit":
		r.DailyCost, _ = d.dollars(f.val, fp)
	case "cache_answers":
		r.CacheAnswers, _ = d.duration(f.val, fp)
	case "static_answer":
		r.StaticAnswer, _ = d.str(f.val, fp)
	case "probe":
		if s, ok := d.word(f.val, fp, probeMethods,
			"is not how detour probe may check this route's targets: write metadata (the model list, free) or generate (a one-token answer, billed, at most once per probe.generate_every)"); ok {
			r.ProbeGenerate = s == "generate"
		}
	case "over_buffer":
		if s, ok := d.word(f.val, fp, overBuffer,
			"is not what a buffered stream can do past max_buffer: write stream (send what it holds, stream the rest) or fail_over (drop it, try the next candidate)"); ok {
			r.FailOverPastBuffer = s == "fail_over"
		}
	default:
		d.unknown(f, path, allowed)
	}
}

// limitOr reads a time limit with d.limit, or returns old when it cannot.
func (d *decoder) limitOr(old time.Duration, n ast.Node, path string, def time.Duration) time.Duration {
	if v, ok := d.limit(n, path, def); ok {
		return v
	}
	return old
}

// health decodes the health: section.
func (d *decoder) health(n ast.Node) {
	const path = "health"
	pairs, _ := d.mapping(n, path, "field")
	var s health.Settings
	var h Health
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
		switch p.key {
		case "failure_threshold":
			v, ok := d.integer(p.val, fp)
			if ok && v < 1 {
				d.failf(p.val, fp, "must be at least 1 (failures in a row that park a target); leave the field out to take the default (%d)",
					health.DefaultFailureThreshold)
			} else if ok {
				s.FailureThreshold = v
			}
		case "open_for":
			s.OpenFor, _ = d.duration(p.val, fp)
		case "wall_cooldown":
			s.WallCooldown, _ = d.duration(p.val, fp)
		case "max_park":
			s.MaxPark, _ = d.duration(p.val, fp)
		case "probe_timeout":
			s.ProbeTimeout, _ = d.duration(p.val, fp)
		case "forget":
			s.Forget, _ = d.duration(p.val, fp)
		case "store":
			if v, ok := d.str(p.val, fp); ok {
				if _, err := ParseStore(v); err != nil {
					d.failf(p.val, fp, "%v", err)
				}
				h.Store = v
			}
		case "store_password_env":
			h.StorePasswordEnv, _ = d.str(p.val, fp)
		case "namespace":
			if v, ok := d.str(p.val, fp); ok {
				if !validNamespace(v) {
					d.failf(p.val, fp, "%s is not a namespace: use letters, digits, '.', '-' and '_' (at most 64), like prod-eu", quote(v))
				}
				h.Namespace = v
			}
		default:
			d.unknown(p, path, healthFields)
		}
	}
	h.Settings = s
	d.c.Health = h
}

// budget decodes a profile name or an inline budget. An inline budget's
// fields apply on top of the profile its profile: field names, else on top
// of base (named baseName: the budget the route starts from). The name
// returned is the profile's when no field changes it, else "".
func (d *decoder) budget(n ast.Node, path, baseName string, base policy.Budget) (string, policy.Budget) {
	switch d.resolve(n).(type) {
	case nil, *ast.NullNode:
		return baseName, base
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		s, ok := d.str(n, path)
		if !ok {
			return baseName, base
		}
		b, found := policy.Profile(s)
		if !found || s == "" {
			d.failf(n, path, "unknown budget profile %s%s; or write the fields inline, like budget: {deadline: 30s, max_attempts: 4}",
				quote(s), didYouMean(s, profiles, "profiles"))
			return baseName, base
		}
		return s, b
	}
	pairs, _ := d.mapping(n, path, "field")
	name, b := baseName, base
	for _, p := range pairs {
		if p.key != "profile" {
			continue
		}
		fp := child(path, p.key)
		d.mark(fp, p)
		if s, ok := d.str(p.val, fp); ok {
			if pb, found := policy.Profile(s); found && s != "" {
				name, b = s, pb
			} else {
				d.failf(p.val, fp, "unknown budget profile %s%s", quote(s), didYouMean(s, profiles, "profiles"))
			}
		}
	}
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
		if p.key != "profile" {
			name = ""
		}
		switch p.key {
		case "profile":
		case "max_attempts", "max_per_target":
			v, ok := d.integer(p.val, fp)
			if ok && v < 1 {
				d.failf(p.val, fp, "must be at least 1; leave the field out to take the default")
			} else if ok && p.key == "max_attempts" {
				b.MaxAttempts = v
			} else if ok {
				b.MaxPerTarget = v
			}
		case "deadline", "reserve", "max_server_wait", "max_retry_wait", "base_backoff", "max_backoff":
			v, ok := d.duration(p.val, fp)
			if ok {
				*durationField(&b, p.key) = v
			}
		case "max_extra_cost":
			b.MaxExtraCost, _ = d.dollars(p.val, fp)
		case "queue":
			b.Queue, _ = d.boolean(p.val, fp)
		default:
			d.unknown(p, path, budgetFields)
		}
	}
	return name, b
}

// durationField returns the Budget field a duration key sets.
func durationField(b *policy.Budget, key string) *time.Duration {
	switch key {
	case "deadline":
		return &b.Deadline
	case "reserve":
		return &b.Reserve
	case "max_server_wait":
		return &b.MaxServerWait
	case "max_retry_wait":
		return &b.MaxRetryWait
	case "base_backoff":
		return &b.BaseBackoff
	}
	return &b.MaxBackoff
}

// Offers are the words of providers.NAME.offers, targets."p/m".offers and
// routes.NAME.requires: a target's capabilities, and the data terms a
// provider states (a region is "region-" and its code: region-eu). The
// two kinds are read apart (IsTerm): stating a term says nothing of
// capabilities, and the reverse.
var Offers = []string{"images", "documents", "audio", "tools", "json_schema", "reasoning",
	"zero_retention", "no_training"}

// IsTerm reports whether word, one of Offers, is a data term
// (zero_retention, no_training, region-CODE) rather than a capability.
func IsTerm(word string) bool {
	return word == "zero_retention" || word == "no_training" || strings.HasPrefix(word, "region-")
}

// offers decodes a list of Offers words at path; an empty list is not nil
// (it declares that nothing is offered).
func (d *decoder) offers(n ast.Node, path string) []string {
	items, ok := d.list(n, path, "[images, tools, json_schema]")
	if !ok {
		return nil
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		ip := index(path, i)
		d.c.pos[ip] = startPos(it)
		w, ok := d.str(it, ip)
		if !ok {
			continue
		}
		if !slices.Contains(Offers, w) && !(strings.HasPrefix(w, "region-") && len(w) > len("region-")) {
			d.failf(it, ip, "unknown word %s%s; or region-CODE (region-eu)", quote(w), didYouMean(w, Offers, "words"))
			continue
		}
		out = append(out, w)
	}
	return out
}

// adapt decodes a route's adapt: section (fit.Adaptation).
func (d *decoder) adapt(n ast.Node, path string) *fit.Adaptation {
	a := &fit.Adaptation{}
	pairs, _ := d.mapping(n, path, "field")
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
		switch p.key {
		case "keep_last_turns", "drop_tool_results":
			v, ok := d.integer(p.val, fp)
			if ok && v < 1 {
				d.failf(p.val, fp, "must be 1 or more turns; leave the field out to keep every turn")
			} else if p.key == "keep_last_turns" {
				a.KeepLastTurns = v
			} else {
				a.DropToolResults = v
			}
		case "short_system":
			a.ShortSystem, _ = d.str(p.val, fp)
		default:
			d.unknown(p, path, adaptFields)
		}
	}
	return a
}

// evalGate decodes a route's eval_gate:.
func (d *decoder) evalGate(n ast.Node, path string) *EvalGate {
	g := &EvalGate{}
	pairs, _ := d.mapping(n, path, "field")
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
		switch p.key {
		case "results":
			g.Results, _ = d.str(p.val, fp)
		case "suite":
			g.Suite, _ = d.str(p.val, fp)
		case "min_accuracy":
			if v, ok := d.number(p.val, fp); ok && (v < 0 || v > 1) {
				d.failf(p.val, fp, "must be a share from 0 to 1 (0.8 is 80%%)")
			} else {
				g.MinAccuracy = v
			}
		case "min_answers":
			if v, ok := d.integer(p.val, fp); ok && v < 1 {
				d.failf(p.val, fp, "must be 1 or more answered calls")
			} else {
				g.MinAnswers = v
			}
		default:
			d.unknown(p, path, evalGateFields)
		}
	}
	if g.Results == "" && len(pairs) > 0 || n != nil && len(pairs) == 0 {
		d.failf(n, path, "needs results: the results file of detour eval (eval_gate: {results: eval.jsonl, min_accuracy: 0.8})")
	}
	return g
}
