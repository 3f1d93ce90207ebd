package router

import (
	"context"
	"time"

	"github.com/detourhq/detour/llm"
)

// Tracer traces requests: a span for each request, and a child span for
// each of its attempts and skips. Package telemetry makes one that exports
// OpenTelemetry spans over OTLP; the router itself knows no tracing
// library. A Tracer must be safe for concurrent use.
type Tracer interface {
	// StartRequest begins the span of one request, a child of the trace
	// ctx carries (a client's traceparent, read by the gateway), or a new
	// trace's root. It is called before the first attempt.
	StartRequest(ctx context.Context, info TraceRequest) RequestSpan
}

// TraceRequest is what a Tracer learns when a request starts.
type TraceRequest struct {
	// RequestID is the request's id, as in the ledger.
	RequestID string
	// Route is the route's name.
	Route string
	// Model is the model the request asked for, as the caller wrote it
	// (the route's name, most often); empty when the caller left it out.
	Model string
	// Stream is set for Stream, clear for Complete and Embed.
	Stream bool
	// Embed is set for Embed: an embeddings request.
	Embed bool
	// Start is when the request began, by the router's clock.
	Start time.Time
}

// RequestSpan is the span of one request. The router calls its methods
// from one goroutine at a time, Attempt before End.
type RequestSpan interface {
	// Attempt records one attempt or skip (a of Router.OnAttempt), just
	// after its ledger record was written: it ran from a.Start for
	// a.Duration (0 for a skip).
	Attempt(a Attempt)
	// End ends the request's span at at, by the router's clock: res is
	// the answer (a last resort's included) and err nil, or res is nil
	// and err the failure. A stream's span ends when the stream does:
	// err is then the error that cut or closed it, with res its Result.
	End(res *Result, err error, at time.Time)
}

// startTrace begins the walk's request span, when the router traces;
// info says what kind of request it is (Stream, Embed), and the walk adds
// the rest.
func (w *walk) startTrace(ctx context.Context, req *llm.Request, info TraceRequest) {
	if w.r.Trace == nil {
		return
	}
	info.RequestID, info.Route, info.Model, info.Start = w.ask.id, w.route.Name, req.Model, w.ask.started
	w.span = w.r.Trace.StartRequest(ctx, info)
}

// endTrace ends the walk's request span, once; a walk that traces nothing
// does nothing.
func (w *walk) endTrace(res *Result, err error) {
	if w.span == nil {
		return
	}
	w.span.End(res, err, w.clk.Now())
	w.span = nil
}
