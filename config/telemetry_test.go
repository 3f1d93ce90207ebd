package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/detourhq/detour/config"
)

func TestTracing_ConfigThenEnvironment(t *testing.T) {
	tests := []struct {
		name     string
		otlp     string
		env      map[string]string
		wantURL  string
		wantFrom string
	}{
		{name: "nothing set: off"},
		{name: "file base URL gets /v1/traces", otlp: "http://collector:4318",
			wantURL: "http://collector:4318/v1/traces", wantFrom: "telemetry.otlp"},
		{name: "file base URL with a path", otlp: "https://otel.example.com/otlp/",
			wantURL: "https://otel.example.com/otlp/v1/traces", wantFrom: "telemetry.otlp"},
		{name: "file traces URL used as it is", otlp: "http://127.0.0.1:4318/v1/traces",
			wantURL: "http://127.0.0.1:4318/v1/traces", wantFrom: "telemetry.otlp"},
		{name: "file wins over the environment", otlp: "http://file:4318",
			env:     map[string]string{config.EnvOTLPEndpoint: "http://env:4318"},
			wantURL: "http://file:4318/v1/traces", wantFrom: "telemetry.otlp"},
		{name: "standard endpoint variable", env: map[string]string{config.EnvOTLPEndpoint: "http://env:4318"},
			wantURL: "http://env:4318/v1/traces", wantFrom: "$" + config.EnvOTLPEndpoint},
		{name: "traces variable as it is, over the endpoint", env: map[string]string{
			config.EnvOTLPEndpoint: "http://env:4318", config.EnvOTLPTracesEndpoint: "http://traces:9999/custom"},
			wantURL: "http://traces:9999/custom", wantFrom: "$" + config.EnvOTLPTracesEndpoint},
		{name: "OTEL_SDK_DISABLED turns it off", otlp: "http://file:4318",
			env: map[string]string{config.EnvOTelDisabled: "true"}, wantFrom: config.EnvOTelDisabled + "=true"},
		{name: "OTEL_TRACES_EXPORTER=none turns it off", env: map[string]string{
			config.EnvOTLPEndpoint: "http://env:4318", config.EnvOTelTracesExporter: "none"},
			wantFrom: config.EnvOTelTracesExporter + "=none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &config.Config{Telemetry: config.Telemetry{OTLP: tt.otlp}}
			got, err := c.Tracing(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if got.URL != tt.wantURL || got.From != tt.wantFrom || got.On() != (tt.wantURL != "") {
				t.Errorf("Tracing = %+v (on %v), want URL %q from %q", got, got.On(), tt.wantURL, tt.wantFrom)
			}
		})
	}
}

func TestTracing_BadEnvironmentURL(t *testing.T) {
	c := &config.Config{}
	_, err := c.Tracing(func(k string) string {
		if k == config.EnvOTLPEndpoint {
			return "collector:4317"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "$OTEL_EXPORTER_OTLP_ENDPOINT") ||
		!strings.Contains(err.Error(), "not an http(s) URL") {
		t.Errorf("err = %v, want one naming the variable and saying it is no http(s) URL", err)
	}
}

func TestTracing_StringSaysWhere(t *testing.T) {
	on := config.Tracing{URL: "http://u:secret@collector:4318/v1/traces", From: "telemetry.otlp"}
	if s := on.String(); s != "OTLP/HTTP to http://u:xxxxx@collector:4318/v1/traces (from telemetry.otlp)" {
		t.Errorf("on: %q", s)
	}
	if s := (config.Tracing{}).String(); !strings.HasPrefix(s, "off (set telemetry.otlp or OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Errorf("off: %q", s)
	}
}

func TestParse_Telemetry(t *testing.T) {
	const head = "providers:\n  a: {base_url: https://a.example/v1, key_env: A_KEY}\nroutes:\n  default: {chain: [a/m]}\n"
	tests := []struct {
		name    string
		section string
		want    string // "" means valid
		keyErr  bool
	}{
		{name: "base URL", section: "telemetry: {otlp: http://localhost:4318}"},
		{name: "empty section", section: "telemetry: {}"},
		{name: "not http", section: "telemetry: {otlp: grpc://localhost:4317}",
			want: `detour.yaml:5:19: telemetry.otlp: "grpc://localhost:4317" is not an http(s) URL`},
		{name: "no scheme", section: "telemetry: {otlp: localhost:4318}",
			want: `telemetry.otlp: "localhost:4318" is not an http(s) URL`},
		{name: "password in the URL", section: "telemetry: {otlp: \"https://user:hunter2hunter2@otel.example.com\"}",
			want: "telemetry.otlp: otlp holds a credential", keyErr: true},
		{name: "key in the query", section: "telemetry: {otlp: \"https://otel.example.com/?api_key=abc\"}",
			want: "telemetry.otlp: otlp carries a key in ?api_key=", keyErr: true},
		{name: "unknown field", section: "telemetry: {otpl: http://localhost:4318}",
			want: `detour.yaml:5:13: telemetry.otpl: unknown field "otpl" (fields are: otlp)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse("detour.yaml", []byte(head+tt.section+"\n"))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Telemetry.OTLP == "" && strings.Contains(tt.section, "otlp") {
					t.Errorf("otlp not read")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if tt.keyErr != errors.Is(err, config.ErrKeyInFile) {
				t.Errorf("errors.Is(err, ErrKeyInFile) = %v, want %v", !tt.keyErr, tt.keyErr)
			}
		})
	}
}
