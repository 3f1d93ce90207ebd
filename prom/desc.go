package prom

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// desc describes a metric family: its name, help, type and label names.
type desc struct {
	name, help, typ string
	labels          []string // as declared: the order of With's values
	order           []int    // indexes into labels sorted by name: the output order
	// extra is the label the type adds to some samples, after the
	// family's own: "le" for a histogram, "quantile" for a summary, else "".
	extra string
}

// newDesc checks name and labels and returns their desc. It panics on an
// invalid metric or label name, a label given twice, or a label named
// reserved (if not ""), the label the type adds to some samples.
func newDesc(name, help, typ string, labels []string, reserved string) *desc {
	if !validMetricName(name) {
		panic(fmt.Sprintf("prom: invalid metric name %q: want [a-zA-Z_:][a-zA-Z0-9_:]*", name))
	}
	d := &desc{name: name, help: help, typ: typ, labels: slices.Clone(labels), order: make([]int, len(labels)), extra: reserved}
	for i, l := range labels {
		switch {
		case !validLabelName(l):
			panic(fmt.Sprintf("prom: %s: invalid label name %q: want [a-zA-Z_][a-zA-Z0-9_]*, not starting with __", name, l))
		case l == reserved:
			panic(fmt.Sprintf("prom: %s: label name %q is reserved for a %s", name, l, typ))
		case slices.Contains(labels[:i], l):
			panic(fmt.Sprintf("prom: %s: label %q given twice", name, l))
		}
		d.order[i] = i
	}
	slices.SortFunc(d.order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return d
}

// validMetricName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]*.
func validMetricName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// validLabelName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]* and does
// not start with "__", which Prometheus keeps for itself.
func validLabelName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != "" && !strings.HasPrefix(s, "__")
}

// checkValues panics unless values fit d's labels: one per label, each
// valid UTF-8, as the text format requires.
func (d *desc) checkValues(values []string) {
	if len(values) != len(d.labels) {
		panic(fmt.Sprintf("prom: %s: %d label values for %d labels %q", d.name, len(values), len(d.labels), d.labels))
	}
	for i, v := range values {
		if !utf8.ValidString(v) {
			panic(fmt.Sprintf("prom: %s: label %s: value %q is not valid UTF-8", d.name, d.labels[i], v))
		}
	}
}

// compare orders two series of d by their label values in output order.
func (d *desc) compare(a, b []string) int {
	for _, i := range d.order {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// appendHeader appends the family's HELP and TYPE lines.
func (d *desc) appendHeader(b []byte) []byte {
	b = append(b, "# HELP "...)
	b = append(b, d.name...)
	b = append(b, ' ')
	b = appendHelp(b, d.help)
	b = append(b, "\n# TYPE "...)
	b = append(b, d.name...)
	b = append(b, ' ')
	b = append(b, d.typ...)
	return append(b, '\n')
}

// appendName appends a sample's name (the family's plus suffix) and labels
// in output order, then the type's extra label with value ev (le="0.5",
// quantile="0.5") if ev is not "", then the space before the value.
func (d *desc) appendName(b []byte, suffix string, values []string, ev string) []byte {
	b = append(b, d.name...)
	b = append(b, suffix...)
	if len(d.order) > 0 || ev != "" {
		b = append(b, '{')
		for n, i := range d.order {
			if n > 0 {
				b = append(b, ',')
			}
			b = append(b, d.labels[i]...)
			b = append(b, '=')
			b = appendLabelValue(b, values[i])
		}
		if ev != "" {
			if len(d.order) > 0 {
				b = append(b, ',')
			}
			b = append(b, d.extra...)
			b = append(b, '=')
			b = appendLabelValue(b, ev)
		}
		b = append(b, '}')
	}
	return append(b, ' ')
}
