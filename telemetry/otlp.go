package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/clock"
)

// The retries of one export: after a 429, 502, 503 or 504, or a post that
// got no answer, the exporter waits and posts again, as otlptracehttp did,
// within the export's timeout and its caller's context.
const (
	// firstBackoff is the wait before the first retry; each next one
	// doubles it, up to maxBackoff, each within ±50% (jitter).
	firstBackoff = time.Second
	maxBackoff   = 8 * time.Second
	// maxRetryWait is the longest wait a Retry-After may ask for: a
	// collector asking more gets no retry.
	maxRetryWait = 30 * time.Second
	// maxAttempts bounds the posts of an export that nothing else bounds
	// (no timeout, no deadline).
	maxAttempts = 8
)

// The response bodies the exporter reads: a short piece of a failure's
// body goes in its error; the rest is read (up to maxDrain), so that the
// connection can be used again, and dropped.
const (
	maxBodyInError = 200
	maxDrain       = 64 << 10
)

// errShutdown is the error of an export after Shutdown.
var errShutdown = errors.New("telemetry: the OTLP exporter is shut down")

// ExportError is the error of an export that failed: the last post's HTTP
// status, or why no answer came. OpenTelemetry's global error handler
// gets it (the batch span processor passes it on); the spans of that
// batch are dropped.
type ExportError struct {
	// URL is where the spans went, without any password in it.
	URL string
	// StatusCode is the last answer's HTTP status; 0 when none came.
	StatusCode int
	// Body is the start of the last answer's body as a reason is written
	// (classify.OneLine: on one line, keys scrubbed, cut short).
	Body string
	// Attempts counts the posts, retries included.
	Attempts int
	// Err is why the last post got no answer (a transport error), or why
	// the export stopped waiting to retry (its context); nil otherwise.
	Err error
}

// Error says where the spans went and what came back.
func (e *ExportError) Error() string {
	var b strings.Builder
	b.WriteString("telemetry: exporting spans to ")
	b.WriteString(e.URL)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
		if e.Body != "" {
			b.WriteString(": ")
			b.WriteString(e.Body)
		}
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (%d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap returns Err.
func (e *ExportError) Unwrap() error { return e.Err }

// otlpExporter is a sdktrace.SpanExporter posting spans to an OTLP/HTTP
// collector as binary protobuf (appendRequest). It is safe for concurrent
// use.
type otlpExporter struct {
	url    string // posted to
	shown  string // url for errors
	client *http.Client
	// own is the transport of the exporter's own client, whose idle
	// connections Shutdown closes; nil when Config.HTTPClient was given.
	own    *http.Transport
	header http.Header // every post's, Content-Type and Content-Encoding included
	opts   exportSettings
	clock  clock.Clock
	rand   func() float64 // in [0, 1), for jitter

	gzips sync.Pool // of *gzip.Writer

	stopped context.Context // done once Shutdown is called
	stop    context.CancelFunc
}

// newOTLPExporter returns an exporter posting to cfg.URL, set by the
// standard variables (read through cfg.Getenv) and cfg. userAgent names
// the exporter to the collector.
func newOTLPExporter(cfg Config, userAgent string) (*otlpExporter, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telemetry: Config.URL %q is not an http(s) URL", redact(cfg.URL))
	}
	// As otlptracehttp did: the scheme, host and path, no user, no query.
	target := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	if u.Path == "" {
		target += "/"
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	opts := envReader{getenv: getenv, readFile: os.ReadFile}.settings()
	e := &otlpExporter{url: target, shown: target, client: cfg.HTTPClient, opts: opts, clock: clock.Or(cfg.Clock), rand: rand.Float64}
	if e.client == nil {
		e.own = newTransport(opts.tls)
		e.client = &http.Client{Transport: e.own}
	}
	// The variables' headers may name the user agent; nothing else may
	// change what the body is.
	e.header = http.Header{"User-Agent": {userAgent}}
	for k, v := range opts.header {
		e.header[k] = v
	}
	e.header.Set("Content-Type", "application/x-protobuf")
	if opts.gzip {
		e.header.Set("Content-Encoding", "gzip")
	}
	e.stopped, e.stop = context.WithCancel(context.Background())
	return e, nil
}

// newTransport is a copy of http.DefaultTransport (proxies from the
// environment, HTTP/2, its timeouts) with tc, when not nil.
func newTransport(tc *tls.Config) *http.Transport {
	t := &http.Transport{Proxy: http.ProxyFromEnvironment}
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	}
	if tc != nil {
		t.TLSClientConfig = tc
	}
	return t
}

// redact returns raw with any password in it replaced by "xxxxx".
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}

// ExportSpans posts spans in one request, retrying as the package's
// constants say, within the export timeout and ctx. It fails at once after
// Shutdown.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Err() != nil {
		return errShutdown
	}
	if len(spans) == 0 {
		return nil
	}
	body := appendRequest(nil, spans)
	if e.opts.gzip {
		var err error
		if body, err = e.compress(body); err != nil {
			return fmt.Errorf("telemetry: compressing spans: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.stopped, cancel)()
	// The retries' budget, on e.clock: what is left of the timeout and of
	// ctx, whichever ends first.
	budget, bounded := e.opts.timeout, e.opts.timeout > 0
	if bounded {
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, budget)
		defer c()
	}
	now := e.clock.Now()
	if dl, ok := ctx.Deadline(); ok && (!bounded || dl.Sub(now) < budget) {
		budget, bounded = dl.Sub(now), true
	}
	end := now.Add(budget)
	for attempt := 1; ; attempt++ {
		status, snippet, retryAfter, err := e.post(ctx, body)
		if err == nil && status >= 200 && status < 300 {
			return nil
		}
		xerr := &ExportError{URL: e.shown, StatusCode: status, Body: snippet, Attempts: attempt, Err: err}
		if !retryable(status, err) || ctx.Err() != nil || attempt == maxAttempts || retryAfter > maxRetryWait {
			if xerr.Err == nil && ctx.Err() != nil {
				xerr.Err = context.Cause(ctx)
			}
			return xerr
		}
		wait := max(e.backoff(attempt), retryAfter)
		if bounded && e.clock.Now().Add(wait).After(end) {
			return xerr // no time left for another post
		}
		if !e.clock.Sleep(ctx, wait) {
			xerr.Err = context.Cause(ctx)
			return xerr
		}
	}
}

// retryable reports whether a post that got status (0: none) and err may
// be tried again: 429, 502, 503 and 504, and a post that got no answer,
// unless what failed was the check of the collector's certificate.
func retryable(status int, err error) bool {
	if err != nil {
		var cv *tls.CertificateVerificationError
		return !errors.As(err, &cv)
	}
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// backoff is the wait before the retry that follows attempt (1 first):
// firstBackoff doubled each time up to maxBackoff, within ±50%.
func (e *otlpExporter) backoff(attempt int) time.Duration {
	d := maxBackoff
	if attempt < 4 {
		d = min(firstBackoff<<(attempt-1), maxBackoff)
	}
	return time.Duration(float64(d) * (0.5 + e.rand()))
}

// post sends body once. It returns the answer's status, the start of its
// body (not for a 2xx), and the wait its Retry-After asks; or err, when
// no answer came.
func (e *otlpExporter) post(ctx context.Context, body []byte) (status int, snippet string, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return 0, "", 0, err
	}
	req.Header = e.header.Clone()
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		head := make([]byte, maxBodyInError)
		n, _ := io.ReadFull(resp.Body, head)
		snippet = classify.OneLine(string(head[:n]))
		if d, ok := classify.ParseRetryAfter(resp.Header.Get("Retry-After"), e.clock.Now()); ok {
			retryAfter = d
		}
	}
	// A partial success (some spans rejected) is a 200 whose body says so:
	// nothing to retry, so its body is dropped unread, like the others.
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain)) //nolint:errcheck // only draining
	return resp.StatusCode, snippet, retryAfter, nil
}

// compress returns body gzipped.
func (e *otlpExporter) compress(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(body) / 4)
	zw, _ := e.gzips.Get().(*gzip.Writer)
	if zw == nil {
		zw = gzip.NewWriter(&buf)
	} else {
		zw.Reset(&buf)
	}
	defer e.gzips.Put(zw)
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Shutdown stops the exporter: a post in flight, or a wait to retry, ends
// at once, later exports fail, and the idle connections of the exporter's
// own client are closed (not those of a Config.HTTPClient).
func (e *otlpExporter) Shutdown(ctx context.Context) error {
	e.stop()
	if e.own != nil {
		e.own.CloseIdleConnections()
	}
	return ctx.Err()
}
