package grade

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/detourhq/detour/internal/lazyregexp"
	"github.com/detourhq/detour/internal/yamlnode"
)

// Error is one problem of a suite file, printed as
// `FILE:LINE: task "ID": what is wrong and how to fix it`.
type Error struct {
	// File is the name given to Parse, or the path given to Load.
	File string
	// Line is 1-based; 0 when the problem has no one place.
	Line int
	// Task is the id of the task the problem is in; "" for the suite.
	Task string
	// Msg says what is wrong and what to write instead.
	Msg string
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Task != "" {
		fmt.Fprintf(&b, "task %q: ", e.Task)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// taskID is the form of a task id.
var taskID = lazyregexp.New(`^[a-z0-9][a-z0-9._-]*$`)

// suiteFields and taskFields are the keys a suite and a task may have.
var (
	suiteFields = []string{"name", "description", "tasks"}
	taskFields  = []string{"id", "lang", "category", "system", "prompt", "max_tokens", "grade", "good", "bad"}
)

// suiteParser turns a suite's YAML tree into a Suite, recording every
// problem it finds.
type suiteParser struct {
	name    string
	errs    []error
	anchors map[string]ast.Node
	// dec decodes grader options; it has seen the whole document, so it
	// resolves aliases to anchors anywhere in it.
	dec *yaml.Decoder
}

// parse is Parse without the recover.
func parse(name string, data []byte) (*Suite, error) {
	p := &suiteParser{name: name, anchors: map[string]ast.Node{}}
	if err := checkSize(data); err != nil {
		err.File = name
		return nil, err
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, p.yamlError(err, "", "YAML syntax: ", "; check the indentation and quoting here")
	}
	var docs []ast.Node
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d.Body)
		}
	}
	if len(docs) == 0 {
		return nil, &Error{File: name, Msg: "the suite is empty: write name: and tasks:"}
	}
	if len(docs) > 1 {
		return nil, &Error{File: name, Line: line(docs[1]), Msg: "a second YAML document: a suite is one; remove the '---'"}
	}
	body := docs[0]
	p.anchors = yamlnode.Anchors(body)
	if n := p.expandedSize(body); n > maxExpanded {
		return nil, &Error{File: name, Msg: fmt.Sprintf("aliases (*name) expand the suite past %d values; write the values out", maxExpanded)}
	}
	p.dec = yaml.NewDecoder(bytes.NewReader(nil), yaml.Strict())
	var whole any
	if err := p.dec.DecodeFromNode(body, &whole); err != nil {
		return nil, p.yamlError(err, "", "", "")
	}
	s := p.suite(body)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return s, nil
}

// suite reads the top-level mapping.
func (p *suiteParser) suite(body ast.Node) *Suite {
	s := &Suite{}
	fields, ok := p.fields(body, "", "", "field", suiteFields)
	if !ok {
		return nil
	}
	if _, ok := fields["name"]; !ok {
		p.errf(line(body), "", "name: missing; write name: and a name for the suite")
	}
	if f, ok := fields["name"]; ok {
		s.Name = p.str(f.val, "", "name")
		if strings.TrimSpace(s.Name) == "" {
			p.errf(line(f.key), "", "name: is empty; give the suite a name")
		}
	}
	if f, ok := fields["description"]; ok {
		s.Description = p.str(f.val, "", "description")
	}
	f, ok := fields["tasks"]
	if !ok {
		p.errf(line(body), "", "tasks: missing; write tasks: and a list of tasks")
		return s
	}
	items, ok := p.resolve(f.val).(*ast.SequenceNode)
	if !ok || len(items.Values) == 0 {
		p.errf(line(f.key), "", "tasks: expected a list of at least one task (- id: ...)")
		return s
	}
	seen := map[string]int{}
	for i, item := range items.Values {
		t := p.task(item, i)
		if t == nil {
			continue
		}
		if first, dup := seen[t.ID]; dup {
			p.errf(line(item), t.ID, "id: used twice (first at line %d); give each task its own id", first)
			continue
		}
		seen[t.ID] = line(item)
		s.Tasks = append(s.Tasks, t)
	}
	return s
}

// task reads item i of tasks:; nil when it has no usable id.
func (p *suiteParser) task(n ast.Node, i int) *Task {
	fields, ok := p.fields(n, "", fmt.Sprintf("tasks[%d]: ", i), "field", taskFields)
	if !ok {
		return nil
	}
	t := &Task{MaxTokens: DefaultMaxTokens}
	idf, ok := fields["id"]
	if !ok {
		p.errf(line(n), "", "tasks[%d]: id: missing; every task needs an id like arith-margin-en", i)
		return nil
	}
	t.ID = p.str(idf.val, "", "id")
	if !taskID().MatchString(t.ID) {
		p.errf(line(idf.key), "", "tasks[%d]: id %q: write lowercase letters, digits, '.', '_' and '-', starting with a letter or digit", i, t.ID)
		return nil
	}
	for _, sf := range []struct {
		key string
		dst *string
	}{{"lang", &t.Lang}, {"category", &t.Category}, {"system", &t.System}, {"prompt", &t.Prompt}} {
		if f, ok := fields[sf.key]; ok {
			*sf.dst = p.str(f.val, t.ID, sf.key)
		}
	}
	if strings.TrimSpace(t.Prompt) == "" {
		at := line(n)
		if f, ok := fields["prompt"]; ok {
			at = line(f.key)
		}
		p.errf(at, t.ID, "prompt: missing or empty; write the question the model answers")
	}
	if f, ok := fields["max_tokens"]; ok {
		var mt int
		if p.decode(f.val, &mt, t.ID, "max_tokens", nil) {
			switch {
			case mt < 0:
				p.errf(line(f.val), t.ID, "max_tokens: %d is negative; write a positive count, or leave it out for %d", mt, DefaultMaxTokens)
			case mt > 0:
				t.MaxTokens = mt
			}
		}
	}
	for _, ab := range []struct {
		key  string
		dst  *[]string
		what string
	}{{"good", &t.Good, "known-good"}, {"bad", &t.Bad, "known-bad"}} {
		f, ok := fields[ab.key]
		if !ok {
			p.errf(line(n), t.ID, "%s: missing; write at least one %s answer, so `detour eval --check` can test the graders", ab.key, ab.what)
			continue
		}
		if list, ok := p.strList(f.val, t.ID, ab.key); ok {
			*ab.dst = list
			if len(list) == 0 {
				p.errf(line(f.key), t.ID, "%s: empty; write at least one %s answer", ab.key, ab.what)
			}
		}
	}
	if f, ok := fields["grade"]; ok {
		p.grade(t, f)
	} else {
		p.errf(line(n), t.ID, "grade: missing; write one or more graders (graders: %s)", strings.Join(graderNames, ", "))
	}
	return t
}

// field is one key of a mapping and its value.
type field struct {
	key, val ast.Node
}

// fields returns the keys of the mapping n, reporting keys not in allowed
// as unknown `what`s (field, grader). prefix goes before messages.
func (p *suiteParser) fields(n ast.Node, task, prefix, what string, allowed []string) (map[string]field, bool) {
	m, ok := p.resolve(n).(*ast.MappingNode)
	if !ok {
		p.errf(line(n), task, "%sexpected a mapping (key: value), got %s", prefix, yamlnode.Describe(p.resolve(n)))
		return nil, false
	}
	out := map[string]field{}
	for _, mv := range m.Values {
		k := mv.Key.GetToken().Value
		if !contains(allowed, k) {
			p.errf(line(mv.Key), task, "%sunknown %s %q (%ss: %s)", prefix, what, k, what, strings.Join(allowed, ", "))
			continue
		}
		out[k] = field{key: mv.Key, val: mv.Value}
	}
	return out, true
}

// str reads a text value; any scalar reads as its source text.
func (p *suiteParser) str(n ast.Node, task, key string) string {
	switch v := p.resolve(n).(type) {
	case nil, *ast.NullNode:
		return ""
	case *ast.StringNode:
		return v.Value
	case *ast.LiteralNode:
		if v.Value != nil {
			return v.Value.Value
		}
		return ""
	case *ast.MappingNode, *ast.SequenceNode:
		p.errf(line(n), task, "%s: expected text, got %s", key, yamlnode.Describe(v))
		return ""
	default:
		return v.GetToken().Value
	}
}

// strList reads a list of texts; a single text reads as a list of one.
func (p *suiteParser) strList(n ast.Node, task, key string) ([]string, bool) {
	switch v := p.resolve(n).(type) {
	case nil, *ast.NullNode:
		return nil, true
	case *ast.SequenceNode:
		out := make([]string, 0, len(v.Values))
		for _, item := range v.Values {
			switch r := p.resolve(item).(type) {
			case *ast.MappingNode, *ast.SequenceNode, nil, *ast.NullNode:
				p.errf(line(item), task, "%s: expected a list of texts, got %s in it; quote it", key, yamlnode.Describe(r))
				return nil, false
			}
			out = append(out, p.str(item, task, key))
		}
		return out, true
	case *ast.MappingNode:
		p.errf(line(n), task, "%s: expected a text or a list of texts, got a mapping", key)
		return nil, false
	}
	return []string{p.str(n, task, key)}, true
}

// decode decodes n into dst strictly, recording a problem and returning
// false when it cannot. allowed lists the fields of a struct dst, for the
// message about an unknown one.
func (p *suiteParser) decode(n ast.Node, dst any, task, key string, allowed []string) bool {
	err := p.dec.DecodeFromNode(n, dst)
	if err == nil {
		return true
	}
	hint := ""
	var uf *yaml.UnknownFieldError
	if errors.As(err, &uf) && allowed != nil {
		hint = fmt.Sprintf(" (fields: %s)", strings.Join(allowed, ", "))
	}
	e := p.yamlError(err, task, key+": ", hint)
	if e.Line == 0 {
		e.Line = line(n)
	}
	p.errs = append(p.errs, e)
	return false
}

// yamlError turns an error of the YAML library into an *Error at its
// token.
func (p *suiteParser) yamlError(err error, task, prefix, suffix string) *Error {
	e := &Error{File: p.name, Task: task, Msg: prefix + firstLine(err.Error()) + suffix}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e.Msg = prefix + plainTypeError(ye.GetMessage()) + suffix
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line = tk.Position.Line
		}
	}
	return e
}

// typeErrorRE matches the YAML library's message for a value of the
// wrong type.
var typeErrorRE = lazyregexp.New(`cannot unmarshal (\S+) into Go (?:struct field (\S+) |value )of type (\S+)`)

// typeNames says in words what a Go type holds.
var typeNames = map[string]string{
	"int": "a whole number", "float64": "a number", "string": "text", "bool": "true or false",
	"[]string": "a list of texts", "map[string]string": "a mapping of names to texts",
	"*float64": "a number", "*bool": "true or false",
}

// plainTypeError rewrites a type error of the YAML library in words:
// "expected a number, got string".
func plainTypeError(msg string) string {
	m := typeErrorRE().FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	want, ok := typeNames[m[3]]
	if !ok {
		want = m[3]
	}
	got := m[1]
	if strings.HasPrefix(got, "map[") {
		got = "a mapping"
	} else if strings.HasPrefix(got, "[]") {
		got = "a list"
	}
	field := ""
	if m[2] != "" {
		field = strings.ToLower(m[2][strings.LastIndexByte(m[2], '.')+1:]) + ": "
	}
	return fmt.Sprintf("%sexpected %s, got %s", field, want, got)
}

// errf records a problem at line.
func (p *suiteParser) errf(line int, task, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.name, Line: line, Task: task, Msg: fmt.Sprintf(format, args...)})
}

// resolve looks through tags, anchors and aliases to the node that holds
// a value; nil means none.
func (p *suiteParser) resolve(n ast.Node) ast.Node { return yamlnode.Resolve(n, p.anchors, 32) }

// line returns the 1-based line where n begins; 0 if unknown.
func line(n ast.Node) int {
	switch v := n.(type) {
	case nil:
		return 0
	case *ast.MappingNode:
		if !v.IsFlowStyle && len(v.Values) > 0 {
			return line(v.Values[0])
		}
	case *ast.MappingValueNode:
		return line(v.Key)
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return 0
	}
	return tk.Position.Line
}

// finite reports whether f is a usable number.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// firstLine returns s up to its first line break.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
