package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

// KeyState says whether a target's key is available.
type KeyState string

// The key states `detour check` prints.
const (
	// KeySet means the key variable is set (its value is never shown).
	KeySet KeyState = "set"
	// KeyMissing means the key variable is unset or empty: the router skips
	// the target.
	KeyMissing KeyState = "missing"
	// KeyNotNeeded means the provider takes no key (a local server).
	KeyNotNeeded KeyState = "not_needed"
)

// KeyStatus is the key situation of one target.
type KeyStatus struct {
	// Target is "provider/model".
	Target string
	// Provider is the target's provider.
	Provider string
	// KeyEnv names the key variable; empty when none is needed.
	KeyEnv string
	// State says whether the key is set, missing or not needed.
	State KeyState
}

// String returns "set (GROQ_API_KEY)", "missing GROQ_API_KEY" or "not needed".
func (k KeyStatus) String() string {
	switch k.State {
	case KeySet:
		return "set (" + k.KeyEnv + ")"
	case KeyMissing:
		return "missing " + k.KeyEnv
	}
	return "not needed"
}

// Keys returns the key status of every target the routes use, route by
// route (sorted by name) in chain order, each target once. A nil getenv
// means os.Getenv. Values are never returned, only whether they are set.
func (c *Config) Keys(getenv func(string) string) []KeyStatus {
	if getenv == nil {
		getenv = os.Getenv
	}
	var out []KeyStatus
	seen := map[string]bool{}
	for _, name := range c.RouteNames() {
		for _, addr := range c.Routes[name].Chain {
			if seen[addr] {
				continue
			}
			seen[addr] = true
			out = append(out, c.keyStatus(addr, getenv))
		}
	}
	return out
}

// keyStatus returns addr's key status.
func (c *Config) keyStatus(addr string, getenv func(string) string) KeyStatus {
	prov, _, _ := splitAddr(addr)
	p, _ := c.Provider(prov)
	k := KeyStatus{Target: addr, Provider: prov, KeyEnv: p.KeyEnv, State: KeyNotNeeded}
	if p.KeyEnv != "" {
		k.State = KeyMissing
		if strings.TrimSpace(getenv(p.KeyEnv)) != "" {
			k.State = KeySet
		}
	}
	return k
}

// Warnings returns what `detour check` should point out in a valid config,
// one line each: a route whose targets all bill from one pool (or that has
// a single target), a paid target placed before a free one, a route with no
// key set at all, targets that fallback: false makes unreachable, targets
// placed past the budget's max_attempts (reached only when an earlier one
// is skipped), a header_timeout or first_token that lets the first attempt
// eat the time the budget keeps for the next candidates (once, at
// defaults:, for the routes that keep the defaults' limits), a
// fail_closed_on without policy, a key sent over plain http to a remote
// host, and no routes at all. Each starts with FILE:LINE:COLUMN when the config came
// from a file. A nil getenv means os.Getenv.
func (c *Config) Warnings(getenv func(string) string) []string {
	if getenv == nil {
		getenv = os.Getenv
	}
	var out []string
	warn := func(field, format string, args ...any) {
		prefix := ""
		if p := c.where(field, true); c.File != "" && p.line > 0 {
			prefix = fmt.Sprintf("%s:%d:%d: ", c.File, p.line, p.col)
		} else if c.File != "" {
			prefix = c.File + ": "
		}
		out = append(out, prefix+fmt.Sprintf(format, args...))
	}
	if len(c.Routes) == 0 {
		warn("routes", "no routes: every request must name a target as provider/model; add routes: (see examples/detour.yaml)")
	}
	if fc := c.Defaults.FailClosedOn; fc != nil && !slices.Contains(fc, classify.Policy) {
		warn(child("defaults", "fail_closed_on"), "defaults: fail_closed_on leaves out policy, so a refused request is sent on "+
			"to another model, which may be laxer")
	}
	for _, name := range c.RouteNames() {
		c.routeWarnings(name, getenv, warn)
	}
	c.timeWarnings(warn)
	for _, name := range c.ProviderNames() {
		p := c.Providers[name]
		u, err := url.Parse(p.BaseURL)
		if err != nil || u.Scheme != "http" || p.KeyEnv == "" || isLoopback(u.Hostname()) {
			continue
		}
		warn(child(child("providers", name), "base_url"),
			"provider %q: base_url is plain http to a remote host, so the key would travel unencrypted: use https", name)
	}
	return out
}

// routeWarnings adds the warnings of one route.
func (c *Config) routeWarnings(name string, getenv func(string) string, warn func(string, string, ...any)) {
	r := c.Routes[name]
	path := child("routes", name)
	if len(r.Chain) == 0 {
		return
	}
	type info struct {
		addr   string
		t      Target
		p      Provider
		paid   bool
		status KeyStatus
	}
	infos := make([]info, len(r.Chain))
	pools := map[Pool]bool{}
	allMissing := true
	var missingVars []string
	for i, addr := range r.Chain {
		t := c.target(addr)
		p, _ := c.Provider(t.Provider)
		in := info{addr: addr, t: t, p: p, status: c.keyStatus(addr, getenv)}
		switch p.pool() {
		case Credit, Payg, Prepaid:
			in.paid = t.Price.In > 0 || t.Price.Out > 0
		}
		infos[i] = in
		pools[p.pool()] = true
		if in.status.State != KeyMissing {
			allMissing = false
		} else if !slices.Contains(missingVars, p.KeyEnv) {
			missingVars = append(missingVars, p.KeyEnv)
		}
	}
	switch {
	case len(r.Chain) == 1:
		warn(path, "route %q has one target, so nothing to move on to when it fails: add one from another provider", name)
	case len(pools) == 1:
		warn(path, "route %q: every target bills from pool %s, so they run dry together: add one from another pool",
			name, infos[0].p.pool())
	}
	for i, a := range infos {
		if !a.paid {
			continue
		}
		for j := i + 1; j < len(infos); j++ {
			if infos[j].p.pool() == Free {
				warn(index(child(path, "chain"), i), "route %q: chain[%d] %s (%s, $%.2f/$%.2f per M tokens) comes before the free chain[%d] %s: "+
					"put free targets first to spend nothing while they last", name, i, a.addr, a.p.pool(), a.t.Price.In, a.t.Price.Out, j, infos[j].addr)
				break
			}
		}
		break
	}
	if allMissing {
		warn(path, "route %q: no target has its key set, so every request fails: export %s", name, strings.Join(missingVars, " or "))
	}
	if r.NoFallback {
		fam := infos[0].t
		var lost []string
		for _, a := range infos[1:] {
			if familyOf(a.t) != familyOf(fam) {
				lost = append(lost, a.addr)
			}
		}
		if len(lost) > 0 {
			warn(child(path, "fallback"), "route %q has fallback: false, so only family %s is used; never reached: %s "+
				"(set family: under targets: when these are the same model)", name, familyOf(fam), strings.Join(lost, ", "))
		}
	}
	c.attemptsWarning(name, r, warn)
	inherited := c.Defaults.FailClosedOn != nil && slices.Equal(r.FailClosedOn, c.Defaults.FailClosedOn)
	if r.FailClosedOn != nil && !inherited && !slices.Contains(r.FailClosedOn, classify.Policy) {
		warn(child(path, "fail_closed_on"), "route %q: fail_closed_on leaves out policy, so a refused request is sent on "+
			"to another model, which may be laxer", name)
	}
}

// attemptsWarning adds the warning of a route whose chain is longer than
// its budget's max_attempts: the targets past it get a send only when an
// earlier candidate is skipped without one.
func (c *Config) attemptsWarning(name string, r Route, warn func(string, string, ...any)) {
	n := r.Budget.WithDefaults().MaxAttempts
	if len(r.Chain) <= n {
		return
	}
	var late []string
	for i := n; i < len(r.Chain); i++ {
		late = append(late, fmt.Sprintf("chain[%d] %s", i, r.Chain[i]))
	}
	verb := "is"
	if len(late) > 1 {
		verb = "are"
	}
	warn(index(child(child("routes", name), "chain"), n), "route %q: budget max_attempts is %d, so %s %s reached only when an earlier "+
		"candidate is skipped without a send (no key, parked): raise max_attempts to %d, or shorten the chain",
		name, n, joinAnd(late), verb, len(r.Chain))
}

// misfit says why a first attempt may run into the time a budget keeps for
// the next candidates: the field to point at, the cause, its effect and the
// fix.
type misfit struct {
	field, cause, effect, fix string
}

// timeMisfit checks that a first attempt under budget b and the limits
// headerSet and firstSet (as written: 0 the built-in default, negative none)
// leaves the next candidates the budget's reserve: header_timeout and
// first_token must be below the deadline less the reserve. ok is false when
// they are.
func timeMisfit(b policy.Budget, headerSet, firstSet time.Duration) (m misfit, ok bool) {
	b = b.WithDefaults()
	window := b.Deadline - b.Reserve
	if window <= 0 {
		return misfit{field: "budget", cause: fmt.Sprintf("budget reserve %s is not below its deadline %s", short(b.Reserve), short(b.Deadline)),
			effect: "no time is left for the first attempt", fix: "lower reserve or raise deadline"}, true
	}
	rr := router.Route{HeaderTimeout: headerSet, FirstToken: firstSet}
	header, firstToken, _ := rr.Timeouts()
	var over []string
	longest, off := time.Duration(0), false
	for _, l := range []struct {
		name       string
		set, limit time.Duration
	}{{"header_timeout", headerSet, header}, {"first_token", firstSet, firstToken}} {
		switch {
		case l.limit == 0:
			over = append(over, l.name+" 0 (no limit)")
			off = true
		case l.limit >= window:
			what := l.name + " " + short(l.limit)
			if l.set == 0 {
				what += " (built-in default)"
			}
			over = append(over, what)
			longest = max(longest, l.limit)
		default:
			continue
		}
		if m.field == "" {
			m.field = l.name
		}
	}
	if len(over) == 0 {
		return misfit{}, false
	}
	verb, it := "is", "it"
	if len(over) > 1 {
		verb, it = "are", "them"
	}
	m.cause = fmt.Sprintf("%s %s not below the deadline less the reserve (%s - %s = %s)",
		joinAnd(over), verb, short(b.Deadline), short(b.Reserve), short(window))
	m.effect = "the first attempt, when its target stays silent, may use the time kept for the next candidates"
	m.fix = fmt.Sprintf("set %s below %s", it, short(window))
	if !off {
		m.fix += fmt.Sprintf(", or raise budget.deadline above %s", short(longest+b.Reserve))
	}
	return m, true
}

// keepsDefaultTimes reports whether r's deadline, reserve, header_timeout
// and first_token are those of a defaults: section that sets any of them,
// so that a misfit is pointed out once, at defaults:, rather than once per
// route.
func (c *Config) keepsDefaultTimes(r Route) bool {
	d := c.Defaults
	if d.Budget == (policy.Budget{}) && d.HeaderTimeout == 0 && d.FirstToken == 0 {
		return false // no defaults: section on these
	}
	db, rb := d.route("", nil).Budget.WithDefaults(), r.Budget.WithDefaults()
	return rb.Deadline == db.Deadline && rb.Reserve == db.Reserve &&
		r.HeaderTimeout == d.HeaderTimeout && r.FirstToken == d.FirstToken
}

// timeWarnings adds the warnings of routes (of more than one target) whose
// first attempt may eat the time kept for the rest of the chain: one for the
// routes that keep the defaults' limits, at defaults:, then one per route.
func (c *Config) timeWarnings(warn func(string, string, ...any)) {
	var shared []string
	for _, name := range c.RouteNames() {
		if r := c.Routes[name]; len(r.Chain) > 1 && c.keepsDefaultTimes(r) {
			if _, ok := timeMisfit(r.Budget, r.HeaderTimeout, r.FirstToken); ok {
				shared = append(shared, name)
			}
		}
	}
	if len(shared) > 0 {
		d := c.Defaults.route("", nil)
		m, _ := timeMisfit(d.Budget, d.HeaderTimeout, d.FirstToken)
		for i, name := range shared {
			shared[i] = fmt.Sprintf("%q", name)
		}
		routes := "route " + shared[0]
		if len(shared) > 1 {
			routes = "routes " + joinAnd(shared)
		}
		field := "defaults"
		for _, f := range []string{child(field, m.field), child(child(field, "budget"), "deadline"), child(field, "budget")} {
			if _, written := c.keyPos[f]; written {
				field = f
				break
			}
		}
		warn(field, "defaults: %s, so in %s %s: %s", m.cause, routes, m.effect, m.fix)
	}
	for _, name := range c.RouteNames() {
		r := c.Routes[name]
		if len(r.Chain) < 2 || c.keepsDefaultTimes(r) {
			continue
		}
		if m, ok := timeMisfit(r.Budget, r.HeaderTimeout, r.FirstToken); ok {
			warn(child(child("routes", name), m.field), "route %q: %s, so %s: %s", name, m.cause, m.effect, m.fix)
		}
	}
}

// joinAnd joins items as "a", "a and b" or "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// short is ShortDuration.
func short(d time.Duration) string { return ShortDuration(d) }

// ShortDuration writes d as detour's messages and `check` do, without
// trailing zero units: "5m" for 5m0s, "24h" for 24h0m0s, "1m30s" as it is.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// familyOf returns t's family, or its model when none is known.
func familyOf(t Target) string {
	if t.Family != "" {
		return t.Family
	}
	return t.Model
}

// isLoopback reports whether host names this machine.
func isLoopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// embeddingsFamilies refuses the chain of a route marked embeddings: true
// whose targets are of more than one model family (targets:
// ."p/m".family, else the model): a vector of one model means nothing
// beside another's, so such a route could never fail over. The error
// points at the first target of another family than chain[0]'s.
func (v *validator) embeddingsFamilies(path string, r Route) {
	if len(r.Chain) < 2 {
		return
	}
	first := familyOf(v.c.target(r.Chain[0]))
	for i, addr := range r.Chain[1:] {
		if f := familyOf(v.c.target(addr)); f != first {
			v.fail(index(child(path, "chain"), i+1), false, nil,
				"%s is of model family %s, but chain[0] %s is of %s, and this route has embeddings: true: "+
					"vectors of different models do not mix, so list targets of one family only "+
					"(set family: under targets: when two names are the same model)",
				quote(addr), quote(f), quote(r.Chain[0]), quote(first))
			return
		}
	}
}
