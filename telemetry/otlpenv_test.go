package telemetry

import (
	"errors"
	"testing"
	"time"
)

func TestEnvReader_Timeout(t *testing.T) {
	const general, traces = "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
	for _, tc := range []struct {
		name string
		env  map[string]string
		want time.Duration
	}{
		{"unset", nil, 10 * time.Second},
		{"general", map[string]string{general: "2500"}, 2500 * time.Millisecond},
		{"traces wins", map[string]string{general: "2500", traces: " 700 "}, 700 * time.Millisecond},
		{"a malformed traces leaves the general", map[string]string{general: "2500", traces: "7s"}, 2500 * time.Millisecond},
		{"both malformed", map[string]string{general: "1.5", traces: "x"}, 10 * time.Second},
		{"0 is no bound of its own", map[string]string{general: "0"}, 0},
		{"a negative is none too", map[string]string{general: "-5"}, 0},
		{"too large", map[string]string{general: "99999999999999999999"}, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := envReader{getenv: func(k string) string { return tc.env[k] }, readFile: noFile}
			if got := r.settings().timeout; got != tc.want {
				t.Errorf("timeout %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEnvReader_NothingSetMeansDefaults(t *testing.T) {
	s := envReader{getenv: func(string) string { return "" }, readFile: noFile}.settings()
	if len(s.header) != 0 || s.gzip || s.tls != nil || s.timeout != defaultExportTimeout {
		t.Errorf("settings %+v with no variable set", s)
	}
}

func TestEnvReader_UnreadableCertificatesAreSkipped(t *testing.T) {
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_CERTIFICATE":        "/missing/ca.pem",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/missing/c.pem", "OTEL_EXPORTER_OTLP_CLIENT_KEY": "/missing/k.pem",
	}
	s := envReader{getenv: func(k string) string { return env[k] }, readFile: noFile}.settings()
	if s.tls != nil {
		t.Errorf("a TLS configuration from files that could not be read: %+v", s.tls)
	}
}

func noFile(string) ([]byte, error) { return nil, errors.New("no such file") }
