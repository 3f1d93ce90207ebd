package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The hot path writes its JSON by appending to a reused buffer: no
// reflection, no intermediate maps. These helpers are the whole encoder.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD, and U+2028/U+2029
// escaped (as encoding/json does). HTML characters are left as they are.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendStringOrNull appends s as a JSON string, or null when it is empty.
func appendStringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// appendInt appends n.
func appendInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }

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
	b = appendString(b, raw)
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
