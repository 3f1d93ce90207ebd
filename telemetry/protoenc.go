package telemetry

import (
	"math"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP protobuf encoding of spans, written by hand with protowire so
// that the binary links no generated types and no protobuf runtime. It
// mirrors what otlptracehttp sent (its internal/tracetransform, v1.47.0):
// the same fields from a ReadOnlySpan, the same flags, kinds and status
// codes. Field numbers are those of opentelemetry-proto
// (collector/trace/v1/trace_service.proto, trace/v1/trace.proto,
// common/v1/common.proto, resource/v1/resource.proto), as the generated
// go.opentelemetry.io/proto/otlp v1.11.0 tags them; the tests decode what
// this writes with those generated types.

// ExportTraceServiceRequest.
const fieldRequestResourceSpans protowire.Number = 1

// ResourceSpans.
const (
	fieldRSResource   protowire.Number = 1
	fieldRSScopeSpans protowire.Number = 2
	fieldRSSchemaURL  protowire.Number = 3
)

// Resource.
const fieldResourceAttributes protowire.Number = 1

// ScopeSpans.
const (
	fieldSSScope     protowire.Number = 1
	fieldSSSpans     protowire.Number = 2
	fieldSSSchemaURL protowire.Number = 3
)

// InstrumentationScope.
const (
	fieldScopeName       protowire.Number = 1
	fieldScopeVersion    protowire.Number = 2
	fieldScopeAttributes protowire.Number = 3
)

// Span.
const (
	fieldSpanTraceID           protowire.Number = 1
	fieldSpanSpanID            protowire.Number = 2
	fieldSpanTraceState        protowire.Number = 3
	fieldSpanParentSpanID      protowire.Number = 4
	fieldSpanName              protowire.Number = 5
	fieldSpanKind              protowire.Number = 6
	fieldSpanStart             protowire.Number = 7 // fixed64
	fieldSpanEnd               protowire.Number = 8 // fixed64
	fieldSpanAttributes        protowire.Number = 9
	fieldSpanDroppedAttributes protowire.Number = 10
	fieldSpanEvents            protowire.Number = 11
	fieldSpanDroppedEvents     protowire.Number = 12
	fieldSpanLinks             protowire.Number = 13
	fieldSpanDroppedLinks      protowire.Number = 14
	fieldSpanStatus            protowire.Number = 15
	fieldSpanFlags             protowire.Number = 16 // fixed32
)

// Span.Event.
const (
	fieldEventTime              protowire.Number = 1 // fixed64
	fieldEventName              protowire.Number = 2
	fieldEventAttributes        protowire.Number = 3
	fieldEventDroppedAttributes protowire.Number = 4
)

// Span.Link.
const (
	fieldLinkTraceID           protowire.Number = 1
	fieldLinkSpanID            protowire.Number = 2
	fieldLinkTraceState        protowire.Number = 3
	fieldLinkAttributes        protowire.Number = 4
	fieldLinkDroppedAttributes protowire.Number = 5
	fieldLinkFlags             protowire.Number = 6 // fixed32
)

// Status.
const (
	fieldStatusMessage protowire.Number = 2
	fieldStatusCode    protowire.Number = 3
)

// KeyValue, KeyValueList and ArrayValue (whose values are field 1 both).
const (
	fieldKVKey    protowire.Number = 1
	fieldKVValue  protowire.Number = 2
	fieldListItem protowire.Number = 1
)

// AnyValue: a oneof, so a zero value is written too.
const (
	fieldAnyString protowire.Number = 1
	fieldAnyBool   protowire.Number = 2
	fieldAnyInt    protowire.Number = 3
	fieldAnyDouble protowire.Number = 4 // fixed64
	fieldAnyArray  protowire.Number = 5
	fieldAnyKVList protowire.Number = 6
	fieldAnyBytes  protowire.Number = 7
)

// The OTLP enums and flag bits.
const (
	statusCodeOk    = 1 // Status.STATUS_CODE_OK
	statusCodeError = 2 // Status.STATUS_CODE_ERROR

	// flagHasIsRemote says the span's (or link's) flags tell whether its
	// parent (or the linked span) is remote; flagIsRemote says it is.
	flagHasIsRemote = 0x100 // SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
	flagIsRemote    = 0x200 // SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
)

// scopeSpans are the spans of one instrumentation scope of one resource.
type scopeSpans struct {
	scope instrumentation.Scope
	spans []sdktrace.ReadOnlySpan
}

// resourceSpans are the spans of one resource, by scope.
type resourceSpans struct {
	key    attribute.Distinct
	res    *resource.Resource
	scopes []scopeSpans
}

// groupSpans groups spans by resource, then by scope, as OTLP nests them,
// each group in the order of its first span. A batch has one group or
// very few: a linear search is quicker than a map.
func groupSpans(spans []sdktrace.ReadOnlySpan) []resourceSpans {
	var groups []resourceSpans
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		key := res.Equivalent()
		i := slices.IndexFunc(groups, func(g resourceSpans) bool { return g.key == key })
		if i < 0 {
			groups = append(groups, resourceSpans{key: key, res: res})
			i = len(groups) - 1
		}
		g := &groups[i]
		scope := s.InstrumentationScope()
		j := slices.IndexFunc(g.scopes, func(ss scopeSpans) bool { return ss.scope == scope })
		if j < 0 {
			g.scopes = append(g.scopes, scopeSpans{scope: scope})
			j = len(g.scopes) - 1
		}
		g.scopes[j].spans = append(g.scopes[j].spans, s)
	}
	return groups
}

// appendRequest appends the ExportTraceServiceRequest of spans to b.
func appendRequest(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	w := &protoWriter{b: b}
	for _, g := range groupSpans(spans) {
		rs := w.open(fieldRequestResourceSpans)
		if g.res != nil {
			r := w.open(fieldRSResource)
			w.attrIter(fieldResourceAttributes, g.res.Iter())
			w.close(r)
		}
		for _, ss := range g.scopes {
			w.scopeSpans(ss)
		}
		w.string(fieldRSSchemaURL, g.res.SchemaURL())
		w.close(rs)
	}
	return w.b
}

// protoWriter appends protobuf to b.
type protoWriter struct{ b []byte }

// scopeSpans writes one ScopeSpans of a ResourceSpans.
func (w *protoWriter) scopeSpans(ss scopeSpans) {
	at := w.open(fieldRSScopeSpans)
	if ss.scope != (instrumentation.Scope{}) {
		sc := w.open(fieldSSScope)
		w.string(fieldScopeName, ss.scope.Name)
		w.string(fieldScopeVersion, ss.scope.Version)
		w.attrIter(fieldScopeAttributes, ss.scope.Attributes.Iter())
		w.close(sc)
	}
	for _, s := range ss.spans {
		w.span(s)
	}
	w.string(fieldSSSchemaURL, ss.scope.SchemaURL)
	w.close(at)
}

// span writes one Span of a ScopeSpans.
func (w *protoWriter) span(s sdktrace.ReadOnlySpan) {
	at := w.open(fieldSSSpans)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	w.bytes(fieldSpanTraceID, tid[:])
	w.bytes(fieldSpanSpanID, sid[:])
	w.string(fieldSpanTraceState, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		w.bytes(fieldSpanParentSpanID, psid[:])
	}
	w.string(fieldSpanName, s.Name())
	w.varint(fieldSpanKind, spanKind(s.SpanKind()))
	w.fixed64(fieldSpanStart, unixNano(s.StartTime().UnixNano()))
	w.fixed64(fieldSpanEnd, unixNano(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		w.keyValue(fieldSpanAttributes, kv)
	}
	w.varint(fieldSpanDroppedAttributes, clampUint32(s.DroppedAttributes()))
	for _, e := range s.Events() {
		ev := w.open(fieldSpanEvents)
		w.fixed64(fieldEventTime, unixNano(e.Time.UnixNano()))
		w.string(fieldEventName, e.Name)
		for _, kv := range e.Attributes {
			w.keyValue(fieldEventAttributes, kv)
		}
		w.varint(fieldEventDroppedAttributes, clampUint32(e.DroppedAttributeCount))
		w.close(ev)
	}
	w.varint(fieldSpanDroppedEvents, clampUint32(s.DroppedEvents()))
	for _, l := range s.Links() {
		lk := w.open(fieldSpanLinks)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		w.bytes(fieldLinkTraceID, ltid[:])
		w.bytes(fieldLinkSpanID, lsid[:])
		// otlptracehttp left a link's trace state out; the schema has it.
		w.string(fieldLinkTraceState, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			w.keyValue(fieldLinkAttributes, kv)
		}
		w.varint(fieldLinkDroppedAttributes, clampUint32(l.DroppedAttributeCount))
		w.fixed32(fieldLinkFlags, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		w.close(lk)
	}
	w.varint(fieldSpanDroppedLinks, clampUint32(s.DroppedLinks()))
	// The status is always there, as otlptracehttp sent it: Unset with no
	// message is an empty message.
	st := s.Status()
	stAt := w.open(fieldSpanStatus)
	w.string(fieldStatusMessage, st.Description)
	w.varint(fieldStatusCode, statusCode(st.Code))
	w.close(stAt)
	w.fixed32(fieldSpanFlags, spanFlags(sc.TraceFlags(), parent))
	w.close(at)
}

// spanFlags are OTLP's span (or link) flags: the W3C trace flags in the
// low byte, and that whether ctx is remote is known, and whether it is.
func spanFlags(tf trace.TraceFlags, ctx trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if ctx.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// spanKind maps a span kind to OTLP's Span.SpanKind: the same numbers,
// with anything else as SPAN_KIND_UNSPECIFIED (0).
func spanKind(k trace.SpanKind) uint64 {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0
}

// statusCode maps a status code to OTLP's Status.StatusCode: Unset 0, Ok
// 1, Error 2.
func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return statusCodeOk
	case codes.Error:
		return statusCodeError
	}
	return 0
}

// unixNano is a time in Unix nanoseconds, with times before 1970 (and
// the zero time) as 0.
func unixNano(ns int64) uint64 { return uint64(max(0, ns)) }

// clampUint32 is a count as OTLP's uint32, negatives as 0.
func clampUint32(v int) uint64 { return uint64(min(max(v, 0), math.MaxUint32)) }

// attrIter writes the attributes of it as the repeated KeyValue field num.
func (w *protoWriter) attrIter(num protowire.Number, it attribute.Iterator) {
	for it.Next() {
		w.keyValue(num, it.Attribute())
	}
}

// keyValue writes kv as the KeyValue field num.
func (w *protoWriter) keyValue(num protowire.Number, kv attribute.KeyValue) {
	at := w.open(num)
	w.string(fieldKVKey, string(kv.Key))
	w.anyValue(fieldKVValue, kv.Value)
	w.close(at)
}

// anyValue writes v as the AnyValue field num: the slices as an
// array_value, a map as a kvlist_value, an empty value as an empty
// AnyValue, anything unknown as the string "INVALID" (as otlptracehttp).
func (w *protoWriter) anyValue(num protowire.Number, v attribute.Value) {
	at := w.open(num)
	switch v.Type() {
	case attribute.BOOL:
		w.oneofBool(v.AsBool())
	case attribute.INT64:
		w.oneofInt(v.AsInt64())
	case attribute.FLOAT64:
		w.oneofDouble(v.AsFloat64())
	case attribute.STRING:
		w.oneofString(v.AsString())
	case attribute.BYTESLICE:
		w.b = protowire.AppendTag(w.b, fieldAnyBytes, protowire.BytesType)
		w.b = protowire.AppendBytes(w.b, v.AsByteSlice())
	case attribute.BOOLSLICE:
		writeArray(w, v.AsBoolSlice(), (*protoWriter).oneofBool)
	case attribute.INT64SLICE:
		writeArray(w, v.AsInt64Slice(), (*protoWriter).oneofInt)
	case attribute.FLOAT64SLICE:
		writeArray(w, v.AsFloat64Slice(), (*protoWriter).oneofDouble)
	case attribute.STRINGSLICE:
		writeArray(w, v.AsStringSlice(), (*protoWriter).oneofString)
	case attribute.SLICE:
		arr := w.open(fieldAnyArray)
		for _, e := range v.AsSlice() {
			w.anyValue(fieldListItem, e)
		}
		w.close(arr)
	case attribute.MAP:
		kvl := w.open(fieldAnyKVList)
		for _, kv := range v.AsMap() {
			w.keyValue(fieldListItem, kv)
		}
		w.close(kvl)
	case attribute.EMPTY:
	default:
		w.oneofString("INVALID")
	}
	w.close(at)
}

// writeArray writes vals as the array_value of an AnyValue, each an
// AnyValue whose member one writes.
func writeArray[T any](w *protoWriter, vals []T, one func(*protoWriter, T)) {
	arr := w.open(fieldAnyArray)
	for _, e := range vals {
		at := w.open(fieldListItem)
		one(w, e)
		w.close(at)
	}
	w.close(arr)
}

// The members of AnyValue's oneof: written even when zero.

func (w *protoWriter) oneofBool(v bool) {
	w.b = protowire.AppendVarint(protowire.AppendTag(w.b, fieldAnyBool, protowire.VarintType), protowire.EncodeBool(v))
}

func (w *protoWriter) oneofInt(v int64) {
	w.b = protowire.AppendVarint(protowire.AppendTag(w.b, fieldAnyInt, protowire.VarintType), uint64(v))
}

func (w *protoWriter) oneofDouble(v float64) {
	w.b = protowire.AppendFixed64(protowire.AppendTag(w.b, fieldAnyDouble, protowire.Fixed64Type), math.Float64bits(v))
}

func (w *protoWriter) oneofString(v string) {
	w.b = protowire.AppendString(protowire.AppendTag(w.b, fieldAnyString, protowire.BytesType), v)
}

// Scalar fields of proto3: a zero value is left out.

func (w *protoWriter) string(num protowire.Number, s string) {
	if s != "" {
		w.b = protowire.AppendString(protowire.AppendTag(w.b, num, protowire.BytesType), s)
	}
}

func (w *protoWriter) bytes(num protowire.Number, v []byte) {
	if len(v) != 0 {
		w.b = protowire.AppendBytes(protowire.AppendTag(w.b, num, protowire.BytesType), v)
	}
}

func (w *protoWriter) varint(num protowire.Number, v uint64) {
	if v != 0 {
		w.b = protowire.AppendVarint(protowire.AppendTag(w.b, num, protowire.VarintType), v)
	}
}

func (w *protoWriter) fixed64(num protowire.Number, v uint64) {
	if v != 0 {
		w.b = protowire.AppendFixed64(protowire.AppendTag(w.b, num, protowire.Fixed64Type), v)
	}
}

func (w *protoWriter) fixed32(num protowire.Number, v uint32) {
	if v != 0 {
		w.b = protowire.AppendFixed32(protowire.AppendTag(w.b, num, protowire.Fixed32Type), v)
	}
}

// open writes the tag of the message field num and one byte for its
// length, and returns where the message starts; close writes the length
// once the message is in. Most messages (attributes, values) are shorter
// than 128 bytes and fit the one byte; a longer one moves up by the bytes
// its length needs more, once per level of nesting.
func (w *protoWriter) open(num protowire.Number) int {
	w.b = append(protowire.AppendTag(w.b, num, protowire.BytesType), 0)
	return len(w.b)
}

// close writes the length of the message that starts at start (from open)
// and ends at the end of what is written.
func (w *protoWriter) close(start int) {
	n := len(w.b) - start
	if n < 0x80 {
		w.b[start-1] = byte(n)
		return
	}
	k := protowire.SizeVarint(uint64(n))
	w.b = slices.Grow(w.b, k-1)[:len(w.b)+k-1]
	copy(w.b[start+k-1:], w.b[start:start+n])
	// w.b has the room: the varint is written in place over w.b[start-1:][:k].
	protowire.AppendVarint(w.b[start-1:start-1], uint64(n))
}
