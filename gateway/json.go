package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/detourhq/detour/internal/jsonw"
)

// The hot path writes its JSON by appending to a reused buffer: no
// reflection, no intermediate maps. These helpers are the whole encoder.

const hexDigits = "0123456789abcdef"

// appendStringOrNull appends s as a JSON string, or null when it is empty.
func appendStringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonw.String(b, s)
}

// appendInt appends n.
func appendInt(b []byte, n int) []byte { return jsonw.Int(b, n) }

// appendJSONObject appends raw when it is a JSON object, else "{}" (for
// arguments a model produced that are empty or not an object), else the
// text wrapped as {"arguments": "..."} so nothing the model said is lost.
func appendJSONObject(b []byte, raw string) []byte {
	t := bytes.TrimSpace([]byte(raw))
	switch {
	case len(t) == 0:
		return append(b, "{}"...)
	case t[0] == '{' && json.Valid(t):
		return appendCompact(b, t)
	}
	b = append(b, `{"arguments":`...)
	b = jsonw.String(b, raw)
	return append(b, '}')
}

// appendCompact appends the valid JSON raw without insignificant spaces,
// so it stays on one SSE data line.
func appendCompact(b []byte, raw []byte) []byte {
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return append(b, raw...)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return append(b, "{}"...)
	}
	return append(b, buf.Bytes()...)
}
