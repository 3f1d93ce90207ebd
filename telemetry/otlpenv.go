package telemetry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
)

// The standard variables of the OTLP exporter that Config.URL leaves to
// it, each read as OTEL_EXPORTER_OTLP_TRACES_<name>, else
// OTEL_EXPORTER_OTLP_<name>: what otlptracehttp v1.47.0 read
// (internal/otlpconfig/envconfig.go), with its rules.
const (
	envPrefix       = "OTEL_EXPORTER_OTLP_"
	envTracesPrefix = "OTEL_EXPORTER_OTLP_TRACES_"

	envHeaders     = "HEADERS"            // k1=v1,k2=v2, values URL-escaped
	envTimeout     = "TIMEOUT"            // milliseconds for one export, its retries included
	envCompression = "COMPRESSION"        // gzip, or none
	envCertificate = "CERTIFICATE"        // a PEM file: the CAs the collector's certificate is checked against
	envClientCert  = "CLIENT_CERTIFICATE" // a PEM file: the certificate shown to the collector
	envClientKey   = "CLIENT_KEY"         // a PEM file: its key
)

// defaultExportTimeout bounds an export when no variable sets it.
const defaultExportTimeout = 10 * time.Second

// exportSettings are what the standard variables ask of the exporter.
type exportSettings struct {
	// header is sent with each post: HEADERS, or TRACES_HEADERS, which
	// replaces it whole.
	header http.Header
	// timeout bounds one export, retries and waits included; 0 means no
	// bound of its own (the caller's context still bounds it).
	timeout time.Duration
	// gzip compresses the bodies.
	gzip bool
	// tls is the client's TLS configuration; nil means the default.
	tls *tls.Config
}

// envReader reads the exporter's variables. A value that cannot be used
// is skipped and reported to OpenTelemetry's global error handler, as
// otlptracehttp did: tracing never stops detour from starting.
type envReader struct {
	getenv   func(string) string
	readFile func(string) ([]byte, error)
}

// lookup returns the value of the variable name (TRACES_ first), trimmed,
// and its full name; "" when neither is set.
func (r envReader) lookup(name string) (value, from string) {
	for _, full := range [...]string{envTracesPrefix + name, envPrefix + name} {
		if v := strings.TrimSpace(r.getenv(full)); v != "" {
			return v, full
		}
	}
	return "", ""
}

// settings reads every variable.
func (r envReader) settings() exportSettings {
	s := exportSettings{timeout: defaultExportTimeout}
	if v, from := r.lookup(envHeaders); v != "" {
		s.header = parseHeaders(v, from)
	}
	// A malformed TRACES_TIMEOUT leaves the other one in force.
	for _, full := range [...]string{envTracesPrefix + envTimeout, envPrefix + envTimeout} {
		if d, ok := parseMillis(r.getenv(full), full); ok {
			s.timeout = d
			break
		}
	}
	if v, _ := r.lookup(envCompression); v != "" {
		s.gzip = v == "gzip"
	}
	roots := r.certPool(envTracesPrefix+envCertificate, envPrefix+envCertificate)
	cert := r.clientCert(envTracesPrefix, envPrefix)
	if roots != nil || cert != nil {
		s.tls = &tls.Config{RootCAs: roots}
		if cert != nil {
			s.tls.Certificates = []tls.Certificate{*cert}
		}
	}
	return s
}

// parseHeaders reads k1=v1,k2=v2 into a header, each value URL-decoded
// and trimmed; a pair without "=", with a name that is no HTTP token or
// with a bad escape is skipped.
func parseHeaders(v, from string) http.Header {
	h := http.Header{}
	for pair := range strings.SplitSeq(v, ",") {
		name, value, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !ok || !isToken(name) {
			otel.Handle(fmt.Errorf("telemetry: $%s: %q is no name=value pair: skipped", from, strings.TrimSpace(pair)))
			continue
		}
		dec, err := url.PathUnescape(value)
		if err != nil {
			otel.Handle(fmt.Errorf("telemetry: $%s: the value of %s: %w: skipped", from, name, err))
			continue
		}
		h.Set(name, strings.TrimSpace(dec))
	}
	return h
}

// isToken reports whether s is an HTTP token (RFC 9110), as header names
// are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// parseMillis reads the variable from, whose value is v, as whole
// milliseconds; ok is false when it is unset or malformed.
func parseMillis(v, from string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		otel.Handle(fmt.Errorf("telemetry: $%s: %q is no whole number of milliseconds: ignored", from, v))
		return 0, false
	}
	return max(0, time.Duration(ms)*time.Millisecond), true
}

// certPool reads the first of the variables names (in order) that names a
// PEM file of certificates it can read, and returns a pool of its
// certificates alone; nil when none does.
func (r envReader) certPool(names ...string) *x509.CertPool {
	for _, name := range names {
		file := strings.TrimSpace(r.getenv(name))
		if file == "" {
			continue
		}
		pem, err := r.readFile(file)
		if err != nil {
			otel.Handle(fmt.Errorf("telemetry: $%s: %w", name, err))
			continue
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			otel.Handle(fmt.Errorf("telemetry: $%s: %s holds no PEM certificate", name, file))
			continue
		}
		return pool
	}
	return nil
}

// clientCert reads the client certificate and key of the first prefix (in
// order) that sets both and whose files make a key pair; nil when none
// does.
func (r envReader) clientCert(prefixes ...string) *tls.Certificate {
	for _, p := range prefixes {
		certFile, keyFile := strings.TrimSpace(r.getenv(p+envClientCert)), strings.TrimSpace(r.getenv(p+envClientKey))
		if certFile == "" || keyFile == "" {
			continue
		}
		certPEM, err1 := r.readFile(certFile)
		keyPEM, err2 := r.readFile(keyFile)
		if err := errors.Join(err1, err2); err != nil {
			otel.Handle(fmt.Errorf("telemetry: $%s%s, $%s%s: %w", p, envClientCert, p, envClientKey, err))
			continue
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			otel.Handle(fmt.Errorf("telemetry: $%s%s, $%s%s: %w", p, envClientCert, p, envClientKey, err))
			continue
		}
		return &cert
	}
	return nil
}
