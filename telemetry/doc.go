// Package telemetry traces detour's requests with OpenTelemetry: a span per
// request and a child per attempt and skip, with the GenAI semantic
// conventions (gen_ai.*) and detour's own attributes (detour.*), exported
// over OTLP/HTTP through a batch span processor. A *Tracer is a
// router.Tracer; the router itself imports no OpenTelemetry.
//
//	tr, err := telemetry.New(ctx, telemetry.Config{URL: "http://localhost:4318/v1/traces"})
//	if err != nil {
//		return err
//	}
//	defer tr.Shutdown(context.Background()) // flushes the spans still queued
//	r := &router.Router{Ledger: sink, Trace: tr}
//
// Tracing is off unless a Tracer is set: a nil Router.Trace costs one nil
// check per request and per attempt. The gateway (gateway.Config.Trace)
// continues the trace of a client's W3C traceparent header through
// (*Tracer).Extract.
package telemetry
