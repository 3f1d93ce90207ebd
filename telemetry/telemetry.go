package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/router"
)

// ServiceName is the resource's service.name, unless OTEL_SERVICE_NAME
// says otherwise.
const ServiceName = "detour"

// Config is what New needs. Only URL is required; every other field's zero
// value means its default.
type Config struct {
	// URL is the OTLP/HTTP traces URL spans are posted to
	// (http://localhost:4318/v1/traces): its scheme, host and path, as
	// otlptracehttp used it (a user or query in it is dropped).
	// config.Config.Tracing resolves it from the file and the environment.
	// The exporter reads the rest of the standard variables itself, each
	// OTEL_EXPORTER_OTLP_TRACES_X first, else OTEL_EXPORTER_OTLP_X:
	// _HEADERS (name=value,..., a collector's key; the TRACES_ one
	// replaces the other whole), _TIMEOUT (milliseconds for one export,
	// its retries included; 10 s when unset), _COMPRESSION (gzip or none),
	// _CERTIFICATE (a PEM file of the CAs the collector's certificate is
	// checked against), _CLIENT_CERTIFICATE and _CLIENT_KEY (mutual TLS).
	// A value it cannot use is skipped and reported to OpenTelemetry's
	// global error handler.
	URL string
	// Version is the resource's service.version; "" means the version of
	// the module the binary was built from, when it has one.
	Version string
	// HTTPClient posts the spans, used as it is (the TLS variables do not
	// apply to it); nil means the exporter's own.
	HTTPClient *http.Client
	// BatchTimeout is the longest a finished span waits before it is sent;
	// 0 means the SDK's default (5 s, or $OTEL_BSP_SCHEDULE_DELAY).
	BatchTimeout time.Duration
	// Getenv reads the exporter's variables; nil means os.Getenv.
	// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and the batch span
	// processor's OTEL_BSP_* are read by the SDK, from the process.)
	Getenv func(string) string
	// Clock times the exporter's waits between retries; nil means the
	// wall clock.
	Clock clock.Clock
}

// Tracer exports detour's spans over OTLP/HTTP: it is a router.Tracer
// (Router.Trace) and reads a client's trace context for the gateway
// (Extract). Spans wait in a batch span processor and are posted in the
// background; a full queue drops spans rather than slow a request. It
// leaves OpenTelemetry's global state alone. A Tracer is safe for
// concurrent use.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	url      string
}

// New starts a Tracer posting to cfg.URL. It makes no connection: an
// unreachable collector shows later, as export errors that OpenTelemetry
// logs (its global error handler), never as failed requests.
func New(ctx context.Context, cfg Config) (*Tracer, error) {
	if cfg.URL == "" {
		return nil, errors.New("telemetry: Config.URL is empty")
	}
	version := cfg.Version
	if version == "" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
	}
	ua := ServiceName
	if version != "" {
		ua += "/" + version
	}
	exp, err := newOTLPExporter(cfg, ua)
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", ServiceName)}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	// The environment's OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// come last: they win.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: the resource: %w", err)
	}
	var bopts []sdktrace.BatchSpanProcessorOption
	if cfg.BatchTimeout > 0 {
		bopts = append(bopts, sdktrace.WithBatchTimeout(cfg.BatchTimeout))
	}
	return newTracer(cfg.URL, exp, res, bopts...), nil
}

// newTracer makes a Tracer batching its spans to exp.
func newTracer(url string, exp sdktrace.SpanExporter, res *resource.Resource, bopts ...sdktrace.BatchSpanProcessorOption) *Tracer {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, bopts...), sdktrace.WithResource(res))
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/detourhq/detour/telemetry"), url: url}
}

// URL returns the traces URL spans are posted to.
func (t *Tracer) URL() string { return t.url }

// Shutdown sends the spans still queued and stops the exporter, within
// ctx. Spans that end after it are dropped.
func (t *Tracer) Shutdown(ctx context.Context) error {
	return t.provider.Shutdown(ctx)
}

// serverKey marks a context whose request came in over HTTP (Extract):
// its span is of kind server.
type serverKey struct{}

// traceContext reads and writes W3C traceparent and tracestate.
var traceContext = propagation.TraceContext{}

// Extract returns ctx carrying the trace context of a client's W3C
// traceparent and tracestate headers (none when they are absent or
// malformed), and marks it as an incoming request: the request span
// StartRequest begins under it is a child of the client's span, of kind
// server.
func (t *Tracer) Extract(ctx context.Context, h http.Header) context.Context {
	ctx = traceContext.Extract(ctx, propagation.HeaderCarrier(h))
	return context.WithValue(ctx, serverKey{}, true)
}

// StartRequest implements router.Tracer: it begins the span "chat ROUTE"
// of one request, a child of ctx's span (a client's, through Extract).
func (t *Tracer) StartRequest(ctx context.Context, info router.TraceRequest) router.RequestSpan {
	kind := trace.SpanKindInternal
	if ctx.Value(serverKey{}) != nil {
		kind = trace.SpanKindServer
	}
	model := info.Model
	if model == "" {
		model = info.Route
	}
	ctx, span := t.tracer.Start(ctx, operation+" "+info.Route, trace.WithSpanKind(kind), trace.WithTimestamp(info.Start),
		trace.WithAttributes(
			keyOperation.String(operation),
			keyRequestModel.String(model),
			keyRoute.String(info.Route),
			keyRequestID.String(info.RequestID),
			keyStream.Bool(info.Stream),
		))
	return &requestSpan{t: t, ctx: ctx, span: span, info: info}
}
