package prom

import (
	"math"
	"strconv"
)

// ContentType is the media type of the text exposition format 0.0.4, what
// Registry.Handler answers with.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// appendFloat appends v as the text format spells it: +Inf, -Inf, NaN, or
// the shortest representation that parses back to v.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// formatFloat is appendFloat to a string.
func formatFloat(v float64) string { return string(appendFloat(nil, v)) }

// appendHelp appends help with backslash and newline escaped, as a HELP
// line wants.
func appendHelp(b []byte, help string) []byte {
	for i := 0; i < len(help); i++ {
		switch c := help[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendLabelValue appends v quoted, with backslash, double quote and
// newline escaped.
func appendLabelValue(b []byte, v string) []byte {
	b = append(b, '"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
