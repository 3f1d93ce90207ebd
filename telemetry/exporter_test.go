package telemetry_test

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/telemetry"
)

// answer is one scripted reply of a collector.
type answer struct {
	status int
	header http.Header
	body   string
	hangup bool // close the connection without a reply
}

// collector answers posts from a script, then 200, and keeps what came:
// each post's header and its body, gunzipped and decoded.
type collector struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex // guards the fields below
	script  []answer
	headers []http.Header
	spans   int
}

func newCollector(t *testing.T, script ...answer) *collector {
	t.Helper()
	c := &collector{t: t, script: script}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			c.t.Errorf("collector: a gzip body that is not gzip: %v", err)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		c.t.Errorf("collector: %v", err)
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		c.t.Errorf("collector: the body is no ExportTraceServiceRequest: %v", err)
	}
	c.mu.Lock()
	c.headers = append(c.headers, r.Header.Clone())
	a := answer{status: http.StatusOK}
	if len(c.script) > 0 {
		a, c.script = c.script[0], c.script[1:]
	}
	if a.status/100 == 2 {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				c.spans += len(ss.GetSpans())
			}
		}
	}
	c.mu.Unlock()
	if a.hangup {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body) //nolint:errcheck
}

// posts returns the headers of every post so far, and the spans the 2xx
// answers took.
func (c *collector) posts() ([]http.Header, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]http.Header(nil), c.headers...), c.spans
}

func (c *collector) url() string { return c.srv.URL + "/v1/traces" }

// env is a Getenv over a map.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// newExporter is an exporter posting to url with the variables of getenv,
// waiting on c.
func newExporter(t *testing.T, url string, getenv func(string) string, c clock.Clock) sdktrace.SpanExporter {
	t.Helper()
	exp, err := telemetry.NewExporter(telemetry.Config{URL: url, Getenv: getenv, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exp.Shutdown(context.Background()) }) //nolint:errcheck
	return exp
}

// batch is two spans.
func batch() []sdktrace.ReadOnlySpan {
	now := time.Now()
	var out []sdktrace.ReadOnlySpan
	for i := range 2 {
		out = append(out, tracetest.SpanStub{Name: "chat m", StartTime: now, EndTime: now,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{byte(i + 1)}})}.Snapshot())
	}
	return out
}

func TestExporter_PostsProtobufWithTheVariablesHeaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want map[string]string // "" for a header that must be absent
	}{
		{"general", []string{"OTEL_EXPORTER_OTLP_HEADERS", "api-key=s3cr%3Dt%20x, X-Team = blue ,malformed,bad name=1,=v"},
			map[string]string{"Api-Key": "s3cr=t x", "X-Team": "blue", "Bad Name": ""}},
		{"traces replaces general", []string{"OTEL_EXPORTER_OTLP_HEADERS", "api-key=general,x-only-general=1",
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api-key=traces"},
			map[string]string{"Api-Key": "traces", "X-Only-General": ""}},
		{"no content type of theirs", []string{"OTEL_EXPORTER_OTLP_HEADERS", "content-type=text/plain,user-agent=mine"},
			map[string]string{"Content-Type": "application/x-protobuf", "User-Agent": "mine"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(t)
			exp := newExporter(t, c.url(), env(tc.env...), nil)
			if err := exp.ExportSpans(context.Background(), batch()); err != nil {
				t.Fatal(err)
			}
			hs, spans := c.posts()
			if len(hs) != 1 || spans != 2 {
				t.Fatalf("%d posts, %d spans; want 1 post of 2 spans", len(hs), spans)
			}
			h := hs[0]
			if got := h.Get("Content-Type"); got != "application/x-protobuf" {
				t.Errorf("Content-Type %q, want application/x-protobuf", got)
			}
			if got := h.Get("Content-Encoding"); got != "" {
				t.Errorf("Content-Encoding %q with no compression asked", got)
			}
			for k, want := range tc.want {
				if got := h.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestExporter_Compression(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      []string
		wantGzip bool
	}{
		{"gzip", []string{"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"}, true},
		{"traces gzip", []string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip"}, true},
		{"traces none wins", []string{"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "none"}, false},
		{"unknown is none", []string{"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(t)
			exp := newExporter(t, c.url(), env(tc.env...), nil)
			// Twice: the second reuses the pooled gzip writer.
			for range 2 {
				if err := exp.ExportSpans(context.Background(), batch()); err != nil {
					t.Fatal(err)
				}
			}
			hs, spans := c.posts()
			if spans != 4 {
				t.Fatalf("the collector decoded %d spans, want 4", spans)
			}
			if got := hs[1].Get("Content-Encoding") == "gzip"; got != tc.wantGzip {
				t.Errorf("gzipped %v, want %v", got, tc.wantGzip)
			}
		})
	}
}

func TestExporter_RetriesAfterWhatRetryAfterSays(t *testing.T) {
	c := newCollector(t, answer{status: http.StatusServiceUnavailable, header: http.Header{"Retry-After": {"3"}}, body: "busy"})
	fake := clock.NewFake(time.Unix(0, 0))
	exp := newExporter(t, c.url(), noEnv, fake)
	if err := exp.ExportSpans(context.Background(), batch()); err != nil {
		t.Fatalf("ExportSpans after a 503 then a 200: %v", err)
	}
	if hs, spans := c.posts(); len(hs) != 2 || spans != 2 {
		t.Errorf("%d posts, %d spans taken; want 2 posts, the second taking 2 spans", len(hs), spans)
	}
	// The first backoff is at most 1.5 s: the collector's 3 s wins.
	if got := fake.Sleeps(); len(got) != 1 || got[0] != 3*time.Second {
		t.Errorf("waits %v, want [3s]", got)
	}
}

func TestExporter_RetriesWhatMayRecoverOnly(t *testing.T) {
	for _, tc := range []struct {
		status int
		retry  bool
	}{
		{http.StatusTooManyRequests, true}, {http.StatusBadGateway, true},
		{http.StatusServiceUnavailable, true}, {http.StatusGatewayTimeout, true},
		{http.StatusBadRequest, false}, {http.StatusUnauthorized, false}, {http.StatusNotFound, false},
		{http.StatusRequestEntityTooLarge, false}, {http.StatusInternalServerError, false},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			c := newCollector(t, answer{status: tc.status, body: "  the collector says\nno  "})
			fake := clock.NewFake(time.Unix(0, 0))
			exp := newExporter(t, c.url(), noEnv, fake)
			err := exp.ExportSpans(context.Background(), batch())
			hs, _ := c.posts()
			if tc.retry {
				if err != nil || len(hs) != 2 || len(fake.Sleeps()) != 1 {
					t.Errorf("err %v after %d posts and waits %v: want the second post to succeed after one wait", err, len(hs), fake.Sleeps())
				}
				if w := fake.Sleeps(); len(w) == 1 && (w[0] < 500*time.Millisecond || w[0] > 1500*time.Millisecond) {
					t.Errorf("the first backoff is %v, want 1 s ± 50%%", w[0])
				}
				return
			}
			if len(hs) != 1 || len(fake.Sleeps()) != 0 {
				t.Errorf("%d posts, waits %v: want one post and no wait", len(hs), fake.Sleeps())
			}
			var xe *telemetry.ExportError
			if !errors.As(err, &xe) || xe.StatusCode != tc.status || xe.Attempts != 1 || xe.Body != "the collector says no" {
				t.Fatalf("err %#v, want an ExportError of status %d, 1 attempt, the body on one line", err, tc.status)
			}
			for _, part := range []string{c.url(), http.StatusText(tc.status), "the collector says no"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not name %q", err, part)
				}
			}
		})
	}
}

// A collector that echoes the request's credentials in its error body
// does not put them in detour's error (DESIGN rule 12): the body is
// written as every reason is, keys scrubbed.
func TestExporter_ErrorBodyKeepsNoKey(t *testing.T) {
	const key = "sk-abcdefghijklmnopqrstuvwxyz012345"
	c := newCollector(t, answer{status: http.StatusUnauthorized, body: "bad header Authorization: Bearer " + key + " for api_key=" + key})
	exp := newExporter(t, c.url(), noEnv, clock.NewFake(time.Unix(0, 0)))
	err := exp.ExportSpans(context.Background(), batch())
	var xe *telemetry.ExportError
	if !errors.As(err, &xe) {
		t.Fatalf("err %v, want an ExportError", err)
	}
	if strings.Contains(err.Error(), key) || strings.Contains(xe.Body, key) || !strings.Contains(xe.Body, "bad header") {
		t.Fatalf("error %q (body %q): want the body without the key", err, xe.Body)
	}
}

func TestExporter_BackoffStaysWithinTheTimeout(t *testing.T) {
	var script []answer
	for range 20 {
		script = append(script, answer{status: http.StatusBadGateway})
	}
	c := newCollector(t, script...)
	fake := clock.NewFake(time.Unix(0, 0))
	exp := newExporter(t, c.url(), env("OTEL_EXPORTER_OTLP_TIMEOUT", "10000"), fake)
	err := exp.ExportSpans(context.Background(), batch())
	var xe *telemetry.ExportError
	if !errors.As(err, &xe) || xe.StatusCode != http.StatusBadGateway {
		t.Fatalf("err %v, want the last 502", err)
	}
	hs, _ := c.posts()
	waits := fake.Sleeps()
	var total time.Duration
	for i, w := range waits {
		base := time.Second << i
		if w < base/2 || w > base*3/2 {
			t.Errorf("wait %d is %v, want %v ± 50%%", i, w, base)
		}
		total += w
	}
	if total > 10*time.Second || len(hs) != len(waits)+1 || len(hs) < 3 || xe.Attempts != len(hs) {
		t.Errorf("%d posts (error says %d), waits %v (%v): want at least 3 posts, a wait between each, within 10 s",
			len(hs), xe.Attempts, waits, total)
	}
}

func TestExporter_GivesUpWhenRetryAfterOutlastsTheTimeout(t *testing.T) {
	c := newCollector(t, answer{status: http.StatusTooManyRequests, header: http.Header{"Retry-After": {"20"}}})
	fake := clock.NewFake(time.Unix(0, 0))
	exp := newExporter(t, c.url(), noEnv, fake) // the default timeout: 10 s
	err := exp.ExportSpans(context.Background(), batch())
	if hs, _ := c.posts(); err == nil || len(hs) != 1 || len(fake.Sleeps()) != 0 {
		t.Errorf("err %v, %d posts, waits %v: want the 429 at once, with no wait", err, len(hs), fake.Sleeps())
	}
}

func TestExporter_RetriesAPostWithNoAnswer(t *testing.T) {
	c := newCollector(t, answer{hangup: true})
	fake := clock.NewFake(time.Unix(0, 0))
	exp := newExporter(t, c.url(), noEnv, fake)
	if err := exp.ExportSpans(context.Background(), batch()); err != nil {
		t.Fatalf("ExportSpans after a hang-up then a 200: %v", err)
	}
	if hs, spans := c.posts(); len(hs) != 2 || spans != 2 {
		t.Errorf("%d posts, %d spans; want a second post that took the spans", len(hs), spans)
	}
}

func TestExporter_TimeoutEndsAPostThatHangs(t *testing.T) {
	// It answers 200 after 3 s, unless the client gives up first.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // read whole: the server then notices the client leave
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	exp := newExporter(t, srv.URL+"/v1/traces", env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "150", "OTEL_EXPORTER_OTLP_TIMEOUT", "60000"), nil)
	began := time.Now()
	err := exp.ExportSpans(context.Background(), batch())
	took := time.Since(began)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the deadline of the export", err)
	}
	if took > 2*time.Second {
		t.Errorf("the export took %v with a timeout of 150 ms", took)
	}
}

// blockingClock's Sleep waits for its context, and says it began.
type blockingClock struct {
	clock.Real
	sleeping chan struct{}
}

func (c blockingClock) Sleep(ctx context.Context, d time.Duration) bool {
	c.sleeping <- struct{}{}
	<-ctx.Done()
	return false
}

func TestExporter_ShutdownEndsAWaitAndLaterExports(t *testing.T) {
	c := newCollector(t, answer{status: http.StatusServiceUnavailable})
	bc := blockingClock{sleeping: make(chan struct{}, 1)}
	exp := newExporter(t, c.url(), noEnv, bc)
	done := make(chan error, 1)
	go func() { done <- exp.ExportSpans(context.Background(), batch()) }()
	<-bc.sleeping
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the export ended with %v, want it canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not end the export's wait")
	}
	if err := exp.ExportSpans(context.Background(), batch()); err == nil {
		t.Error("an export after Shutdown succeeded")
	}
	if hs, _ := c.posts(); len(hs) != 1 {
		t.Errorf("%d posts, want only the first", len(hs))
	}
}

func TestExporter_NothingToSendPostsNothing(t *testing.T) {
	c := newCollector(t)
	exp := newExporter(t, c.url(), noEnv, nil)
	if err := exp.ExportSpans(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if hs, _ := c.posts(); len(hs) != 0 {
		t.Errorf("%d posts of no span", len(hs))
	}
}

func TestExporter_CertificateFromTheVariable(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/v1/traces"

	fake := clock.NewFake(time.Unix(0, 0))
	err := newExporter(t, url, noEnv, fake).ExportSpans(context.Background(), batch())
	var xe *telemetry.ExportError
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &xe) || !errors.As(err, &unknown) || xe.Attempts != 1 {
		t.Errorf("without the CA: %v, want one attempt failing on the unknown authority, not retried", err)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"} {
		if err := newExporter(t, url, env(name, ca), nil).ExportSpans(context.Background(), batch()); err != nil {
			t.Errorf("with $%s: %v", name, err)
		}
	}
	// A file that cannot be read is skipped, as otlptracehttp did.
	if _, err := telemetry.NewExporter(telemetry.Config{URL: url, Getenv: env("OTEL_EXPORTER_OTLP_CERTIFICATE", ca+".missing")}); err != nil {
		t.Errorf("a missing CA file: %v, want it skipped", err)
	}
}

func TestExporter_ClientCertificateFromTheVariables(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client certificate", http.StatusUnauthorized)
		}
	}))
	// Asked, not checked: the handler says 401 when none came. The
	// client shows the server's own certificate (httptest's).
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	leaf := srv.TLS.Certificates[0]
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key, err := x509.MarshalPKCS8PrivateKey(leaf.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	ca := write("ca.pem", "CERTIFICATE", srv.Certificate().Raw)
	cert := write("client.pem", "CERTIFICATE", leaf.Certificate[0])
	keyFile := write("client.key", "PRIVATE KEY", key)
	exp := newExporter(t, srv.URL+"/v1/traces", env("OTEL_EXPORTER_OTLP_CERTIFICATE", ca,
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", cert, "OTEL_EXPORTER_OTLP_CLIENT_KEY", keyFile), nil)
	if err := exp.ExportSpans(context.Background(), batch()); err != nil {
		t.Errorf("with a client certificate: %v", err)
	}
	exp = newExporter(t, srv.URL+"/v1/traces", env("OTEL_EXPORTER_OTLP_CERTIFICATE", ca), clock.NewFake(time.Unix(0, 0)))
	var xe *telemetry.ExportError
	if err := exp.ExportSpans(context.Background(), batch()); !errors.As(err, &xe) || xe.StatusCode != http.StatusUnauthorized {
		t.Errorf("without one: %v, want the collector's 401", err)
	}
}

func TestNewExporter_RefusesAURLThatIsNotHTTP(t *testing.T) {
	for _, u := range []string{"localhost:4318", "ftp://x/v1/traces", "http://", "://"} {
		if _, err := telemetry.NewExporter(telemetry.Config{URL: u, Getenv: noEnv}); err == nil {
			t.Errorf("URL %q: no error", u)
		}
	}
}

// A user and a query in the URL are not sent, as otlptracehttp did not.
func TestExporter_PostsToSchemeHostAndPath(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Clone(context.Background()) }))
	t.Cleanup(srv.Close)
	u := strings.Replace(srv.URL, "http://", "http://user:pw@", 1) + "/custom/path?k=v"
	if err := newExporter(t, u, noEnv, nil).ExportSpans(context.Background(), batch()); err != nil {
		t.Fatal(err)
	}
	if got.URL.Path != "/custom/path" || got.URL.RawQuery != "" || got.Header.Get("Authorization") != "" {
		t.Errorf("posted to %s with Authorization %q: want /custom/path, no query, no credential", got.URL, got.Header.Get("Authorization"))
	}
}
