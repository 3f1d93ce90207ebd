package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/detourhq/detour/config"
)

// A reload is all or nothing and never opens the door. A config file cut
// short by a write that is not atomic (an editor, a config tool), or
// emptied, still parses: YAML is read line by line, and what is cut off
// is just missing. What is missing is what guarded the gateway: the
// client keys, a key's route list and limits, the admin key. So the rule
// that Reload applies, for SIGHUP and POST /admin/reload alike, compares
// the new config with the one in force:
//
//   - it never takes one that opens the gateway (ErrReloadOpens): no
//     client key left on a listener beyond loopback, or /metrics without
//     its key on a metrics listener beyond loopback. `detour serve`
//     refuses both at start; a reload does not move the listeners, so the
//     addresses are the ones listened on, not the file's.
//   - it takes one that removes (ErrReloadRemoves) a client key, a key's
//     routes: list or one of its limits (max_concurrent,
//     requests_per_minute, daily_cost_limit), gateway.admin_key_env,
//     gateway.metrics_key_env, or every route, only when the caller says
//     the removal is meant (ReloadOptions.AllowRemovals): revoking a key
//     is an operator's act, a cut file looks the same.

// Sentinels of a refused reload, wrapped by its *ReloadError.
var (
	// ErrReloadOpens means the new config would let anyone in: it is
	// refused whatever the caller says.
	ErrReloadOpens = errors.New("the reload would open the gateway")
	// ErrReloadRemoves means the new config removes what guards access or
	// serves traffic, as a file cut short or emptied does: it is refused
	// unless ReloadOptions.AllowRemovals says the removal is meant.
	ErrReloadRemoves = errors.New("the reload removes keys, limits or routes")
)

// ReloadError is a reload the rule refused: the gateway keeps its config.
type ReloadError struct {
	// Err is ErrReloadOpens or ErrReloadRemoves.
	Err error
	// Reasons say what the new config opens or removes, one each.
	Reasons []string
}

// Error says what the reload would have opened or removed.
func (e *ReloadError) Error() string {
	what := "it removes what a file cut short or emptied removes"
	if errors.Is(e.Err, ErrReloadOpens) {
		what = "it would let anyone in"
	}
	return "gateway: reload refused, " + what + ": " + strings.Join(e.Reasons, "; ")
}

// Unwrap returns Err.
func (e *ReloadError) Unwrap() error { return e.Err }

// ReloadOptions say what one reload may do beyond the rule. The zero
// value takes nothing that removes.
type ReloadOptions struct {
	// AllowRemovals lets the reload remove client keys, a key's routes:
	// list or limits, the admin or metrics key, or every route: a removal
	// meant by the operator (a key revoked). It never lets a reload open
	// the gateway.
	AllowRemovals bool
}

// Reload swaps in the config file makes, checked as New checks it (routes,
// client keys, limits, key variables) and by the rule above. On any
// problem the gateway keeps the config it has, logs why at ERROR and the
// error says why (a *ReloadError when the rule refused it). Requests in
// flight finish on the config they started with; a client key that keeps
// its name and limits keeps its slots. What only a restart changes
// (gateway.listen, gateway.metrics_listen, the health: and telemetry:
// sections) comes back as notes.
func (s *Server) Reload(file *config.Config, o ReloadOptions) (notes []string, err error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	old := s.v()
	v, err := s.newView(file, old)
	if err == nil {
		err = s.reloadRule(old, v, o)
	}
	if err != nil {
		return nil, s.refused(err)
	}
	if v.gw.Listen != s.listen {
		notes = append(notes, fmt.Sprintf("gateway.listen %s: the gateway listens on %s until it restarts", v.gw.Listen, s.listen))
	}
	if v.gw.MetricsListen != s.mlisten {
		notes = append(notes, "gateway.metrics_listen changed: it moves at the next start")
	}
	if !sameHealth(old.file.Health, file.Health) {
		notes = append(notes, "the health: section changed: the breaker keeps its settings and store until the next start")
	}
	if old.file.Telemetry != file.Telemetry {
		notes = append(notes, "the telemetry: section changed: traces go where they went until the next start")
	}
	s.cur.Store(v)
	s.log.Info("config reloaded", "file", file.File, "routes", len(v.routeNames), "keys", len(v.keys), "notes", len(notes))
	return notes, nil
}

// ReloadFile reads the config again (Config.Reread) and Reloads it with
// o; on any error, the file's or the rule's, the gateway keeps its config
// and logs why at ERROR. `detour serve` calls it on SIGHUP.
func (s *Server) ReloadFile(o ReloadOptions) ([]string, error) {
	if s.reread == nil {
		return nil, s.refused(errors.New("gateway: no Config.Reread to read the config again"))
	}
	file, err := s.reread()
	if err != nil {
		return nil, s.refused(err)
	}
	return s.Reload(file, o)
}

// refused logs why a reload was refused, at ERROR, and returns err.
func (s *Server) refused(err error) error {
	s.log.Error("config not reloaded: the gateway keeps the config it has", "err", s.scrub(err.Error()))
	return err
}

// reloadRule returns why the gateway may not go from old to v with o: a
// *ReloadError, or nil. One that opens lists what it removes too.
func (s *Server) reloadRule(old, v *view, o ReloadOptions) error {
	opens, removes := s.opens(v), removals(old, v)
	switch {
	case len(opens) > 0:
		return &ReloadError{Err: ErrReloadOpens, Reasons: append(opens, removes...)}
	case len(removes) > 0 && !o.AllowRemovals:
		return &ReloadError{Err: ErrReloadRemoves, Reasons: removes}
	}
	return nil
}

// opens returns what v would open on the listeners in use: what `detour
// serve` refuses at start (config.ListenError), read at the address
// listened on (Serve's, else gateway.listen as first loaded).
func (s *Server) opens(v *view) []string {
	var out []string
	addr := s.listen
	if p := s.lnAddr.Load(); p != nil {
		addr = *p
	}
	if config.ListenError(addr, v.gw) != nil {
		out = append(out, fmt.Sprintf("it has no client key, and the gateway listens on %s, beyond loopback: "+
			"anyone reaching it would be served with the providers' keys (keep gateway.keys, or restart on 127.0.0.1)", addr))
	}
	if s.mlisten != "" && !config.LoopbackAddr(s.mlisten) && v.gw.MetricsKeyEnv == "" {
		out = append(out, fmt.Sprintf("it has no gateway.metrics_key_env, and /metrics is served on %s, beyond loopback: "+
			"anyone reaching it would read every route's traffic and cost", s.mlisten))
	}
	return out
}

// removals returns what v removes from old that guards access or serves
// traffic, one line each, in the order of the file.
func removals(old, v *view) []string {
	var out []string
	if len(old.routeNames) > 0 && len(v.routeNames) == 0 {
		out = append(out, fmt.Sprintf("every route is gone (%s)", strings.Join(old.routeNames, ", ")))
	}
	for _, was := range old.gw.Keys {
		i := slices.IndexFunc(v.gw.Keys, func(k config.ClientKey) bool { return k.Name == was.Name })
		if i < 0 {
			out = append(out, fmt.Sprintf("client key %s is gone", strconv.Quote(was.Name)))
			continue
		}
		now := v.gw.Keys[i]
		if restricted(was.Routes) && !restricted(now.Routes) {
			out = append(out, fmt.Sprintf("client key %s's routes: list is gone (it could use every route)", strconv.Quote(was.Name)))
		}
		for _, l := range []struct {
			name     string
			was, now bool
		}{
			{"max_concurrent", was.MaxConcurrent > 0, now.MaxConcurrent > 0},
			{"requests_per_minute", was.RequestsPerMinute > 0, now.RequestsPerMinute > 0},
			{"daily_cost_limit", was.DailyCost > 0, now.DailyCost > 0},
		} {
			if l.was && !l.now {
				out = append(out, fmt.Sprintf("client key %s's %s is gone", strconv.Quote(was.Name), l.name))
			}
		}
	}
	if old.gw.AdminKeyEnv != "" && v.gw.AdminKeyEnv == "" {
		out = append(out, "gateway.admin_key_env is gone (the admin endpoints would answer loopback clients without a key)")
	}
	if old.gw.MetricsKeyEnv != "" && v.gw.MetricsKeyEnv == "" {
		out = append(out, "gateway.metrics_key_env is gone")
	}
	return out
}

// restricted reports whether a client key's routes: list limits it (is
// neither empty nor "*").
func restricted(routes []string) bool {
	return len(routes) > 0 && !slices.Contains(routes, "*")
}

// sameHealth reports whether two health: sections are alike.
func sameHealth(a, b config.Health) bool {
	return a.Settings == b.Settings && a.Store == b.Store && a.Namespace == b.Namespace && a.StorePasswordEnv == b.StorePasswordEnv
}

// adminReload re-reads the config through ReloadFile. The query
// allow_removals=true lets this one reload remove keys, limits or routes
// (ReloadOptions.AllowRemovals).
func (s *Server) adminReload(w http.ResponseWriter, r *http.Request) {
	if s.reread == nil {
		writeError(w, openAIDialect, &apiError{Status: http.StatusNotImplemented, Code: "reload_unavailable",
			Message: "this gateway was not given its config file to read again (gateway.Config.Reread)"}, "")
		return
	}
	var o ReloadOptions
	if q := r.URL.Query().Get("allow_removals"); q != "" {
		allow, err := strconv.ParseBool(q)
		if err != nil {
			writeError(w, openAIDialect, badRequest("allow_removals", "allow_removals=%s: write true, to let this reload remove "+
				"client keys, their limits, the admin or metrics key or every route, or leave it out", q), "")
			return
		}
		o.AllowRemovals = allow
	}
	notes, err := s.ReloadFile(o)
	var re *ReloadError
	switch {
	case errors.As(err, &re) && errors.Is(err, ErrReloadRemoves):
		writeError(w, openAIDialect, &apiError{Status: http.StatusConflict, Code: "reload_removes",
			Message: "the config was not reloaded; the gateway keeps the one it has: " + s.scrub(err.Error()) +
				". If that is meant (a key revoked), reload with POST /admin/reload?allow_removals=true"}, "")
		return
	case errors.As(err, &re):
		writeError(w, openAIDialect, &apiError{Status: http.StatusConflict, Code: "reload_opens",
			Message: "the config was not reloaded; the gateway keeps the one it has: " + s.scrub(err.Error())}, "")
		return
	case err != nil:
		writeError(w, openAIDialect, &apiError{Status: http.StatusBadRequest, Code: "config_invalid",
			Message: "the config was not reloaded; the gateway keeps the one it has: " + s.scrub(err.Error())}, "")
		return
	}
	writeJSONBody(w, http.StatusOK, map[string]any{"status": "reloaded", "routes": len(s.v().routeNames), "notes": notes})
}
