package telemetry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/router"
)

// operation is gen_ai.operation.name, and the first word of span names.
const operation = "chat"

// The attributes of detour's spans: the GenAI semantic conventions
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/), then
// detour's own, named as the ledger names its fields.
const (
	keyOperation     = attribute.Key("gen_ai.operation.name")
	keySystem        = attribute.Key("gen_ai.system") // deprecated for gen_ai.provider.name; kept for the backends that read it
	keyProvider      = attribute.Key("gen_ai.provider.name")
	keyRequestModel  = attribute.Key("gen_ai.request.model")
	keyResponseModel = attribute.Key("gen_ai.response.model")
	keyInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	keyOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	keyCacheRead     = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	keyCacheWrite    = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	keyErrorType     = attribute.Key("error.type")

	keyRoute      = attribute.Key("detour.route")
	keyRequestID  = attribute.Key("detour.request_id")
	keyStream     = attribute.Key("detour.stream")
	keyTarget     = attribute.Key("detour.target") // provider/model
	keyDialect    = attribute.Key("detour.dialect")
	keyPool       = attribute.Key("detour.pool")
	keyHop        = attribute.Key("detour.hop")
	keyAttempt    = attribute.Key("detour.attempt") // the send's number at its target, 1 first
	keyFailover   = attribute.Key("detour.failover")
	keyStatus     = attribute.Key("detour.status")
	keyKind       = attribute.Key("detour.kind")
	keyScope      = attribute.Key("detour.scope")
	keyAction     = attribute.Key("detour.action")
	keyPhase      = attribute.Key("detour.phase")
	keyWait       = attribute.Key("detour.wait_seconds")
	keyRetryAfter = attribute.Key("detour.retry_after_seconds")
	keyCost       = attribute.Key("detour.cost_usd")
	keyReason     = attribute.Key("detour.reason")
	keyDropped    = attribute.Key("detour.dropped")
	keyAttempts   = attribute.Key("detour.attempts") // sends of the request
	keyDegraded   = attribute.Key("detour.degraded")
	keyReplayed   = attribute.Key("detour.replayed")
)

// requestSpan is one request's span; its children are made after the fact,
// from each attempt's record, with the attempt's own times. The router
// calls it from one goroutine at a time.
type requestSpan struct {
	t    *Tracer
	ctx  context.Context // carries span, the parent of the attempts'
	span trace.Span
	info router.TraceRequest

	sends int
	cost  float64
}

// Attempt implements router.RequestSpan: a child span for a, from a.Start
// to a.Start+a.Duration. A send is "chat MODEL" of kind client; a skip is
// "skip PROVIDER/MODEL" and a last resort "last_resort PROVIDER/MODEL",
// internal and of no length.
func (s *requestSpan) Attempt(a router.Attempt) {
	s.cost += a.Cost
	if !s.span.IsRecording() {
		return // a client's trace that is not sampled
	}
	t := a.Target
	name, kind := operation+" "+t.Model, trace.SpanKindClient
	switch {
	case a.Action == policy.Skip:
		name, kind = "skip "+t.ID(), trace.SpanKindInternal
	case a.Status == ledger.StatusLastResort:
		name, kind = "last_resort "+t.ID(), trace.SpanKindInternal
	default:
		s.sends++
	}
	bp := getAttrs()
	defer putAttrs(bp)
	attrs := append(*bp,
		keyOperation.String(operation),
		keySystem.String(t.Provider),
		keyProvider.String(t.Provider),
		keyRequestModel.String(t.Model),
		keyRoute.String(s.info.Route),
		keyRequestID.String(s.info.RequestID),
		keyTarget.String(t.ID()),
		keyHop.Int(a.Hop),
		keyFailover.Bool(a.Failover),
		keyStatus.String(a.Status),
		keyAction.String(string(a.Action)),
	)
	if a.N > 0 {
		attrs = append(attrs, keyAttempt.Int(a.N))
	}
	if t.Dialect != "" {
		attrs = append(attrs, keyDialect.String(t.Dialect))
	}
	if t.Pool != "" {
		attrs = append(attrs, keyPool.String(t.Pool))
	}
	if a.Phase != "" {
		attrs = append(attrs, keyPhase.String(string(a.Phase)))
	}
	if a.Model != "" {
		attrs = append(attrs, keyResponseModel.String(a.Model))
	}
	attrs = appendUsage(attrs, a.Usage)
	if a.Cost > 0 {
		attrs = append(attrs, keyCost.Float64(a.Cost))
	}
	if a.Reason != "" {
		attrs = append(attrs, keyReason.String(a.Reason))
	}
	if len(a.Dropped) > 0 {
		attrs = append(attrs, keyDropped.StringSlice(a.Dropped))
	}
	if a.Kind != "" {
		attrs = append(attrs, keyKind.String(string(a.Kind)))
	}
	if f := a.Failure; f != nil {
		attrs = append(attrs, keyErrorType.String(a.Status), keyScope.String(string(f.Scope)), keyWait.Float64(a.Wait.Seconds()))
		if f.RetryAfter > 0 {
			attrs = append(attrs, keyRetryAfter.Float64(f.RetryAfter.Seconds()))
		}
	}
	_, span := s.t.tracer.Start(s.ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(a.Start),
		trace.WithAttributes(attrs...))
	*bp = attrs // Start copied them
	if a.Failure != nil {
		span.SetStatus(codes.Error, a.Reason)
	}
	span.End(trace.WithTimestamp(a.Start.Add(a.Duration)))
}

// appendUsage adds u's token counts, when the target reported any.
func appendUsage(attrs []attribute.KeyValue, u llm.Usage) []attribute.KeyValue {
	if u == (llm.Usage{}) {
		return attrs
	}
	attrs = append(attrs, keyInputTokens.Int(u.InputTokens), keyOutputTokens.Int(u.OutputTokens))
	if u.CacheReadTokens > 0 {
		attrs = append(attrs, keyCacheRead.Int(u.CacheReadTokens))
	}
	if u.CacheWriteTokens > 0 {
		attrs = append(attrs, keyCacheWrite.Int(u.CacheWriteTokens))
	}
	return attrs
}

// End implements router.RequestSpan: it names who answered (the provider,
// the model, its usage) or what the request failed with (error.type: the
// failure's kind), and ends the span at at.
func (s *requestSpan) End(res *router.Result, err error, at time.Time) {
	defer s.span.End(trace.WithTimestamp(at))
	if !s.span.IsRecording() {
		return
	}
	bp := getAttrs()
	defer putAttrs(bp)
	attrs := append(*bp, keyAttempts.Int(s.sends))
	if s.cost > 0 {
		attrs = append(attrs, keyCost.Float64(s.cost))
	}
	if res != nil {
		t := res.Target
		attrs = append(attrs, keySystem.String(t.Provider), keyProvider.String(t.Provider), keyTarget.String(t.ID()),
			keyDegraded.Bool(res.Degraded), keyPhase.String(string(res.Phase)))
		if res.Replayed {
			attrs = append(attrs, keyReplayed.Bool(true))
		}
		if len(res.Dropped) > 0 {
			attrs = append(attrs, keyDropped.StringSlice(res.Dropped))
		}
		// The answering attempt is the last one recorded.
		if n := len(res.Attempts); n > 0 && res.Attempts[n-1].Target == t {
			a := res.Attempts[n-1]
			if a.Model != "" {
				attrs = append(attrs, keyResponseModel.String(a.Model))
			}
			attrs = appendUsage(attrs, a.Usage)
		} else if res.Response != nil && res.Response.Model != "" {
			attrs = append(attrs, keyResponseModel.String(res.Response.Model))
		}
	}
	if err != nil {
		kind, msg := errorKind(err), err.Error()
		attrs = append(attrs, keyErrorType.String(kind), keyKind.String(kind))
		if len(msg) > 300 {
			msg = strings.ToValidUTF8(msg[:297], "") + "..."
		}
		s.span.SetStatus(codes.Error, msg)
	}
	s.span.SetAttributes(attrs...) // copied
	*bp = attrs
}

// attrPool holds the scratch slices spans' attributes are gathered in:
// the SDK copies them, so one slice serves span after span.
var attrPool = sync.Pool{New: func() any {
	b := make([]attribute.KeyValue, 0, 32)
	return &b
}}

func getAttrs() *[]attribute.KeyValue { return attrPool.Get().(*[]attribute.KeyValue) }

// putAttrs gives b back, emptied, unless it grew out of the common size.
func putAttrs(b *[]attribute.KeyValue) {
	if cap(*b) > 64 {
		return
	}
	clear(*b) // drop the strings it points to
	*b = (*b)[:0]
	attrPool.Put(b)
}

// errorKind is error.type of a failed request: the kind of the router's
// error (wall, transient, invalid, ...), "canceled" for a caller that
// went away, else the kind classify reads in err.
func errorKind(err error) string {
	var re *router.Error
	switch {
	case errors.As(err, &re) && re.Kind != "":
		return string(re.Kind)
	case errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrClientStalled):
		return string(classify.Canceled)
	}
	if k := classify.Classify(err, time.Time{}).Kind; k != "" {
		return string(k)
	}
	return "_OTHER"
}
