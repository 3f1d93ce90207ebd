package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// newMetricsKey returns the digest of the admin key in the variable
// keyEnv (gateway.metrics_key_env), or nil when keyEnv is "". The variable
// must be set, and the key must be none of the client keys: a client must
// not read /metrics with its own key.
func newMetricsKey(keyEnv string, getenv func(string) string, clients []*clientKey) (*[sha256.Size]byte, error) {
	if keyEnv == "" {
		return nil, nil
	}
	v := strings.TrimSpace(getenv(keyEnv))
	if v == "" {
		return nil, fmt.Errorf("gateway: metrics_key_env: %s is not set (export it, or leave metrics_key_env out)", keyEnv)
	}
	sum := sha256.Sum256([]byte(v))
	for _, k := range clients {
		if subtle.ConstantTimeCompare(sum[:], k.hash[:]) == 1 {
			return nil, fmt.Errorf("gateway: metrics_key_env: %s holds the key of client %q: give /metrics a key of its own", keyEnv, k.name)
		}
	}
	return &sum, nil
}

// MetricsAddr returns gateway.metrics_listen: the address where /metrics is
// served apart from the gateway (see ServeMetrics), or "" when it is served
// on the gateway's own listener.
func (s *Server) MetricsAddr() string { return s.mlisten }

// ServeMetrics serves /metrics alone on ln (gateway.metrics_listen) until
// Shutdown, which closes it last, so the drain can be watched. It asks for
// the key of gateway.metrics_key_env if one is set, and for none
// otherwise (the config allows that on loopback only). It returns
// http.ErrServerClosed after Shutdown.
func (s *Server) ServeMetrics(ln net.Listener) error {
	return s.serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			writeError(w, openAIDialect, &apiError{Status: http.StatusNotFound, Code: "unknown_url",
				Message: fmt.Sprintf("unknown URL %s %s: this address serves GET /metrics only", r.Method, r.URL.Path)}, "")
			return
		}
		s.serveMetrics(w, r, true)
	}), &s.msrv)
}

// serveMetrics answers /metrics, on the gateway's listener or on its own
// (apart): the metrics when the request may read them, else an error that
// says what it takes.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, apart bool) {
	if ae := s.metricsAccess(r, apart); ae != nil {
		if ae.Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="detour metrics"`)
		}
		writeError(w, openAIDialect, ae, "")
		return
	}
	s.metricsHandler.ServeHTTP(w, r)
}

// metricsAccess returns nil when r may read /metrics, else its error:
//
//   - 404 on the gateway's listener when gateway.metrics_listen serves
//     them apart;
//   - 401 without the admin key of gateway.metrics_key_env, when one is set;
//   - 403 on the gateway's listener when it has client keys and no admin
//     key is set: no key opens /metrics there.
func (s *Server) metricsAccess(r *http.Request, apart bool) *apiError {
	v := s.v()
	switch {
	case !apart && v.gw.MetricsListen != "":
		return &apiError{Status: http.StatusNotFound, Code: "unknown_url",
			Message: "/metrics is served on the address of gateway.metrics_listen, not on this one"}
	case v.metricsKey != nil:
		key := bearer(r)
		if key == "" {
			return &apiError{Status: http.StatusUnauthorized, Code: "invalid_api_key",
				Message: "missing metrics key: send the key of gateway.metrics_key_env as \"Authorization: Bearer KEY\""}
		}
		sum := sha256.Sum256([]byte(key))
		if subtle.ConstantTimeCompare(sum[:], v.metricsKey[:]) != 1 {
			return &apiError{Status: http.StatusUnauthorized, Code: "invalid_api_key",
				Message: "invalid metrics key: /metrics takes the key of gateway.metrics_key_env, not a client key"}
		}
	case !apart && len(v.keys) > 0:
		return &apiError{Status: http.StatusForbidden, Code: "metrics_closed",
			Message: "/metrics is closed on a gateway with client keys: set gateway.metrics_key_env to the variable " +
				"holding an admin key (sent as \"Authorization: Bearer KEY\"), or serve metrics on a loopback gateway.metrics_listen"}
	}
	return nil
}

// bearer returns the key of r's "Authorization: Bearer KEY" header, or "".
func bearer(r *http.Request) string {
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}
