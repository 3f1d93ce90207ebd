package config

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// telemetryFields are the fields of the telemetry: section.
var telemetryFields = []string{"otlp"}

// The standard OpenTelemetry environment variables detour reads when the
// file sets no telemetry.otlp (the OTLP exporter reads the others itself:
// OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE,
// _CLIENT_CERTIFICATE, _CLIENT_KEY and their OTEL_EXPORTER_OTLP_TRACES_
// forms, and OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES; see
// telemetry.Config.URL).
const (
	// EnvOTLPEndpoint is the collector's base URL; /v1/traces is added.
	EnvOTLPEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"
	// EnvOTLPTracesEndpoint is the traces URL, used as it is; it wins over
	// EnvOTLPEndpoint.
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	// EnvOTelDisabled set to "true" turns tracing off, whatever sets it on.
	EnvOTelDisabled = "OTEL_SDK_DISABLED"
	// EnvOTelTracesExporter set to "none" turns tracing off, the same.
	EnvOTelTracesExporter = "OTEL_TRACES_EXPORTER"
)

// tracesPath is the OTLP/HTTP path of traces under a collector's base URL.
const tracesPath = "/v1/traces"

// Telemetry is the telemetry: section: where detour sends its traces. Its
// zero value means the standard environment variables decide, and none
// set means tracing is off.
type Telemetry struct {
	// OTLP is the OTLP/HTTP collector's base URL, like
	// http://localhost:4318, as OTEL_EXPORTER_OTLP_ENDPOINT is written:
	// spans go to its /v1/traces (a URL that already ends in /v1/traces
	// is used as it is). "" leaves it to the environment.
	OTLP string
}

// Tracing says whether detour traces requests, and where the spans go.
type Tracing struct {
	// URL is the OTLP/HTTP traces URL spans are posted to; "" means
	// tracing is off.
	URL string
	// From names what decided: "telemetry.otlp", an environment variable,
	// or "" when nothing turned tracing on.
	From string
}

// On reports whether requests are traced.
func (t Tracing) On() bool { return t.URL != "" }

// String says where spans go, the URL without any password in it: "off",
// or "OTLP/HTTP to URL (from telemetry.otlp)".
func (t Tracing) String() string {
	switch {
	case t.URL != "":
		return "OTLP/HTTP to " + RedactURL(t.URL) + " (from " + t.From + ")"
	case t.From != "":
		return "off (" + t.From + ")"
	}
	return "off (set telemetry.otlp or " + EnvOTLPEndpoint + " to export spans)"
}

// Tracing resolves where spans go: telemetry.otlp, else
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT
// (plus /v1/traces); none of them means off, and so do
// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none, whatever the rest
// say. A variable that holds no http(s) URL is an error. A nil getenv
// means os.Getenv.
func (c *Config) Tracing(getenv func(string) string) (Tracing, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv(EnvOTelDisabled)), "true") {
		return Tracing{From: EnvOTelDisabled + "=true"}, nil
	}
	if strings.EqualFold(strings.TrimSpace(getenv(EnvOTelTracesExporter)), "none") {
		return Tracing{From: EnvOTelTracesExporter + "=none"}, nil
	}
	if c.Telemetry.OTLP != "" {
		u, err := tracesURL(c.Telemetry.OTLP, true)
		if err != nil {
			return Tracing{}, fmt.Errorf("config: telemetry.otlp: %w", err)
		}
		return Tracing{URL: u, From: "telemetry.otlp"}, nil
	}
	for _, env := range []string{EnvOTLPTracesEndpoint, EnvOTLPEndpoint} {
		v := strings.TrimSpace(getenv(env))
		if v == "" {
			continue
		}
		u, err := tracesURL(v, env == EnvOTLPEndpoint)
		if err != nil {
			return Tracing{}, fmt.Errorf("$%s: %w", env, err)
		}
		return Tracing{URL: u, From: "$" + env}, nil
	}
	return Tracing{}, nil
}

// tracesURL checks raw, an http(s) URL, and returns the traces URL it
// makes: base adds /v1/traces to its path unless it ends so already.
func tracesURL(raw string, base bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s is not an http(s) URL: write the OTLP/HTTP collector's address, like http://localhost:4318",
			quote(RedactURL(raw)))
	}
	if base && !strings.HasSuffix(strings.TrimRight(u.Path, "/"), tracesPath) {
		u.Path = path.Join("/", u.Path, tracesPath)
	}
	return u.String(), nil
}

// RedactURL returns raw with any password in it replaced by "xxxxx", for
// messages.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}

// telemetry decodes the telemetry: section.
func (d *decoder) telemetry(n ast.Node) {
	const path = "telemetry"
	pairs, _ := d.mapping(n, path, "field")
	var t Telemetry
	for _, p := range pairs {
		fp := child(path, p.key)
		d.mark(fp, p)
		switch p.key {
		case "otlp":
			t.OTLP, _ = d.str(p.val, fp)
		default:
			d.unknown(p, path, telemetryFields)
		}
	}
	d.c.Telemetry = t
}

// telemetry checks the telemetry: section: an http(s) URL with no
// credential in it (a collector's key goes in OTEL_EXPORTER_OTLP_HEADERS).
func (v *validator) telemetry(t Telemetry) {
	const f = "telemetry.otlp"
	if t.OTLP == "" {
		return
	}
	if _, err := tracesURL(t.OTLP, true); err != nil {
		v.fail(f, false, nil, "%v", err)
		return
	}
	u, _ := url.Parse(t.OTLP)
	if _, hasPass := u.User.Password(); hasPass || u.User != nil && looksSecret(u.User.Username()) {
		v.fail(f, false, ErrKeyInFile, "otlp holds a credential, and keys never go in this file: remove it from the URL "+
			"and put the collector's header in the environment (OTEL_EXPORTER_OTLP_HEADERS=name=value)")
		return
	}
	for q := range u.Query() {
		if lq := strings.ToLower(q); secretFieldNames[lq] || lq == "access_key" {
			v.fail(f, false, ErrKeyInFile, "otlp carries a key in ?%s=, and keys never go in this file: remove it from the URL "+
				"and put the collector's header in the environment (OTEL_EXPORTER_OTLP_HEADERS=name=value)", q)
			return
		}
	}
}
