package grade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// maxJSONStarts bounds the '{' and '[' FindJSON tries as the start of a
// value, so a long answer of brackets costs little.
const maxJSONStarts = 64

// jsonGrader passes an answer holding a JSON value that matches a schema
// and has the given fields.
type jsonGrader struct {
	// schemaDoc is the schema as plain data (nil: none); schema is it
	// compiled.
	schemaDoc any
	schema    *compiledSchema
	// fields maps a dot path ("items.0.name") to its value, decoded from
	// JSON so numbers are float64.
	fields map[string]any
}

var jsonFields = []string{"schema", "fields"}

func parseJSON(p *suiteParser, t *Task, n ast.Node) grader {
	var raw struct {
		Schema any            `yaml:"schema"`
		Fields map[string]any `yaml:"fields"`
	}
	if !p.decode(n, &raw, t.ID, "grade: json", jsonFields) {
		return nil
	}
	bad := func(format string, args ...any) grader {
		p.errf(line(n), t.ID, "grade: json: "+format, args...)
		return nil
	}
	if raw.Schema == nil && len(raw.Fields) == 0 {
		return bad("write schema: (a JSON schema), fields: (path: value), or both")
	}
	g := &jsonGrader{fields: map[string]any{}}
	if raw.Schema != nil {
		b, err := json.Marshal(raw.Schema)
		if err != nil {
			return bad("schema: cannot be written as JSON: %v", err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return bad("schema: %v", err)
		}
		switch doc.(type) {
		case map[string]any, bool:
		default:
			return bad("schema: expected a JSON schema (a mapping like {type: object}), got %s", describeJSON(doc))
		}
		if g.schema, err = compileSchema(doc); err != nil {
			var xe *externalRefError
			if errors.As(err, &xe) {
				return bad("schema: refers to %q; a suite's schema must be whole in the file (put shared parts under $defs)", xe.ref)
			}
			return bad("schema: %s", oneLine(err.Error(), 160))
		}
		_ = json.Unmarshal(b, &g.schemaDoc)
	}
	for path, v := range raw.Fields {
		if path == "" || strings.Contains("."+path+".", "..") {
			return bad("fields: %q is not a path; write keys and list indexes joined by dots, like items.0.name", path)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return bad("fields: %s: cannot be written as JSON: %v", path, err)
		}
		var plain any
		_ = json.Unmarshal(b, &plain)
		g.fields[path] = plain
	}
	return g
}

func (g *jsonGrader) kind() string { return "json" }

func (g *jsonGrader) canonical() any {
	return map[string]any{"schema": g.schemaDoc, "fields": g.fields}
}

func (g *jsonGrader) grade(_ context.Context, _ Env, t *Task, answer string) (Verdict, error) {
	raw, why := FindJSON(t.input(g, answer))
	if why != "" {
		return Verdict{Why: why}, nil
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return Verdict{Why: "the JSON does not parse: " + err.Error()}, nil
	}
	if g.schema != nil {
		if why := g.schema.check(raw); why != "" {
			return Verdict{Why: "the JSON " + why}, nil
		}
	}
	paths := make([]string, 0, len(g.fields))
	for p := range g.fields {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		got, ok := lookup(doc, p)
		if !ok {
			return Verdict{Why: fmt.Sprintf("field %s: missing", p)}, nil
		}
		got = plainJSON(got)
		if !reflect.DeepEqual(got, g.fields[p]) {
			return Verdict{Why: fmt.Sprintf("field %s: got %s, want %s", p, showJSON(got), showJSON(g.fields[p]))}, nil
		}
	}
	return Verdict{Pass: true}, nil
}

// FindJSON returns the JSON value of an answer: the body of the last
// ```json fence, or else of the last fence holding an object or array,
// or else the first '{' or '[' of the answer that begins a whole JSON
// value (text after it is ignored). why says what is wrong when there is
// none.
func FindJSON(answer string) (raw []byte, why string) {
	fs := fences(answer)
	pick := -1
	for i, f := range fs {
		if f.lang == "json" {
			pick = i
		}
	}
	if pick < 0 {
		for i, f := range fs {
			if b := strings.TrimSpace(f.body); strings.HasPrefix(b, "{") || strings.HasPrefix(b, "[") {
				pick = i
			}
		}
	}
	if pick >= 0 {
		body := strings.TrimSpace(fs[pick].body)
		if !json.Valid([]byte(body)) {
			var v any
			err := json.Unmarshal([]byte(body), &v)
			return nil, "the JSON in the last code block does not parse: " + errText(err)
		}
		return []byte(body), ""
	}
	tries := 0
	for i := 0; i < len(answer) && tries < maxJSONStarts; i++ {
		if c := answer[i]; c != '{' && c != '[' {
			continue
		}
		tries++
		var v json.RawMessage
		if err := json.NewDecoder(strings.NewReader(answer[i:])).Decode(&v); err == nil {
			return v, ""
		}
	}
	if tries > 0 {
		return nil, "the JSON in the answer does not parse"
	}
	return nil, "no JSON in the answer"
}

// errText is err's message, or "" for nil.
func errText(err error) string {
	if err == nil {
		return "invalid JSON"
	}
	return err.Error()
}

// lookup follows a dot path through objects and arrays.
func lookup(v any, path string) (any, bool) {
	for _, seg := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// plainJSON turns json.Number values into float64, for comparison.
func plainJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plainJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainJSON(e)
		}
		return out
	}
	return v
}

// showJSON writes v as JSON for a message, cut short.
func showJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return oneLine(string(b), 60)
}

// describeJSON names the kind of a JSON value.
func describeJSON(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "text"
	case nil:
		return "null"
	}
	return "a number"
}
