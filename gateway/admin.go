package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
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
// A release answers which health keys it released and, with 409, which
// it left parked and why (see adminRelease).
//
// They take the key of gateway.admin_key_env ("Authorization: Bearer KEY");
// without one set they answer loopback clients only. A client key never
// opens them.

// serveAdmin answers the /admin/ endpoints.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request, p string) {
	if ae := s.adminAccess(r); ae != nil {
		writeError(w, openAIDialect, ae, "")
		return
	}
	switch p {
	case "/admin/reload":
		if s.method(w, r, http.MethodPost, openAIDialect) {
			s.adminReload(w, r)
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

// adminHealth lists the store and every key parked or on trial.
func (s *Server) adminHealth(w http.ResponseWriter) {
	parked := s.health.Parks(s.clk.Now())
	writeJSONBody(w, http.StatusOK, map[string]any{"store": s.health.StoreStatus(), "parked": parked})
}

// adminPark parks or releases by hand what its "target" names (see
// parkKeys), and says which health keys it parked or released.
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
		writeError(w, openAIDialect, badRequest("target", `send {"target": "provider/model", "for": "30m", "reason": "why"} `+
			`(target: a provider/model, a provider, or a key as GET /admin/health shows it; for and reason: park only)`), "")
		return
	}
	now := s.clk.Now()
	keys, ae := s.parkKeys(in.Target, park, now)
	if ae != nil {
		writeError(w, openAIDialect, ae, "")
		return
	}
	if !park {
		s.adminRelease(w, in.Target, keys, now)
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
	for _, k := range keys {
		s.health.Park(k, now.Add(d), reason, now)
	}
	e := s.health.Get(keys[0], now)
	writeJSONBody(w, http.StatusOK, map[string]any{"status": "parked", "target": in.Target, "keys": keys, "until": e.Until.UTC()})
}

// adminRelease releases keys, what target names, and answers which it
// released and which it did not, and why: 200 "released" (or "not
// parked", when none was), else 409 "not released" or "partly released"
// with each key left parked under "not_released". A store that is down
// leaves the release in this process's memory: "note" says so.
func (s *Server) adminRelease(w http.ResponseWriter, target string, keys []string, now time.Time) {
	released, kept := s.releaseKeys(keys, now)
	status, code := "released", http.StatusOK
	switch {
	case len(kept) > 0 && len(released) > 0:
		status, code = "partly released", http.StatusConflict
	case len(kept) > 0:
		status, code = "not released", http.StatusConflict
	case len(released) == 0:
		status = "not parked"
	}
	out := map[string]any{"status": status, "target": target, "released": released, "keys": keys}
	if len(kept) > 0 {
		out["not_released"] = kept
	}
	if st := s.health.StoreStatus(); !st.Up && len(released) > 0 {
		out["note"] = "the health store (" + st.Kind + ") is down (" + st.Detail + "): the release holds in this process's " +
			"memory; processes sharing the store see it once the store is back, where the store syncs"
	}
	writeJSONBody(w, code, out)
}

// writeJSONBody writes v as an indented JSON response.
func writeJSONBody(w http.ResponseWriter, code int, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n')) //nolint:errcheck // nothing to do for a gone client
}
