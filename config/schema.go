package config

import (
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/policy"
)

// The fields each mapping accepts, in the order messages list them.
var (
	topFields      = []string{"providers", "targets", "routes", "gateway"}
	providerFields = []string{"preset", "dialect", "base_url", "key_env", "pool", "headers"}
	targetFields   = []string{"family", "context", "max_output", "price"}
	priceFields    = []string{"in", "out"}
	routeFields    = []string{"chain", "budget", "fail_closed_on", "fallback", "first_token", "idle_timeout", "buffered"}
	budgetFields   = []string{"profile", "max_attempts", "max_per_target", "deadline", "reserve",
		"max_server_wait", "base_backoff", "max_backoff", "max_extra_cost", "queue"}
	profiles = []string{"interactive", "batch"}
)

// top decodes the document's root mapping.
func (d *decoder) top(n ast.Node) {
	switch d.resolve(n).(type) {
	case nil, *ast.NullNode, *ast.MappingNode, *ast.MappingValueNode:
	default:
		d.failf(n, "", "expected a mapping with providers:, targets: and routes: at the top, got %s (see examples/detour.yaml)",
			describe(d.resolve(n)))
		return
	}
	pairs, _ := d.mapping(n, "", "field")
	for _, p := range pairs {
		d.mark(p.key, p)
		switch p.key {
		case "providers":
			d.providers(p.val)
		case "targets":
			d.targets(p.val)
		case "routes":
			d.routes(p.val)
		case "gateway":
			d.gateway(p.val)
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
			default:
				d.unknown(f, path, targetFields)
			}
		}
		d.c.Targets[p.key] = t
	}
}

// routes decodes the routes: mapping.
func (d *decoder) routes(n ast.Node) {
	pairs, _ := d.mapping(n, "routes", "route")
	for _, p := range pairs {
		path := child("routes", p.key)
		d.mark(path, p)
		r := Route{Name: p.key, BudgetName: "interactive", Budget: policy.Interactive()}
		fields, _ := d.mapping(p.val, path, "field")
		for _, f := range fields {
			fp := child(path, f.key)
			d.mark(fp, f)
			switch f.key {
			case "chain":
				items, _ := d.list(f.val, fp, "[groq/llama-3.3-70b-versatile, deepseek/deepseek-chat]")
				r.Chain = make([]string, 0, len(items))
				for i, it := range items {
					ip := index(fp, i)
					d.c.pos[ip] = startPos(it)
					s, _ := d.str(it, ip)
					r.Chain = append(r.Chain, s)
				}
			case "budget":
				r.BudgetName, r.Budget = d.budget(f.val, fp)
			case "fail_closed_on":
				items, ok := d.list(f.val, fp, "[invalid, policy]")
				if ok && items != nil {
					r.FailClosedOn = make([]classify.Kind, 0, len(items))
				}
				for i, it := range items {
					ip := index(fp, i)
					d.c.pos[ip] = startPos(it)
					s, _ := d.str(it, ip)
					r.FailClosedOn = append(r.FailClosedOn, classify.Kind(s))
				}
			case "fallback":
				fb, ok := d.boolean(f.val, fp)
				r.NoFallback = ok && !fb
			case "first_token", "idle_timeout", "buffered":
				d.routeStream(&r, f, fp)
			default:
				d.unknown(f, path, routeFields)
			}
		}
		d.c.Routes[p.key] = r
	}
}

// budget decodes a profile name or an inline budget, whose fields override
// the profile named by its profile: field (interactive when absent).
func (d *decoder) budget(n ast.Node, path string) (string, policy.Budget) {
	switch d.resolve(n).(type) {
	case nil, *ast.NullNode:
		return "interactive", policy.Interactive()
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		s, ok := d.str(n, path)
		if !ok {
			return "interactive", policy.Interactive()
		}
		b, found := policy.Profile(s)
		if !found || s == "" {
			d.failf(n, path, "unknown budget profile %s%s; or write the fields inline, like budget: {deadline: 30s, max_attempts: 4}",
				quote(s), didYouMean(s, profiles, "profiles"))
			return "interactive", policy.Interactive()
		}
		return s, b
	}
	pairs, _ := d.mapping(n, path, "field")
	b := policy.Interactive()
	for _, p := range pairs {
		if p.key != "profile" {
			continue
		}
		fp := child(path, p.key)
		d.mark(fp, p)
		if s, ok := d.str(p.val, fp); ok {
			if pb, found := policy.Profile(s); found && s != "" {
				b = pb
			} else {
				d.failf(p.val, fp, "unknown budget profile %s%s", quote(s), didYouMean(s, profiles, "profiles"))
			}
		}
	}
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
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
		case "deadline", "reserve", "max_server_wait", "base_backoff", "max_backoff":
			v, ok := d.duration(p.val, fp)
			if ok {
				*durationField(&b, p.key) = v
			}
		case "max_extra_cost":
			v, ok := d.number(p.val, fp)
			if ok && v < 0 {
				d.failf(p.val, fp, "must be 0 (no ceiling) or more USD")
			} else if ok {
				b.MaxExtraCost = v
			}
		case "queue":
			b.Queue, _ = d.boolean(p.val, fp)
		default:
			d.unknown(p, path, budgetFields)
		}
	}
	return "", b
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
	case "base_backoff":
		return &b.BaseBackoff
	}
	return &b.MaxBackoff
}
