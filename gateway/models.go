package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/detourhq/detour/internal/jsonw"
)

// GET /v1/models lists what the client's key may use: its routes, then the
// targets of their chains (which a request may also name directly).

// modelsDialect tells an Anthropic client (it sends anthropic-version or
// x-api-key) from an OpenAI one.
func modelsDialect(r *http.Request) dialect {
	if r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != "" {
		return anthropicDialect
	}
	return openAIDialect
}

// model is one entry of the list: a route (owner "detour") or a target
// (owner its provider).
type model struct{ id, owner string }

// visibleModels returns the routes and targets k may use, routes first.
func (s *Server) visibleModels(k *clientKey) []model {
	v := s.v()
	var out []model
	seen := map[string]bool{}
	for _, name := range s.visibleRoutes(k) {
		out = append(out, model{name, "detour"})
		seen[name] = true
	}
	for _, name := range v.routeNames {
		r := v.routes[name]
		for i := range r.Chain {
			t := &r.Chain[i]
			if id := t.ID(); !seen[id] && (k.mayRoute(name) || k.mayTarget(id)) {
				seen[id] = true
				out = append(out, model{id, t.Provider})
			}
		}
	}
	return out
}

// serveModels serves GET /v1/models and, with an id, GET /v1/models/{id}.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request, id string) {
	v := s.v()
	d := modelsDialect(r)
	k, ae := s.authenticate(r)
	if ae != nil {
		s.metrics.rejected.With(d.String(), ae.Reason).Inc()
		writeError(w, d, ae, "")
		return
	}
	models := s.visibleModels(k)
	b := make([]byte, 0, 256+64*len(models))
	if id != "" {
		found := false
		for _, m := range models {
			if m.id == id {
				b, found = appendModel(b, d, m, v.loaded), true
				break
			}
		}
		if !found {
			writeError(w, d, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found",
				Param: "model", Message: "the model " + strconv.Quote(id) + " does not exist here"}, "")
			return
		}
	} else if d == anthropicDialect {
		b = append(b, `{"data":[`...)
		for i, m := range models {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendModel(b, d, m, v.loaded)
		}
		b = append(b, `],"has_more":false,"first_id":`...)
		first, last := "", ""
		if len(models) > 0 {
			first, last = models[0].id, models[len(models)-1].id
		}
		b = appendStringOrNull(b, first)
		b = append(b, `,"last_id":`...)
		b = appendStringOrNull(b, last)
		b = append(b, '}')
	} else {
		b = append(b, `{"object":"list","data":[`...)
		for i, m := range models {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendModel(b, d, m, v.loaded)
		}
		b = append(b, "]}"...)
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Write(b) //nolint:errcheck // nothing to do for a gone client
}

// appendModel appends one model object in d's shape. A route or target
// came to exist here when the gateway loaded its config: that is its
// creation time (OpenAI's created, Anthropic's created_at).
func appendModel(b []byte, d dialect, m model, created time.Time) []byte {
	if d == anthropicDialect {
		b = append(b, `{"type":"model","id":`...)
		b = jsonw.String(b, m.id)
		b = append(b, `,"display_name":`...)
		b = jsonw.String(b, m.id)
		b = append(b, `,"created_at":`...)
		b = jsonw.String(b, created.UTC().Format(time.RFC3339))
		return append(b, '}')
	}
	b = append(b, `{"id":`...)
	b = jsonw.String(b, m.id)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, created.Unix(), 10)
	b = append(b, `,"owned_by":`...)
	b = jsonw.String(b, m.owner)
	return append(b, '}')
}
