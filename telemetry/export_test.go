package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// NewDiscarding returns a Tracer whose batches go nowhere: the spans'
// own cost, without the OTLP encoding and the post.
func NewDiscarding() *Tracer {
	return newTracer("", discard{}, resource.Default())
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
