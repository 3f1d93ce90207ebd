package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/detourhq/detour/config"
)

// The admin endpoints, on the gateway's listener:
//
//	POST /admin/reload    read the config file again and swap it in (Reload)
//	GET  /admin/health    the health store and every key parked or on trial
//	POST /admin/park      {"target": "groq/llama-3.3-70b-versatile", "for": "30m", "reason": "..."}
//	POST /admin/release   {"target": "groq/llama-3.3-70b-versatile"}
//
// They take the key of gateway.admin_key_env ("Authorization: Bearer KEY");
// without one set they answer loopback clients only. A client key never
// opens them.

// Reload swaps in the config file makes, checked as New checks it (routes,
// client keys, limits, key variables). On any problem the gateway keeps
// the config it has and the error says why. Requests in flight finish on
// the config they started with; a client key that keeps its name and
// limits keeps its slots. What only a restart changes (gateway.listen,
// gateway.metrics_listen, the health: and telemetry: sections) comes back
// as notes.
func (s *Server) Reload(file *config.Config) (notes []string, err error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	old := s.v()
	v, err := s.newView(file, old)
	if err != nil {
		return nil, err
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
	s.log.Info("config reloaded", "file", file.File, "routes", len(v.routeNames), "notes", len(notes))
	return notes, nil
}

// sameHealth reports whether two health: sections are alike.
func sameHealth(a, b config.Health) bool {
	return a.Settings == b.Settings && a.Store == b.Store && a.Namespace == b.Namespace && a.StorePasswordEnv == b.StorePasswordEnv
}

// serveAdmin answers the /admin/ endpoints.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request, p string) {
	if ae := s.adminAccess(r); ae != nil {
		writeError(w, openAIDialect, ae, "")
		return
	}
	switch p {
	case "/admin/reload":
		if s.method(w, r, http.MethodPost, openAIDialect) {
			s.adminReload(w)
		}
	case "/admin/health":
		if s.method(w, r, http.MethodGet, openAIDialect) {
			s.adminHealth(w)
		}
	case "/admin/park", "/admin/release":
		if s.method(w, r, http.MethodPost, openAIDialect) {
			s.adminPark(w, r, p == "/admin/park")
		}
	default:
		writeError(w, openAIDialect, &apiError{Status: http.StatusNotFound, Code: "unknown_url",
			Message: "unknown admin URL " + p + ": detour serves POST /admin/reload, GET /admin/health, POST /admin/park and POST /admin/release"}, "")
	}
}

// adminAccess returns nil when r may use the admin endpoints.
func (s *Server) adminAccess(r *http.Request) *apiError {
	env := s.v().gw.AdminKeyEnv
	if env == "" {
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil && config.LoopbackAddr(net.JoinHostPort(host, "0")) {
			return nil
		}
		return &apiError{Status: http.StatusForbidden, Code: "admin_closed",
			Message: "the admin endpoints answer loopback clients only: set gateway.admin_key_env to open them to clients with that key"}
	}
	want := sha256.Sum256([]byte(strings.TrimSpace(s.getenv(env))))
	got := sha256.Sum256([]byte(bearer(r)))
	if bearer(r) == "" || subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return &apiError{Status: http.StatusUnauthorized, Code: "invalid_api_key",
			Message: "the admin endpoints take the key of gateway.admin_key_env as \"Authorization: Bearer KEY\""}
	}
	return nil
}

// adminReload re-reads the config through Config.Reload.
func (s *Server) adminReload(w http.ResponseWriter) {
	if s.reread == nil {
		writeError(w, openAIDialect, &apiError{Status: http.StatusNotImplemented, Code: "reload_unavailable",
			Message: "this gateway was not given its config file to read again (gateway.Config.Reread)"}, "")
		return
	}
	notes, err := s.ReloadFile()
	if err != nil {
		writeError(w, openAIDialect, &apiError{Status: http.StatusBadRequest, Code: "config_invalid",
			Message: "the config was not reloaded; the gateway keeps the one it has: " + s.scrub(err.Error())}, "")
		return
	}
	writeJSONBody(w, http.StatusOK, map[string]any{"status": "reloaded", "routes": len(s.v().routeNames), "notes": notes})
}

// ReloadFile reads the config again (Config.Reread) and Reloads it; on
// any error the gateway keeps its config. `detour serve` calls it on
// SIGHUP.
func (s *Server) ReloadFile() ([]string, error) {
	if s.reread == nil {
		return nil, errors.New("gateway: no Config.Reread to read the config again")
	}
	file, err := s.reread()
	if err != nil {
		return nil, err
	}
	return s.Reload(file)
}

// adminHealth lists the store and every key parked or on trial.
func (s *Server) adminHealth(w http.ResponseWriter) {
	parked := s.health.Parks(s.clk.Now())
	writeJSONBody(w, http.StatusOK, map[string]any{"store": s.health.StoreStatus(), "parked": parked})
}

// adminPark parks or releases one key by hand.
func (s *Server) adminPark(w http.ResponseWriter, r *http.Request, park bool) {
	var in struct {
		Target string `json:"target"`
		For    string `json:"for"`
		Reason string `json:"reason"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil || in.Target == "" {
		writeError(w, openAIDialect, badRequest("target", `send {"target": "provider/model", "for": "30m", "reason": "why"} (for and reason: park only)`), "")
		return
	}
	now := s.clk.Now()
	if !park {
		s.health.Release(in.Target, now)
		writeJSONBody(w, http.StatusOK, map[string]any{"status": "released", "target": in.Target})
		return
	}
	d := time.Hour
	if in.For != "" {
		if d, err = time.ParseDuration(in.For); err != nil || d <= 0 {
			writeError(w, openAIDialect, badRequest("for", "for %q is not a positive duration: write it like 30m or 2h", in.For), "")
			return
		}
	}
	reason := "parked by an operator"
	if in.Reason != "" {
		reason += ": " + in.Reason
	}
	s.health.Park(in.Target, now.Add(d), reason, now)
	e := s.health.Get(in.Target, now)
	writeJSONBody(w, http.StatusOK, map[string]any{"status": "parked", "target": in.Target, "until": e.Until.UTC()})
}

// writeJSONBody writes v as an indented JSON response.
func writeJSONBody(w http.ResponseWriter, code int, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n')) //nolint:errcheck // nothing to do for a gone client
}
