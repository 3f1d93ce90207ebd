// Package yamledit sets one list in a YAML document and keeps every other
// byte: comments, blank lines, key order, quoting and flow or block style
// stay as written; only the list's own lines (or, for a list that was not
// there, the lines that add it) change. It is how `detour eval
// --write-route` writes a route's chain into a config file.
//
//	out, err := yamledit.SetList(src, []string{"routes", "default", "chain"},
//		[]yamledit.Item{{Value: "groq/llama-3.3-70b-versatile", Comment: "free"}})
package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// ErrShape means the document cannot take the list where asked without
// rewriting more than the list: a value on the path that is not a
// mapping, an anchor or alias (another place may share it), a tag, a
// second document. The message names the place.
var ErrShape = errors.New("yamledit: cannot set the list in place")

// Item is one entry of the list.
type Item struct {
	// Value is the entry, a string; it is written plain when YAML reads
	// it back as that same string, else double-quoted.
	Value string
	// Comment, when set, follows the entry on its line ("  # ...") in a
	// block list, on one line; a flow list ([a, b]) has no room for it.
	Comment string
}

// defaultStep is the indentation of a new level when the document shows
// none to copy.
const defaultStep = 2

// SetList returns src with the list at path (the keys of nested mappings
// from the top: "routes", "default", "chain") set to items. An existing
// list keeps its style: a block list is rewritten line for line at its own
// indentation (comments between its entries go with it, the lines before
// and after stay), a flow list ([a, b]) stays a flow list. A missing key
// is added after the last entry of its mapping, at its siblings'
// indentation, or a missing top-level key at the end. Nothing else
// changes. An error wrapping ErrShape says why the list cannot be set in
// place; src is never changed.
func SetList(src []byte, path []string, items []Item) ([]byte, error) {
	if len(path) == 0 {
		return nil, fmt.Errorf("%w: no path", ErrShape)
	}
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, fmt.Errorf("yamledit: %w", err)
	}
	d := newDoc(src)
	var body ast.Node
	switch n := len(f.Docs); {
	case n > 1:
		return nil, fmt.Errorf("%w: the file holds %d YAML documents", ErrShape, n)
	case n == 1:
		body = f.Docs[0].Body
	}
	e := editor{d: d, items: items, step: defaultStep}
	if body == nil {
		return e.appendTop(path), nil
	}
	if err := e.set(body, path, nil, -1); err != nil {
		return nil, err
	}
	return e.out, nil
}

// editor carries one SetList.
type editor struct {
	d     *doc
	items []Item
	step  int
	out   []byte
}

// replace sets e.out to the source with [from, to) replaced by text.
func (e *editor) replace(from, to int, text string) {
	src := e.d.src
	e.out = make([]byte, 0, len(src)+len(text))
	e.out = append(append(append(e.out, src[:from]...), text...), src[to:]...)
}

// appendTop adds path at the end of a document with no mapping yet.
func (e *editor) appendTop(path []string) []byte {
	src := e.d.src
	text := e.block(path, 0)
	if len(src) > 0 && src[len(src)-1] != '\n' {
		text = "\n" + text
	}
	e.replace(len(src), len(src), text)
	return e.out
}

// set sets the list at path in the mapping n, reached through done;
// parentCol is the column of the key n is the value of (-1 at the top).
func (e *editor) set(n ast.Node, path, done []string, parentCol int) error {
	where := strings.Join(done, ".")
	if where == "" {
		where = "the top level"
	}
	var m *ast.MappingNode
	switch v := n.(type) {
	case *ast.MappingNode:
		m = v
	case *ast.MappingValueNode:
		m = &ast.MappingNode{Values: []*ast.MappingValueNode{v}}
	default:
		return fmt.Errorf("%w: %s is %s, not a mapping", ErrShape, where, describe(n))
	}
	if m.IsFlowStyle {
		return e.setFlow(m, path, done)
	}
	col := m.Values[0].Key.GetToken().Position.Column
	if parentCol > 0 && col > parentCol {
		e.step = col - parentCol
	}
	for _, mv := range m.Values {
		if keyOf(mv) != path[0] {
			continue
		}
		keyLine := mv.Key.GetToken().Position.Line
		here := append(append([]string(nil), done...), path[0])
		switch v := mv.Value.(type) {
		case nil, *ast.NullNode:
			if from, to, ok := e.nullToken(v, keyLine); ok {
				e.replace(from, to, e.flow(path[1:]))
				return nil
			}
			// Nothing after the key: the rest goes on the lines below it.
			at := e.d.lineEnd(keyLine)
			e.replace(at, at, "\n"+strings.TrimSuffix(e.block(path[1:], col-1+e.step), "\n"))
			return nil
		case *ast.SequenceNode:
			if len(path) > 1 {
				return fmt.Errorf("%w: %s is a list, not a mapping", ErrShape, strings.Join(here, "."))
			}
			return e.setList(v)
		case *ast.MappingNode, *ast.MappingValueNode:
			if len(path) == 1 {
				return fmt.Errorf("%w: %s is a mapping, not a list", ErrShape, strings.Join(here, "."))
			}
			return e.set(v, path[1:], here, col)
		default:
			return fmt.Errorf("%w: %s is %s: set it by hand", ErrShape, strings.Join(here, "."), describe(v))
		}
	}
	// Not there: add it after the mapping's last line.
	first := m.Values[0].Key.GetToken().Position.Line
	last := e.d.blockEnd(first, col-1, true)
	at := e.d.lineEnd(last)
	if at < len(e.d.src) {
		e.replace(at+1, at+1, e.block(path, col-1))
	} else {
		e.replace(at, at, "\n"+strings.TrimSuffix(e.block(path, col-1), "\n"))
	}
	return nil
}

// setList replaces the list seq with the items, in its own style.
func (e *editor) setList(seq *ast.SequenceNode) error {
	if seq.IsFlowStyle {
		if seq.Start == nil || seq.End == nil {
			return fmt.Errorf("%w: a flow list without its brackets", ErrShape)
		}
		e.replace(e.d.offset(seq.Start.Position), e.d.offset(seq.End.Position)+1, e.flowList())
		return nil
	}
	if seq.Start == nil {
		return fmt.Errorf("%w: a block list without its first entry", ErrShape)
	}
	line, col := seq.Start.Position.Line, seq.Start.Position.Column
	if strings.TrimSpace(e.d.line(line)[:e.d.colOffset(line, col)-e.d.lines[line-1]]) != "" {
		return fmt.Errorf("%w: the list at line %d does not start its line", ErrShape, line)
	}
	last := e.d.blockEnd(line, col-1, false)
	end := e.d.lineEnd(last)
	if end < len(e.d.src) {
		end++ // its newline
	}
	text := e.blockList(col - 1)
	if end == len(e.d.src) && (len(e.d.src) == 0 || e.d.src[len(e.d.src)-1] != '\n') {
		text = strings.TrimSuffix(text, "\n")
	}
	e.replace(e.d.lines[line-1], end, text)
	return nil
}

// setFlow sets the list at path in the flow mapping m ({a: [x], b: 1}).
func (e *editor) setFlow(m *ast.MappingNode, path, done []string) error {
	for _, mv := range m.Values {
		if keyOf(mv) != path[0] {
			continue
		}
		here := append(append([]string(nil), done...), path[0])
		switch v := mv.Value.(type) {
		case *ast.SequenceNode:
			if len(path) > 1 {
				return fmt.Errorf("%w: %s is a list, not a mapping", ErrShape, strings.Join(here, "."))
			}
			return e.setList(v)
		case *ast.MappingNode:
			if len(path) == 1 {
				return fmt.Errorf("%w: %s is a mapping, not a list", ErrShape, strings.Join(here, "."))
			}
			return e.set(v, path[1:], here, -1)
		case *ast.NullNode:
			if from, to, ok := e.nullToken(v, mv.Key.GetToken().Position.Line); ok {
				e.replace(from, to, e.flow(path[1:]))
				return nil
			}
		}
		return fmt.Errorf("%w: %s is %s: set it by hand", ErrShape, strings.Join(here, "."), describe(mv.Value))
	}
	if m.End == nil {
		return fmt.Errorf("%w: a flow mapping without its closing brace", ErrShape)
	}
	text := scalar(path[0]) + ": " + e.flow(path[1:])
	if len(m.Values) > 0 {
		text = ", " + text
	}
	at := e.d.offset(m.End.Position)
	e.replace(at, at, text)
	return nil
}

// nullToken finds a written null (~, null) on the key's line: the bytes
// to replace. ok is false when the value is simply absent.
func (e *editor) nullToken(n ast.Node, keyLine int) (from, to int, ok bool) {
	if n == nil {
		return 0, 0, false
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil || tk.Position.Line != keyLine {
		return 0, 0, false
	}
	from = e.d.offset(tk.Position)
	for _, w := range []string{tk.Origin, tk.Value} {
		w = strings.TrimSpace(w)
		if w != "" && bytes.HasPrefix(e.d.src[from:], []byte(w)) {
			return from, from + len(w), true
		}
	}
	return 0, 0, false
}

// block renders path as nested block mappings at indent, the list last.
func (e *editor) block(path []string, indent int) string {
	var b strings.Builder
	for i, k := range path {
		fmt.Fprintf(&b, "%s%s:\n", strings.Repeat(" ", indent+i*e.step), scalar(k))
	}
	b.WriteString(e.blockList(indent + len(path)*e.step))
	return b.String()
}

// blockList renders the items as a block list at indent, each line ended.
func (e *editor) blockList(indent int) string {
	var b strings.Builder
	for _, it := range e.items {
		fmt.Fprintf(&b, "%s- %s", strings.Repeat(" ", indent), scalar(it.Value))
		if c := strings.Join(strings.Fields(it.Comment), " "); c != "" {
			b.WriteString("  # " + c)
		}
		b.WriteByte('\n')
	}
	if len(e.items) == 0 {
		fmt.Fprintf(&b, "%s[]\n", strings.Repeat(" ", indent))
	}
	return b.String()
}

// flow renders path as nested flow mappings around the list; the list
// alone for an empty path.
func (e *editor) flow(path []string) string {
	s := e.flowList()
	for i := len(path) - 1; i >= 0; i-- {
		s = "{" + scalar(path[i]) + ": " + s + "}"
	}
	return s
}

// flowList renders the items as a flow list, without comments.
func (e *editor) flowList() string {
	vs := make([]string, len(e.items))
	for i, it := range e.items {
		vs[i] = scalar(it.Value)
	}
	return "[" + strings.Join(vs, ", ") + "]"
}

// plain matches what YAML reads back as the same string in block and in
// flow context: no indicator, no ": ", no " #", no flow punctuation.
var plain = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./@+=~-]*$`)

// scalar writes s as a YAML string: plain when that reads back as s,
// else double-quoted.
func scalar(s string) string {
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return strconv.Quote(s)
	}
	if plain.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// keyOf is a mapping entry's key as a string; "" for a key that is not a
// scalar.
func keyOf(mv *ast.MappingValueNode) string {
	switch k := mv.Key.(type) {
	case *ast.StringNode:
		return k.Value
	case *ast.MappingKeyNode:
		if s, ok := k.Value.(*ast.StringNode); ok {
			return s.Value
		}
	}
	if tk := mv.Key.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

// describe names what n is, for messages.
func describe(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "empty"
	case *ast.AnchorNode:
		return "an anchor (&name), which other places may share"
	case *ast.AliasNode:
		return "an alias (*name) of another place"
	case *ast.TagNode:
		return "a tagged value"
	case *ast.SequenceNode:
		return "a list"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	}
	return "a single value"
}

// doc is the source and where its lines start.
type doc struct {
	src   []byte
	lines []int // byte offset of each line's start; lines[0] is line 1
}

func newDoc(src []byte) *doc {
	d := &doc{src: src, lines: []int{0}}
	for i, c := range src {
		if c == '\n' {
			d.lines = append(d.lines, i+1)
		}
	}
	return d
}

// lineEnd is the offset of line's newline (or the end of the source).
func (d *doc) lineEnd(line int) int {
	if line < len(d.lines) {
		return d.lines[line] - 1
	}
	return len(d.src)
}

// line is line's text without its newline.
func (d *doc) line(line int) string {
	return string(d.src[d.lines[line-1]:d.lineEnd(line)])
}

// colOffset is the byte offset of the 1-based column col (in characters,
// as the parser counts) of line, at most the line's end.
func (d *doc) colOffset(line, col int) int {
	at, end := d.lines[line-1], d.lineEnd(line)
	for c := 1; c < col && at < end; c++ {
		_, n := utf8.DecodeRune(d.src[at:end])
		at += n
	}
	return at
}

// offset is the byte offset of a token's position.
func (d *doc) offset(p *token.Position) int { return d.colOffset(p.Line, p.Column) }

// blockEnd is the last line of the block that starts at line start and
// whose lines are indented more than indent: lines at exactly indent
// belong too when they are list entries ("- "), or with sibling set, any
// line (the sibling keys of a mapping). Blank and comment lines belong
// only when a line of the block follows them, so the comments above the
// next key stay with it. A document marker (---, ...) ends every block.
func (d *doc) blockEnd(start, indent int, sibling bool) int {
	last := start
	for l := start + 1; l <= len(d.lines); l++ {
		s := d.line(l)
		t := strings.TrimLeft(s, " ")
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
			break
		}
		in := len(s) - len(t)
		entry := t == "-" || strings.HasPrefix(t, "- ")
		if in > indent || (in == indent && (sibling || entry)) {
			last = l
			continue
		}
		break
	}
	return last
}
