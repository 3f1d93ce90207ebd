package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/detourhq/detour/internal/yamlnode"
	"github.com/detourhq/detour/router"
)

// maxAliasDepth bounds alias and merge-key chains, so no document loops.
const maxAliasDepth = 16

// maxMerges bounds the merge keys expanded in one document.
const maxMerges = 1000

// decoder turns a YAML AST into a Config, recording every problem and the
// position of every field it reads.
type decoder struct {
	c    *Config
	errs Errors
	// bad holds the fields whose value could not be read; validation does
	// not report them again.
	bad     map[string]bool
	anchors map[string]ast.Node
	// depth is the current merge-key nesting; merges counts every merge
	// expanded, so a document of self-referring merges cannot blow up.
	depth, merges int
	// keyHint is the variable name suggested when a key is found in the file.
	keyHint string
}

// pair is one key and its value in a mapping.
type pair struct {
	key  string
	keyN ast.Node
	val  ast.Node
}

// decode parses data. The Config is nil only when the YAML cannot be read
// (or is past a limit of limits.go, checked before the parser sees it);
// bad lists the fields whose value could not be read.
func decode(name string, data []byte) (c *Config, errs Errors, bad map[string]bool) {
	d := &decoder{
		bad: map[string]bool{},
		c: &Config{File: name, Providers: map[string]Provider{}, Targets: map[string]Target{},
			Routes: map[string]Route{}, pos: map[string]position{}, keyPos: map[string]position{}},
		anchors: map[string]ast.Node{},
		keyHint: "PROVIDER_API_KEY",
	}
	tokens, e := tokenize(data, fileLimits)
	if e != nil {
		e.File = name
		return nil, Errors{e}, nil
	}
	f, err := parser.Parse(tokens, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, Errors{d.syntaxError(err)}, nil
	}
	var docs []ast.Node
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc.Body)
		}
	}
	if len(docs) == 0 {
		return d.c, nil, nil
	}
	if len(docs) > 1 {
		d.fail(startPos(docs[1]), "", nil, "a second YAML document: detour.yaml holds one; remove the '---' and merge what follows into the first")
	}
	d.anchors = yamlnode.Anchors(docs[0])
	d.top(docs[0])
	return d.c, d.errs, d.bad
}

// syntaxError turns a YAML parse error into an *Error at its token.
func (d *decoder) syntaxError(err error) *Error {
	e := &Error{File: d.c.File, Msg: "YAML syntax: " + scrub(err.Error())}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e.Msg = "YAML syntax: " + scrub(ye.GetMessage()) + " (check the indentation and quoting here)"
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Column = tk.Position.Line, tk.Position.Column
		}
	}
	return e
}

// scrub hides any word of msg that looks like a key.
func scrub(msg string) string {
	words := strings.Fields(msg)
	for i, w := range words {
		if t := strings.Trim(w, "\"'`.,:;()[]{}<>"); looksSecret(t) || looksRandom(t) {
			words[i] = "[hidden]"
		}
	}
	return strings.Join(words, " ")
}

// fail records a problem at p with the value of field.
func (d *decoder) fail(p position, field string, sentinel error, msg string) {
	d.bad[field] = true
	d.errs = append(d.errs, &Error{File: d.c.File, Line: p.line, Column: p.col, Field: field, Msg: msg, Err: sentinel})
}

// failf records a problem at node n.
func (d *decoder) failf(n ast.Node, field, format string, args ...any) {
	d.fail(startPos(n), field, nil, fmt.Sprintf(format, args...))
}

// mark records where the field at path and its value are.
func (d *decoder) mark(path string, p pair) {
	d.c.keyPos[path] = startPos(p.keyN)
	d.c.pos[path] = startPos(p.val)
	if p.val == nil {
		d.c.pos[path] = d.c.keyPos[path]
	}
}

// startPos returns where n begins in the source.
func startPos(n ast.Node) position {
	switch v := n.(type) {
	case nil:
		return position{}
	case *ast.MappingNode:
		if !v.IsFlowStyle && len(v.Values) > 0 {
			return startPos(v.Values[0])
		}
	case *ast.MappingValueNode:
		return startPos(v.Key)
	case *ast.MappingKeyNode:
		if v.Value != nil {
			return startPos(v.Value)
		}
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return position{}
	}
	return position{tk.Position.Line, tk.Position.Column}
}

// resolve looks through tags, anchors and aliases to the node that holds
// the value; nil means no value.
func (d *decoder) resolve(n ast.Node) ast.Node { return yamlnode.Resolve(n, d.anchors, maxAliasDepth) }

// child returns the path of key under path. A key that looks like an API
// key is not repeated.
func child(path, key string) string {
	if looksSecret(key) || looksRandom(key) {
		key = "(hidden)"
	}
	if key == "" || !plainKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// plainKey matches keys that need no quoting in a field path.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// index returns the path of item i of the list at path.
func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// mapping returns the pairs of the mapping n (merge keys applied, later
// duplicates reported and dropped). A null n is an empty mapping. what names
// the keys for the duplicate message ("field", "route", ...).
func (d *decoder) mapping(n ast.Node, path, what string) ([]pair, bool) {
	n = d.resolve(n)
	var values []*ast.MappingValueNode
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, true
	case *ast.MappingNode:
		values = v.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{v}
	default:
		d.failf(n, path, "expected a mapping (key: value), got %s", yamlnode.Describe(n))
		return nil, false
	}
	var out, merged []pair
	seen := map[string]ast.Node{}
	for _, mv := range values {
		if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
			merged = append(merged, d.mergeSource(mv.Value, path)...)
			continue
		}
		k := keyText(d.resolve(mv.Key))
		if first, dup := seen[k]; dup {
			p := startPos(mv.Key)
			d.errs = append(d.errs, &Error{File: d.c.File, Line: p.line, Column: p.col, Field: child(path, k),
				Msg: fmt.Sprintf("%s %s is defined twice (first at line %d); %s",
					what, quote(k), startPos(first).line, duplicateFix[what])})
			continue
		}
		seen[k] = mv.Key
		out = append(out, pair{key: k, keyN: mv.Key, val: mv.Value})
	}
	for _, p := range merged {
		if _, ok := seen[p.key]; !ok {
			seen[p.key] = p.keyN
			out = append(out, p)
		}
	}
	return out, true
}

// duplicateFix says how to resolve a duplicated key, by what it names.
var duplicateFix = map[string]string{
	"field":    "keep one",
	"route":    "give each route its own name",
	"provider": "give each provider its own name (for a second account of one service, name it e.g. groq2 and write preset: groq)",
	"target":   "merge the two entries",
}

// mergeSource returns the pairs a merge key ("<<: *base") brings in.
func (d *decoder) mergeSource(n ast.Node, path string) []pair {
	if d.depth >= maxAliasDepth || d.merges >= maxMerges {
		d.failf(n, path, "merge keys (<<) nest or repeat too much: write the fields out")
		return nil
	}
	d.depth++
	d.merges++
	defer func() { d.depth-- }()
	if s, ok := d.resolve(n).(*ast.SequenceNode); ok {
		var out []pair
		for _, v := range s.Values {
			ps, _ := d.mapping(v, path, "field")
			out = append(out, ps...)
		}
		return out
	}
	ps, _ := d.mapping(n, path, "field")
	return ps
}

// keyText returns the text of a mapping key.
func keyText(n ast.Node) string {
	switch v := n.(type) {
	case nil:
		return ""
	case *ast.StringNode:
		return v.Value
	case *ast.NullNode:
		return ""
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return n.String()
}

// str reads a text value. Null reads as "". Any scalar reads as its source
// text, so `family: 3.3` is the text "3.3".
func (d *decoder) str(n ast.Node, path string) (string, bool) {
	n = d.resolve(n)
	var s string
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "", true
	case *ast.StringNode:
		s = v.Value
	case *ast.LiteralNode:
		if v.Value != nil {
			s = v.Value.Value
		}
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		s = v.GetToken().Value
	default:
		d.failf(n, path, "expected text, got %s", yamlnode.Describe(n))
		return "", false
	}
	if looksSecret(s) {
		d.secret(startPos(n), path)
		return "", false
	}
	return s, true
}

// secret records that a key was written into the file at path.
func (d *decoder) secret(p position, path string) {
	d.fail(p, path, ErrKeyInFile, fmt.Sprintf("this looks like an API key, and keys never go in this file: "+
		"delete it, export it in the environment (export %s=...) and write key_env: %s in the provider",
		d.keyHint, d.keyHint))
}

// integer reads a whole number.
func (d *decoder) integer(n ast.Node, path string) (int, bool) {
	n = d.resolve(n)
	if v, ok := n.(*ast.IntegerNode); ok {
		switch x := v.Value.(type) {
		case int64:
			if x >= math.MinInt && x <= math.MaxInt {
				return int(x), true
			}
		case uint64:
			if x <= math.MaxInt {
				return int(x), true
			}
		}
		d.failf(n, path, "%s is too large", v.GetToken().Value)
		return 0, false
	}
	d.failf(n, path, "expected a whole number, got %s", yamlnode.Describe(n))
	return 0, false
}

// dollars decodes an amount in USD: 0 (no ceiling) or more.
func (d *decoder) dollars(n ast.Node, path string) (float64, bool) {
	v, ok := d.number(n, path)
	if ok && v < 0 {
		d.failf(n, path, "must be 0 (no ceiling) or more USD")
		return 0, false
	}
	return v, ok
}

// number reads a finite number.
func (d *decoder) number(n ast.Node, path string) (float64, bool) {
	n = d.resolve(n)
	switch v := n.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return float64(x), true
		case uint64:
			return float64(x), true
		}
	case *ast.FloatNode:
		if !math.IsNaN(v.Value) && !math.IsInf(v.Value, 0) {
			return v.Value, true
		}
		d.notFinite(n, path)
		return 0, false
	case *ast.NanNode, *ast.InfinityNode:
		d.notFinite(n, path)
		return 0, false
	}
	d.failf(n, path, "expected a number, got %s", yamlnode.Describe(n))
	return 0, false
}

// notFinite fails n, a NaN or an infinity, where a number is read.
func (d *decoder) notFinite(n ast.Node, path string) {
	d.failf(n, path, "%s is not a finite number: NaN and infinities are not prices or amounts; write a number like 0.15",
		strings.TrimSpace(n.GetToken().Value))
}

// boolean reads true or false.
func (d *decoder) boolean(n ast.Node, path string) (bool, bool) {
	n = d.resolve(n)
	if v, ok := n.(*ast.BoolNode); ok {
		return v.Value, true
	}
	d.failf(n, path, "expected true or false, got %s", yamlnode.Describe(n))
	return false, false
}

// duration reads a positive duration written with a unit ("30s", "1m30s").
// A bare number is refused: 30 could mean seconds or milliseconds.
func (d *decoder) duration(n ast.Node, path string) (time.Duration, bool) {
	n = d.resolve(n)
	switch v := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		t := v.GetToken().Value
		d.failf(n, path, "%s has no unit: write %q for seconds (units: ms, s, m, h)", t, t+"s")
		return 0, false
	case *ast.StringNode:
		dur, err := time.ParseDuration(strings.TrimSpace(v.Value))
		if err != nil {
			d.failf(n, path, "%s is not a duration: write a number and a unit, like \"30s\", \"1m30s\" or \"500ms\"", quote(v.Value))
			return 0, false
		}
		if dur <= 0 {
			d.failf(n, path, "must be more than 0; leave the field out to take the default")
			return 0, false
		}
		return dur, true
	}
	d.failf(n, path, "expected a duration like \"30s\", got %s", yamlnode.Describe(n))
	return 0, false
}

// limit reads a route's time limit: a duration with a unit, or 0 (or
// "0s") for no limit, which it returns as -1, router.Route's "none". def is
// the router's default, for messages (0: none).
func (d *decoder) limit(n ast.Node, path string, def time.Duration) (time.Duration, bool) {
	n = d.resolve(n)
	dflt := "no limit"
	if def > 0 {
		dflt = def.String()
	}
	if strings.HasSuffix(path, ".first_token") && def == router.DefaultFirstToken {
		dflt += ", " + router.DefaultReasoningFirstToken.String() + " for a model known to reason"
	}
	negative := func() {
		d.failf(n, path, "cannot be negative: write a duration like \"30s\", 0 for no limit, "+
			"or leave the field out for the default (%s)", dflt)
	}
	switch v := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		f := math.NaN() // a value of no known type reads as "no unit"
		switch x := v.(type) {
		case *ast.IntegerNode:
			switch i := x.Value.(type) {
			case int64:
				f = float64(i)
			case uint64:
				f = float64(i)
			}
		case *ast.FloatNode:
			f = x.Value
		}
		switch {
		case f == 0:
			return -1, true
		case f < 0:
			negative()
			return 0, false
		}
		t := strings.TrimSpace(v.GetToken().Value)
		d.failf(n, path, "%s has no unit: write %q for seconds (units: ms, s, m, h), or 0 for no limit", t, t+"s")
		return 0, false
	case *ast.StringNode:
		dur, err := time.ParseDuration(strings.TrimSpace(v.Value))
		switch {
		case err != nil:
			d.failf(n, path, "%s is not a duration: write a number and a unit, like \"30s\", \"1m30s\" or \"500ms\", or 0 for no limit",
				quote(v.Value))
			return 0, false
		case dur < 0:
			negative()
			return 0, false
		case dur == 0:
			return -1, true
		}
		return dur, true
	}
	d.failf(n, path, "expected a duration like \"30s\" (or 0 for no limit), got %s", yamlnode.Describe(n))
	return 0, false
}

// list reads a sequence; null is an empty (nil) list.
func (d *decoder) list(n ast.Node, path, example string) ([]ast.Node, bool) {
	n = d.resolve(n)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, true
	case *ast.SequenceNode:
		if v.Values == nil {
			return []ast.Node{}, true
		}
		return v.Values, true
	}
	d.failf(n, path, "expected a list, got %s; write it like %s", yamlnode.Describe(n), example)
	return nil, false
}

// unknown reports a field that allowed does not contain. A field that
// names a key (api_key, token, ...) gets the key_env explanation instead.
func (d *decoder) unknown(p pair, parent string, allowed []string) {
	path := child(parent, p.key)
	norm := strings.ToLower(strings.ReplaceAll(p.key, "-", "_"))
	v := d.resolve(p.val)
	secretValue := false
	if s, ok := v.(*ast.StringNode); ok {
		secretValue = looksSecret(s.Value)
	}
	if secretFieldNames[norm] || secretValue || looksSecret(p.key) || looksRandom(p.key) || (suggest(p.key, allowed) == "" &&
		(strings.HasSuffix(norm, "_key") || strings.HasSuffix(norm, "_token") || strings.HasSuffix(norm, "secret"))) {
		name := p.key
		if looksSecret(name) || looksRandom(name) {
			name = "it"
		}
		d.fail(startPos(p.keyN), path, ErrKeyInFile, fmt.Sprintf("keys never go in this file: delete %s, "+
			"export the key in the environment (export %s=...) and write key_env: %s in the provider",
			name, d.keyHint, d.keyHint))
		return
	}
	d.fail(startPos(p.keyN), path, nil, fmt.Sprintf("unknown field %s%s", quote(p.key), didYouMean(p.key, allowed, "fields")))
}

// secretFieldNames are field names people use for a key written inline.
var secretFieldNames = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "token": true, "api_token": true,
	"access_token": true, "auth_token": true, "secret": true, "password": true,
	"auth": true, "authorization": true, "bearer": true, "credentials": true,
}
