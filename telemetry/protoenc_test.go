package telemetry_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/detourhq/detour/telemetry"
)

// rawReceiver answers every post 200 and keeps the bodies (gunzipped by
// no one: the exporters here do not compress).
type rawReceiver struct {
	srv *httptest.Server

	mu     sync.Mutex // guards bodies
	bodies [][]byte
}

func newRawReceiver(t *testing.T) *rawReceiver {
	t.Helper()
	rr := &rawReceiver{}
	rr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rr.mu.Lock()
		rr.bodies = append(rr.bodies, b)
		rr.mu.Unlock()
	}))
	t.Cleanup(rr.srv.Close)
	return rr
}

// exportDecoded posts spans in one export through an exporter that reads
// no variable, and returns the request the collector got, decoded with
// the official types.
func exportDecoded(t *testing.T, spans ...sdktrace.ReadOnlySpan) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	rr := newRawReceiver(t)
	exp, err := telemetry.NewExporter(telemetry.Config{URL: rr.srv.URL + "/v1/traces", Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background()) //nolint:errcheck
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatalf("ExportSpans: %v", err)
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if len(rr.bodies) != 1 {
		t.Fatalf("%d posts, want 1", len(rr.bodies))
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(rr.bodies[0], &req); err != nil {
		t.Fatalf("the body is not an ExportTraceServiceRequest: %v", err)
	}
	return &req
}

func noEnv(string) string { return "" }

func traceID(t *testing.T, h string) trace.TraceID {
	t.Helper()
	id, err := trace.TraceIDFromHex(h)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func spanID(t *testing.T, h string) trace.SpanID {
	t.Helper()
	id, err := trace.SpanIDFromHex(h)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func traceState(t *testing.T, s string) trace.TraceState {
	t.Helper()
	ts, err := trace.ParseTraceState(s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// Values of every attribute type and their OTLP form, zero values too
// (a oneof member is written even when zero), and strings long enough to
// need lengths of two and three bytes.
var (
	long = strings.Repeat("ü", 150)    // 300 bytes
	huge = strings.Repeat("x", 20_000) // a span past 16 KiB

	everyType = []attribute.KeyValue{
		attribute.Bool("b", true), attribute.Bool("b0", false),
		attribute.Int64("i", -42), attribute.Int64("i0", 0), attribute.Int64("imax", math.MaxInt64),
		attribute.Float64("f", 3.25), attribute.Float64("f0", 0), attribute.Float64("fneg", -1e300),
		attribute.String("s", "x"), attribute.String("s0", ""), attribute.String("long", long), attribute.String("huge", huge),
		attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Int64Slice("is", []int64{1, -1, 0}),
		attribute.Float64Slice("fs", []float64{0.5, -2}),
		attribute.StringSlice("ss", []string{"a", "", "ü"}),
		attribute.StringSlice("ss0", nil),
		attribute.ByteSlice("bytes", []byte{0, 1, 255}),
		attribute.Slice("mixed", attribute.IntValue(1), attribute.StringValue("two"), attribute.SliceValue(attribute.BoolValue(true))),
		attribute.Map("m", attribute.String("k", "v"), attribute.Int("n", 7)),
		{Key: "empty", Value: attribute.Value{}},
	}
)

func strV(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}
func boolV(b bool) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
}
func intV(i int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
}
func dblV(f float64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
}
func arrV(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}
func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

// everyTypeWant is everyType as OTLP has it, written out by hand.
var everyTypeWant = []*commonpb.KeyValue{
	kv("b", boolV(true)), kv("b0", boolV(false)),
	kv("i", intV(-42)), kv("i0", intV(0)), kv("imax", intV(math.MaxInt64)),
	kv("f", dblV(3.25)), kv("f0", dblV(0)), kv("fneg", dblV(-1e300)),
	kv("s", strV("x")), kv("s0", strV("")), kv("long", strV(long)), kv("huge", strV(huge)),
	kv("bs", arrV(boolV(true), boolV(false))),
	kv("is", arrV(intV(1), intV(-1), intV(0))),
	kv("fs", arrV(dblV(0.5), dblV(-2))),
	kv("ss", arrV(strV("a"), strV(""), strV("ü"))),
	kv("ss0", arrV()),
	kv("bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 255}}}),
	kv("mixed", arrV(intV(1), strV("two"), arrV(boolV(true)))),
	kv("m", &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
		Values: []*commonpb.KeyValue{kv("k", strV("v")), kv("n", intV(7))}}}}),
	kv("empty", &commonpb.AnyValue{}),
}

func TestExporter_EncodesEveryFieldGroupedByResourceAndScope(t *testing.T) {
	const (
		tidA, sidA   = "4bf92f3577b34da6a3ce929d0e0e4736", "0102030405060708"
		parentSID    = "00f067aa0ba902b7"
		tidL1, sidL1 = "11111111111111111111111111111111", "2222222222222222"
		tidL2, sidL2 = "33333333333333333333333333333333", "4444444444444444"
		tidB, sidB   = "55555555555555555555555555555555", "6666666666666666"
	)
	start := time.Unix(1_700_000_000, 123_456_789)
	r1 := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "detour"), attribute.String("service.version", "v1.2.3"), attribute.Int("r.n", 3))
	r2 := resource.NewSchemaless(attribute.String("service.name", "other"))
	s1 := instrumentation.Scope{Name: "github.com/detourhq/detour/telemetry", Version: "v1", SchemaURL: "https://example.com/s1",
		Attributes: attribute.NewSet(attribute.Bool("scope.flag", true), attribute.String("scope.a", "z"))}
	s2 := instrumentation.Scope{Name: "github.com/detourhq/detour/telemetry", Version: "v2"}
	sc := func(tid, sid string, flags trace.TraceFlags, ts string, remote bool) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID(t, tid), SpanID: spanID(t, sid),
			TraceFlags: flags, TraceState: traceState(t, ts), Remote: remote})
	}

	a := tracetest.SpanStub{
		Name:        "chat default",
		SpanContext: sc(tidA, sidA, trace.FlagsSampled, "vendor=abc,other=xyz", false),
		Parent:      sc(tidA, parentSID, trace.FlagsSampled, "", true),
		SpanKind:    trace.SpanKindServer,
		StartTime:   start, EndTime: start.Add(1500 * time.Millisecond),
		Attributes: everyType,
		Events: []sdktrace.Event{
			{Name: "retry", Time: start.Add(10 * time.Millisecond), Attributes: []attribute.KeyValue{attribute.Int("attempt", 2)},
				DroppedAttributeCount: 1},
			{},
		},
		Links: []sdktrace.Link{
			{SpanContext: sc(tidL1, sidL1, trace.FlagsSampled, "l=1", true),
				Attributes: []attribute.KeyValue{attribute.String("why", "retry of")}, DroppedAttributeCount: 2},
			{SpanContext: sc(tidL2, sidL2, 0, "", false)},
		},
		Status:            sdktrace.Status{Code: codes.Error, Description: "HTTP 402"},
		DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
		Resource: r1, InstrumentationScope: s1,
	}
	// The rest: one each of the other kinds and statuses, in two more
	// scopes and another resource, interleaved.
	other := func(name string, kind trace.SpanKind, res *resource.Resource, scope instrumentation.Scope, st sdktrace.Status) tracetest.SpanStub {
		return tracetest.SpanStub{Name: name, SpanContext: sc(tidB, sidB, 0, "", false), SpanKind: kind,
			StartTime: start, EndTime: start.Add(time.Second), Status: st, Resource: res, InstrumentationScope: scope}
	}
	b := other("b", trace.SpanKindClient, r1, s2, sdktrace.Status{Code: codes.Ok})
	c := other("c", trace.SpanKindProducer, r2, instrumentation.Scope{}, sdktrace.Status{})
	d := other("d", trace.SpanKindConsumer, r1, s1, sdktrace.Status{})
	e := other("e", trace.SpanKindInternal, r2, instrumentation.Scope{}, sdktrace.Status{})
	f := other("f", trace.SpanKindUnspecified, r1, s2, sdktrace.Status{})
	f.StartTime, f.EndTime = time.Unix(-5, 0), time.Time{} // before 1970, and unset: 0 both

	got := exportDecoded(t, a.Snapshot(), b.Snapshot(), c.Snapshot(), d.Snapshot(), e.Snapshot(), f.Snapshot())

	otherWant := func(name string, kind tracepb.Span_SpanKind, code tracepb.Status_StatusCode) *tracepb.Span {
		return &tracepb.Span{TraceId: unhex(tidB), SpanId: unhex(sidB), Name: name, Kind: kind, Flags: 0x100,
			StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: uint64(start.Add(time.Second).UnixNano()),
			Status: &tracepb.Status{Code: code}}
	}
	fWant := otherWant("f", tracepb.Span_SPAN_KIND_UNSPECIFIED, tracepb.Status_STATUS_CODE_UNSET)
	fWant.StartTimeUnixNano, fWant.EndTimeUnixNano = 0, 0
	aWant := &tracepb.Span{
		TraceId: unhex(tidA), SpanId: unhex(sidA), TraceState: "vendor=abc,other=xyz", ParentSpanId: unhex(parentSID),
		Flags: 0x01 | 0x100 | 0x200, // sampled; the parent's remoteness is known, and it is remote
		Name:  "chat default", Kind: tracepb.Span_SPAN_KIND_SERVER,
		StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: uint64(start.Add(1500 * time.Millisecond).UnixNano()),
		Attributes: everyTypeWant, DroppedAttributesCount: 3,
		Events: []*tracepb.Span_Event{
			{TimeUnixNano: uint64(start.Add(10 * time.Millisecond).UnixNano()), Name: "retry",
				Attributes: []*commonpb.KeyValue{kv("attempt", intV(2))}, DroppedAttributesCount: 1},
			{},
		},
		DroppedEventsCount: 4,
		Links: []*tracepb.Span_Link{
			{TraceId: unhex(tidL1), SpanId: unhex(sidL1), TraceState: "l=1", Attributes: []*commonpb.KeyValue{kv("why", strV("retry of"))},
				DroppedAttributesCount: 2, Flags: 0x01 | 0x100 | 0x200},
			{TraceId: unhex(tidL2), SpanId: unhex(sidL2), Flags: 0x100},
		},
		DroppedLinksCount: 5,
		Status:            &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "HTTP 402"},
	}
	want := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{
			// A resource's attributes come sorted by key, as the SDK keeps them.
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
				kv("r.n", intV(3)), kv("service.name", strV("detour")), kv("service.version", strV("v1.2.3"))}},
			SchemaUrl: "https://opentelemetry.io/schemas/1.26.0",
			ScopeSpans: []*tracepb.ScopeSpans{
				{Scope: &commonpb.InstrumentationScope{Name: s1.Name, Version: "v1",
					Attributes: []*commonpb.KeyValue{kv("scope.a", strV("z")), kv("scope.flag", boolV(true))}},
					SchemaUrl: "https://example.com/s1",
					Spans:     []*tracepb.Span{aWant, otherWant("d", tracepb.Span_SPAN_KIND_CONSUMER, tracepb.Status_STATUS_CODE_UNSET)}},
				{Scope: &commonpb.InstrumentationScope{Name: s2.Name, Version: "v2"},
					Spans: []*tracepb.Span{otherWant("b", tracepb.Span_SPAN_KIND_CLIENT, tracepb.Status_STATUS_CODE_OK), fWant}},
			},
		},
		{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", strV("other"))}},
			ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
				otherWant("c", tracepb.Span_SPAN_KIND_PRODUCER, tracepb.Status_STATUS_CODE_UNSET),
				otherWant("e", tracepb.Span_SPAN_KIND_INTERNAL, tracepb.Status_STATUS_CODE_UNSET)}}},
		},
	}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("decoded request (-want +got):\n%s", diff)
	}
}

// TestExporter_RandomAttributesDecode encodes spans with random attribute
// sets (every type, nested slices and maps, strings of every length class
// and unicode) and checks that the official types decode each value back.
func TestExporter_RandomAttributesDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Unix(1_700_000_000, 0)
	for i := range 50 {
		attrs := make([]attribute.KeyValue, rng.IntN(40))
		for j := range attrs {
			attrs[j] = attribute.KeyValue{Key: attribute.Key(fmt.Sprintf("k%d.%s", j, randString(rng))), Value: randValue(rng, 2)}
		}
		stub := tracetest.SpanStub{Name: randString(rng), StartTime: start, EndTime: start, Attributes: attrs,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{byte(i + 1)}})}
		got := exportDecoded(t, stub.Snapshot())
		spans := got.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()
		if len(spans) != 1 {
			t.Fatalf("case %d: %d spans decoded, want 1", i, len(spans))
		}
		want := make([]*commonpb.KeyValue, len(attrs))
		for j, a := range attrs {
			want[j] = kv(string(a.Key), otlpValue(a.Value))
		}
		if diff := cmp.Diff(want, spans[0].GetAttributes(), protocmp.Transform()); diff != "" {
			t.Fatalf("case %d: attributes (-want +got):\n%s", i, diff)
		}
		if spans[0].GetName() != stub.Name {
			t.Fatalf("case %d: name %q, want %q", i, spans[0].GetName(), stub.Name)
		}
	}
}

// randString is "" or up to 400 bytes, some of them not ASCII.
func randString(rng *rand.Rand) string {
	const alphabet = "ab c.-_/ü€𝄞\t\"\\"
	runes := []rune(alphabet)
	n := []int{0, 1, 10, 127, 128, 200}[rng.IntN(6)] + rng.IntN(3)
	var b strings.Builder
	for range n {
		b.WriteRune(runes[rng.IntN(len(runes))])
	}
	return b.String()
}

// randValue is a random attribute value; depth bounds the nesting of
// slices and maps.
func randValue(rng *rand.Rand, depth int) attribute.Value {
	kinds := 9
	if depth > 0 {
		kinds = 11
	}
	switch rng.IntN(kinds) {
	case 0:
		return attribute.BoolValue(rng.IntN(2) == 1)
	case 1:
		return attribute.Int64Value(int64(rng.Uint64()) >> rng.IntN(64))
	case 2:
		return attribute.Float64Value(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20)))
	case 3:
		return attribute.StringValue(randString(rng))
	case 4:
		return attribute.BoolSliceValue(randSlice(rng, func() bool { return rng.IntN(2) == 1 }))
	case 5:
		return attribute.Int64SliceValue(randSlice(rng, func() int64 { return int64(rng.Uint64()) }))
	case 6:
		return attribute.Float64SliceValue(randSlice(rng, rng.Float64))
	case 7:
		return attribute.StringSliceValue(randSlice(rng, func() string { return randString(rng) }))
	case 8:
		return attribute.ByteSliceValue([]byte(randString(rng)))
	case 9:
		return attribute.SliceValue(randSlice(rng, func() attribute.Value { return randValue(rng, depth-1) })...)
	default:
		return attribute.MapValue(randSlice(rng, func() attribute.KeyValue {
			return attribute.KeyValue{Key: attribute.Key(randString(rng)), Value: randValue(rng, depth-1)}
		})...)
	}
}

func randSlice[T any](rng *rand.Rand, one func() T) []T {
	out := make([]T, rng.IntN(6))
	for i := range out {
		out[i] = one()
	}
	return out
}

// otlpValue is v as OTLP's AnyValue: the mapping otlptracehttp's
// tracetransform made, written again here with the official types.
func otlpValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return boolV(v.AsBool())
	case attribute.INT64:
		return intV(v.AsInt64())
	case attribute.FLOAT64:
		return dblV(v.AsFloat64())
	case attribute.STRING:
		return strV(v.AsString())
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		return arrV(mapSlice(v.AsBoolSlice(), boolV)...)
	case attribute.INT64SLICE:
		return arrV(mapSlice(v.AsInt64Slice(), intV)...)
	case attribute.FLOAT64SLICE:
		return arrV(mapSlice(v.AsFloat64Slice(), dblV)...)
	case attribute.STRINGSLICE:
		return arrV(mapSlice(v.AsStringSlice(), strV)...)
	case attribute.SLICE:
		return arrV(mapSlice(v.AsSlice(), otlpValue)...)
	case attribute.MAP:
		kvs := mapSlice(v.AsMap(), func(a attribute.KeyValue) *commonpb.KeyValue { return kv(string(a.Key), otlpValue(a.Value)) })
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}
	}
	return &commonpb.AnyValue{}
}

func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}
