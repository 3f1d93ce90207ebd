package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// surfaces are the endpoints `detour serve` answers (gateway.Server's
// ServeHTTP, serveOther and serveAdmin), for its help, detour's help and
// its start-up log. TestServe_ListsEverySurfaceItServes sends a request
// to each against a running serve.
var surfaces = []struct{ method, path, what string }{
	{"POST", "/v1/chat/completions", "OpenAI chat completions"},
	{"POST", "/v1/responses", "OpenAI Responses API (stateless)"},
	{"POST", "/v1/embeddings", "OpenAI embeddings"},
	{"POST", "/v1/messages", "Anthropic Messages"},
	{"POST", "/v1beta/models/{model}:generateContent", "Gemini (also under /v1/)"},
	{"POST", "/v1beta/models/{model}:streamGenerateContent", "Gemini, streamed"},
	{"POST", "/v1beta/models/{model}:embedContent", "Gemini embeddings (and batch)"},
	{"GET", "/v1/models", "routes and targets the key may use"},
	{"GET", "/healthz", "liveness"},
	{"GET", "/readyz", "readiness (503 while draining)"},
	{"GET", "/metrics", "Prometheus metrics"},
	{"POST", "/admin/reload", "read the config again"},
	{"GET", "/admin/health", "the health store, what is parked"},
	{"POST", "/admin/park", `park {"target": "P/M", "for": "30m"}`},
	{"POST", "/admin/release", `release {"target": "P/M"}`},
}

// writeSurfaces writes one line per surface, indented by indent, the
// descriptions in one column.
func writeSurfaces(w io.Writer, indent string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range surfaces {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\n", indent, s.method, s.path, s.what)
	}
	tw.Flush()
}

// surfacesText is writeSurfaces as a string.
func surfacesText(indent string) string {
	var b strings.Builder
	writeSurfaces(&b, indent)
	return b.String()
}
