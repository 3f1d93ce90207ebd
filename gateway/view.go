package gateway

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/wire/exchange"
)

// view is what one config file makes of the gateway: its routes, client
// keys and limits. It is read-only once made, but for the cache of
// directly named targets (tmu); a reload makes a new one.
type view struct {
	file      *config.Config
	gw        config.Gateway // with defaults
	loaded    time.Time      // when the config was read: the routes' creation time
	buildOpts config.BuildOptions

	routes       map[string]*router.Route
	routeNames   []string         // sorted
	providers    map[string]bool  // providers a request may name directly
	knownTargets map[string]bool  // targets with their own metrics series
	keys         []*clientKey     // empty: no key asked for
	secrets      []string         // upstream keys, scrubbed from all output
	answerKeys   *exchange.KeySet // every key detour holds, kept out of answers (keyguard.go); nil: none
	ready        bool             // some target has a key
	metricsKey   *[sha256.Size]byte

	tmu     sync.Mutex               // guards targets
	targets map[string]*router.Route // routes of directly named targets
	direct  directModels             // models named directly, per provider, capped
}

// newView builds what file makes, checking what serve refuses. prev, when
// not nil, is the view it replaces: a client key that keeps its name and
// limits keeps its slots and rate, so requests in flight still count.
func (s *Server) newView(file *config.Config, prev *view) (*view, error) {
	v := &view{file: file, gw: file.Gateway.WithDefaults(), loaded: s.clk.Now(),
		buildOpts: config.BuildOptions{Getenv: s.getenv, HTTPClient: s.client},
		providers: map[string]bool{}, knownTargets: map[string]bool{}, targets: map[string]*router.Route{}}
	routes, err := file.Build(v.buildOpts)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	v.routes = routes
	for name, r := range routes {
		v.routeNames = append(v.routeNames, name)
		for i := range r.Chain {
			t := &r.Chain[i]
			v.providers[t.Provider], v.knownTargets[t.ID()] = true, true
			v.ready = v.ready || t.Client != nil
		}
	}
	slices.Sort(v.routeNames)
	for name := range file.Providers {
		v.providers[name] = true
	}
	for addr := range file.Targets {
		v.knownTargets[addr] = true
	}
	for name := range v.providers {
		if p, ok := file.Provider(name); ok && p.KeyEnv != "" {
			if k := strings.TrimSpace(s.getenv(p.KeyEnv)); len(k) >= 8 {
				v.secrets = append(v.secrets, k)
			}
		}
	}
	// What `detour check` refuses, in its words (unset client and metrics
	// key variables, short provider keys), before the gateway's own checks.
	if err := file.CheckEnv(s.getenv); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	for _, k := range v.gw.Keys {
		ck, err := newClientKey(k, s.getenv, routes)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			ck.keepLimits(prev.keys)
		}
		v.keys = append(v.keys, ck)
	}
	if v.metricsKey, err = newMetricsKey(v.gw.MetricsKeyEnv, s.getenv, v.keys); err != nil {
		return nil, err
	}
	v.answerKeys = exchange.NewKeySet(slices.Concat(v.secrets, gatewayKeys(v.gw, s.getenv))...)
	return v, nil
}

// gatewayKeys returns the gateway's own keys: the client keys named by
// key_env (a key given as its sha256 is not known), the admin and the
// metrics keys.
func gatewayKeys(gw config.Gateway, getenv func(string) string) []string {
	var keys []string
	for _, k := range gw.Keys {
		if k.KeyEnv != "" {
			keys = append(keys, strings.TrimSpace(getenv(k.KeyEnv)))
		}
	}
	for _, env := range []string{gw.AdminKeyEnv, gw.MetricsKeyEnv} {
		if env != "" {
			keys = append(keys, strings.TrimSpace(getenv(env)))
		}
	}
	return keys
}

// Routes returns the config and the routes the gateway serves now (after
// the last reload): for work beside the requests, such as background
// probes. Both are read-only.
func (s *Server) Routes() (*config.Config, map[string]*router.Route) {
	v := s.v()
	return v.file, v.routes
}
