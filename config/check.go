package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/detourhq/detour/classify"
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
// key set at all, targets that fallback: false makes unreachable, a
// fail_closed_on without policy, a key
// sent over plain http to a remote host, and no routes at all. A nil getenv
// means os.Getenv.
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
	for _, name := range c.RouteNames() {
		c.routeWarnings(name, getenv, warn)
	}
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
	if r.FailClosedOn != nil && !slices.Contains(r.FailClosedOn, classify.Policy) {
		warn(child(path, "fail_closed_on"), "route %q: fail_closed_on leaves out policy, so a refused request is sent on "+
			"to another model, which may be laxer", name)
	}
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
