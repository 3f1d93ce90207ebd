package grade

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The walk below runs before github.com/google/jsonschema-go resolves a
// suite's schema. The library checks a schema's structure, not its
// values against the meta-schema, and validates draft 2020-12 and
// draft-07 only; the walk refuses at parse time what it would take and
// then check wrongly or not at all: a misspelt type, a value of the
// wrong kind, a keyword of another draft or in another case, a
// fractional multipleOf, a $ref loop that would recurse until the stack
// overflows.

// keyword kinds: what a keyword's value must be.
type keywordKind int

const (
	kAny          keywordKind = iota
	kString                   // text
	kBool                     // true or false
	kNumber                   // a number
	kMultiple                 // a whole number above 0
	kCount                    // a whole number, 0 or more
	kList                     // a list of anything
	kNames                    // a list of text
	kType                     // a type name or a list of them
	kPattern                  // a regular expression
	kSchema                   // a schema
	kSchemaList               // a non-empty list of schemas
	kSchemaMap                // a mapping of names to schemas
	kPatternMap               // a mapping of regular expressions to schemas
	kNamesMap                 // a mapping of names to lists of text
	kItems                    // a schema (draft-07 also: a list of schemas)
	kDependencies             // a mapping to schemas or lists of text
)

// schemaKeywords are the keywords the library knows (the JSON names of
// jsonschema.Schema's fields), with the kind of their values. Others are
// kept as notes and ignored, as the spec says.
var schemaKeywords = map[string]keywordKind{
	"$id": kString, "$schema": kString, "$ref": kString, "$anchor": kString,
	"$dynamicRef": kString, "$dynamicAnchor": kString, "$comment": kString,
	"$vocabulary": kAny, "$defs": kSchemaMap, "definitions": kSchemaMap,
	"title": kString, "description": kString, "default": kAny, "examples": kList,
	"deprecated": kBool, "readOnly": kBool, "writeOnly": kBool,
	"type": kType, "enum": kList, "const": kAny,
	"multipleOf": kMultiple, "minimum": kNumber, "maximum": kNumber,
	"exclusiveMinimum": kNumber, "exclusiveMaximum": kNumber,
	"minLength": kCount, "maxLength": kCount, "pattern": kPattern, "format": kString,
	"prefixItems": kSchemaList, "items": kItems, "additionalItems": kSchema,
	"contains": kSchema, "minContains": kCount, "maxContains": kCount,
	"minItems": kCount, "maxItems": kCount, "uniqueItems": kBool, "unevaluatedItems": kSchema,
	"properties": kSchemaMap, "patternProperties": kPatternMap, "additionalProperties": kSchema,
	"propertyNames": kSchema, "unevaluatedProperties": kSchema,
	"required": kNames, "minProperties": kCount, "maxProperties": kCount,
	"dependentRequired": kNamesMap, "dependentSchemas": kSchemaMap, "dependencies": kDependencies,
	"allOf": kSchemaList, "anyOf": kSchemaList, "oneOf": kSchemaList, "not": kSchema,
	"if": kSchema, "then": kSchema, "else": kSchema,
	"contentEncoding": kString, "contentMediaType": kString, "contentSchema": kSchema,
}

// newerKeywords are draft 2019-09 and 2020-12 keywords, refused in a
// draft-07 schema: the library would apply some of them there anyway.
var newerKeywords = map[string]bool{
	"$anchor": true, "$dynamicRef": true, "$dynamicAnchor": true, "prefixItems": true,
	"dependentRequired": true, "dependentSchemas": true, "minContains": true,
	"maxContains": true, "unevaluatedItems": true, "unevaluatedProperties": true,
}

// inPlace are the keywords whose schemas apply to the instance itself,
// not to a part of it: a loop through them alone never ends.
var inPlace = map[string]bool{
	"allOf": true, "anyOf": true, "oneOf": true, "not": true,
	"if": true, "then": true, "else": true, "dependentSchemas": true, "dependencies": true,
}

var jsonTypeNames = map[string]bool{
	"null": true, "boolean": true, "object": true, "array": true,
	"number": true, "integer": true, "string": true,
}

// schemaNode is one schema of the document, mapping or boolean.
type schemaNode struct {
	path string         // JSON pointer from the root; "" for the root
	obj  map[string]any // nil for true or false
	base *schemaNode    // the nearest node, itself included, with a URI
	uri  *url.URL       // set on the root and on a node with an $id
	// anchors ($anchor, $dynamicAnchor, draft-07's "#name" $id) of a base.
	anchors map[string]*schemaNode
	// applied are the schemas of in-place keywords.
	applied []*schemaNode
}

// schemaWalk indexes a schema document as the library resolves it.
type schemaWalk struct {
	draft   string
	baseURI *url.URL
	nodes   map[string]*schemaNode // by path
	uris    map[string]*schemaNode // by URI without fragment
	ids     map[string]string      // $id as written -> path
	// dynamic maps a $dynamicAnchor name to the schemas that carry it.
	dynamic map[string][]*schemaNode
	order   []*schemaNode
}

// walkSchema checks every keyword of doc and indexes its schemas.
func walkSchema(doc any) (*schemaWalk, error) {
	base, _ := url.Parse(schemaBase)
	w := &schemaWalk{
		draft: draft2020, baseURI: base, nodes: map[string]*schemaNode{},
		uris: map[string]*schemaNode{}, ids: map[string]string{}, dynamic: map[string][]*schemaNode{},
	}
	if obj, ok := doc.(map[string]any); ok {
		if s, ok := obj["$schema"].(string); ok {
			d, err := schemaDraft(s)
			if err != nil {
				return nil, err
			}
			w.draft = d
		}
	}
	if _, err := w.walk(doc, "", nil); err != nil {
		return nil, err
	}
	return w, w.loops()
}

// schemaDraft reads $schema: the two drafts the library checks, in any
// of their usual spellings.
func schemaDraft(s string) (string, error) {
	u := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "#")
	switch u {
	case "json-schema.org/draft/2020-12/schema":
		return draft2020, nil
	case "json-schema.org/draft-07/schema":
		return draft07, nil
	}
	return "", fmt.Errorf("$schema %q: detour checks draft 2020-12 (the default) and draft-07 only", s)
}

// walk checks the schema v at path and what is under it; parent is the
// base of the enclosing schema (nil at the root).
func (w *schemaWalk) walk(v any, path string, parent *schemaNode) (*schemaNode, error) {
	n := &schemaNode{path: path, base: parent}
	w.nodes[path] = n
	w.order = append(w.order, n)
	if parent == nil {
		n.uri, n.base = w.baseURI, n
		w.uris[w.baseURI.String()] = n
	}
	obj, _ := v.(map[string]any)
	n.obj = obj
	if obj == nil {
		return n, nil
	}
	w.identify(n)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if _, ok := obj["$defs"]; ok {
		if _, ok := obj["definitions"]; ok {
			return nil, &schemaError{path, "write $defs or definitions, not both"}
		}
	}
	if _, ok := obj["$schema"]; ok && path != "" {
		if d, err := schemaDraft(fmt.Sprint(obj["$schema"])); err != nil || d != w.draft {
			return nil, &schemaError{path, "$schema: a part of a schema cannot change its draft"}
		}
	}
	for _, k := range keys {
		if err := w.keyword(n, k, obj[k]); err != nil {
			var se *schemaError
			if errors.As(err, &se) {
				return nil, err
			}
			return nil, &schemaError{path, k + ": " + err.Error()}
		}
	}
	return n, nil
}

// schemaError is a fault of a suite's schema and where it is.
type schemaError struct {
	path string // JSON pointer of the schema at fault; "" for the root
	msg  string
}

func (e *schemaError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return "at " + e.path + ": " + e.msg
}

// identify records the URI and anchors n sets, as the library does.
func (w *schemaWalk) identify(n *schemaNode) {
	obj := n.obj
	if id, ok := obj["$id"].(string); ok && id != "" {
		if _, seen := w.ids[id]; !seen {
			w.ids[id] = n.path
		}
		_, hasRef := obj["$ref"]
		if u, err := url.Parse(id); err == nil && !(w.draft == draft07 && hasRef) {
			switch {
			case w.draft == draft07 && u.Fragment != "":
				n.base.anchor(strings.TrimPrefix(id, "#"), n)
			case u.Fragment == "":
				n.uri = n.base.uri.ResolveReference(u)
				w.uris[n.uri.String()] = n
				n.base = n
			}
		}
	}
	if w.draft == draft2020 {
		if a, ok := obj["$anchor"].(string); ok && a != "" {
			n.base.anchor(a, n)
		}
		if a, ok := obj["$dynamicAnchor"].(string); ok && a != "" {
			n.base.anchor(a, n)
			w.dynamic[a] = append(w.dynamic[a], n)
		}
	}
}

func (n *schemaNode) anchor(name string, to *schemaNode) {
	if n.anchors == nil {
		n.anchors = map[string]*schemaNode{}
	}
	if _, ok := n.anchors[name]; !ok {
		n.anchors[name] = to
	}
}

// keyword checks one keyword of n and walks the schemas in it.
func (w *schemaWalk) keyword(n *schemaNode, k string, v any) error {
	switch {
	case k == "$recursiveRef" || k == "$recursiveAnchor":
		return errors.New("a draft 2019-09 keyword, not checked; write $dynamicRef and $dynamicAnchor (draft 2020-12)")
	case w.draft == draft07 && newerKeywords[k]:
		return errors.New("a draft 2020-12 keyword, and $schema says draft-07")
	case w.draft == draft2020 && k == "dependencies":
		return errors.New("a draft-07 keyword; in draft 2020-12 write dependentRequired or dependentSchemas")
	case w.draft == draft07 && k == "format":
		return errors.New("not checked by detour, and draft-07 says it is checked; write a pattern, or drop $schema (in draft 2020-12 format is a note)")
	}
	kind, ok := schemaKeywords[k]
	if !ok {
		// encoding/json, which reads the schema into the library's
		// struct, matches keys to keywords ignoring case.
		for kw := range schemaKeywords {
			if strings.EqualFold(k, kw) {
				return fmt.Errorf("write %s (keywords are case-sensitive)", kw)
			}
		}
		return nil
	}
	child := func(sub any, seg string) error {
		if !isSchema(sub) {
			if seg != "" {
				return fmt.Errorf("%s: %w", seg, want(false, "a schema (a mapping, or true or false)", sub))
			}
			return want(false, "a schema (a mapping, or true or false)", sub)
		}
		path := n.path + "/" + pointerEscaper.Replace(k)
		if seg != "" {
			path += "/" + pointerEscaper.Replace(seg)
		}
		c, err := w.walk(sub, path, n.base)
		if err == nil && inPlace[k] && !(w.draft == draft07 && n.obj["$ref"] != nil) {
			n.applied = append(n.applied, c)
		}
		return err
	}
	switch kind {
	case kString:
		return want(isString(v), "text", v)
	case kBool:
		_, ok := v.(bool)
		return want(ok, "true or false", v)
	case kNumber:
		_, ok := v.(float64)
		return want(ok, "a number", v)
	case kMultiple:
		f, ok := v.(float64)
		if ok && f > 0 && f != math.Trunc(f) {
			// The library divides in float64: 19.99 / 0.01 is not whole.
			return fmt.Errorf("%s: detour checks whole multiples only (in floating point 19.99 is not a multiple of 0.01)", kindOf(v))
		}
		return want(ok && f > 0, "a whole number above 0", v)
	case kCount:
		f, ok := v.(float64)
		return want(ok && f >= 0 && f <= math.MaxInt32 && f == math.Trunc(f), "a whole number, 0 or more", v)
	case kList:
		_, ok := v.([]any)
		return want(ok, "a list", v)
	case kNames:
		return want(isNames(v), "a list of names", v)
	case kType:
		return checkType(v)
	case kPattern:
		if !isString(v) {
			return want(false, "a regular expression", v)
		}
		if _, err := regexp.Compile(v.(string)); err != nil {
			return err
		}
	case kSchema:
		return child(v, "")
	case kItems:
		if list, ok := v.([]any); ok && w.draft == draft07 {
			return w.schemaList(list, child, false)
		} else if ok {
			return errors.New("a list of schemas is draft-07; in draft 2020-12 write prefixItems")
		}
		return child(v, "")
	case kSchemaList:
		list, ok := v.([]any)
		if !ok {
			return want(false, "a list of schemas", v)
		}
		return w.schemaList(list, child, true)
	case kSchemaMap, kPatternMap, kNamesMap, kDependencies:
		m, ok := v.(map[string]any)
		if !ok {
			return want(false, "a mapping", v)
		}
		return w.schemaMap(kind, m, child)
	}
	return nil
}

// pointerEscaper writes a key as a JSON pointer segment.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// schemaList walks a list of schemas; nonEmpty refuses an empty one.
func (w *schemaWalk) schemaList(list []any, child func(any, string) error, nonEmpty bool) error {
	if nonEmpty && len(list) == 0 {
		return errors.New("want at least one schema")
	}
	for i, e := range list {
		if err := child(e, strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return nil
}

// schemaMap walks the values of a keyword's mapping.
func (w *schemaWalk) schemaMap(kind keywordKind, m map[string]any, child func(any, string) error) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch {
		case kind == kNamesMap || kind == kDependencies && !isSchema(v):
			if !isNames(v) {
				what := "a list of names"
				if kind == kDependencies {
					what = "a schema or a list of names"
				}
				return fmt.Errorf("%s: %w", k, want(false, what, v))
			}
			continue
		case kind == kPatternMap:
			if _, err := regexp.Compile(k); err != nil {
				return err
			}
		}
		if err := child(v, k); err != nil {
			return err
		}
	}
	return nil
}

// want is nil when ok, else an error naming what the value should be.
func want(ok bool, what string, got any) error {
	if ok {
		return nil
	}
	return fmt.Errorf("want %s, got %s", what, kindOf(got))
}

// checkType checks the value of "type".
func checkType(v any) error {
	names := []any{v}
	if list, ok := v.([]any); ok {
		if len(list) == 0 {
			return errors.New("want at least one type")
		}
		names = list
	}
	for _, t := range names {
		s, ok := t.(string)
		if !jsonTypeNames[s] {
			if ok {
				return fmt.Errorf("%q is not a type (string, number, integer, boolean, object, array, null)", s)
			}
			return want(false, "a type name or a list of them", t)
		}
	}
	return nil
}

func isString(v any) bool { _, ok := v.(string); return ok }

func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

func isNames(v any) bool {
	list, ok := v.([]any)
	for _, e := range list {
		ok = ok && isString(e)
	}
	return ok
}

// kindOf names the kind of a JSON value, and a number or text itself,
// for a message.
func kindOf(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return "a mapping"
	case bool:
		return fmt.Sprint(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return "text " + clip(x, 30)
	}
	return describeJSON(v)
}

// loops follows every $ref: it refuses one that leaves the schema (an
// *externalRefError) or names nothing, and one that leads back to a schema already being
// applied to the same value, through keywords that do not go into a part
// of it (allOf, not, another $ref...): the library would recurse until
// the stack overflows, which ends the process. A $dynamicRef is taken to
// reach every $dynamicAnchor of its name.
func (w *schemaWalk) loops() error {
	type edge struct {
		to  *schemaNode
		ref string // the $ref or $dynamicRef taken; "" for a keyword
		at  string // path of the schema holding it
	}
	edges := func(n *schemaNode) ([]edge, error) {
		var out []edge
		for _, k := range []string{"$ref", "$dynamicRef"} {
			ref, ok := n.obj[k].(string)
			if !ok {
				continue
			}
			to, anchor, err := w.target(n, ref)
			var xe *externalRefError
			if errors.As(err, &xe) {
				return nil, err
			} else if err != nil {
				return nil, &schemaError{n.path, fmt.Sprintf("%s %q: %v", k, ref, err)}
			}
			out = append(out, edge{to, ref, n.path})
			if k == "$dynamicRef" && anchor != "" {
				for _, d := range w.dynamic[anchor] {
					out = append(out, edge{d, ref, n.path})
				}
			}
		}
		for _, c := range n.applied {
			out = append(out, edge{to: c})
		}
		return out, nil
	}
	const onPath, done = 1, 2
	state := map[*schemaNode]int{}
	var stack []edge
	var visit func(n *schemaNode) error
	visit = func(n *schemaNode) error {
		state[n] = onPath
		es, err := edges(n)
		if err != nil {
			return err
		}
		for _, e := range es {
			switch state[e.to] {
			case onPath:
				// The loop is e and the edges taken since e.to.
				loop := []edge{e}
				for i := len(stack) - 1; i >= 0 && stack[i].to != e.to; i-- {
					loop = append(loop, stack[i])
				}
				for _, l := range loop {
					if l.ref != "" {
						e = l
					}
				}
				return &schemaError{e.at, fmt.Sprintf("$ref %q makes a loop that never goes into a part of the answer, so checking would never end", e.ref)}
			case 0:
				stack = append(stack, e)
				if err := visit(e.to); err != nil {
					return err
				}
				stack = stack[:len(stack)-1]
			}
		}
		state[n] = done
		return nil
	}
	for _, n := range w.order {
		if state[n] == 0 {
			if err := visit(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// target finds the schema a $ref of n names, as the library does: the
// ref resolved against n's base URI, then an anchor or a JSON pointer in
// the schema of that URI. anchor is the fragment when it names one.
func (w *schemaWalk) target(n *schemaNode, ref string) (to *schemaNode, anchor string, err error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, "", err
	}
	abs := n.base.uri.ResolveReference(u)
	frag := abs.Fragment
	doc := *abs
	doc.Fragment, doc.RawFragment = "", ""
	d := w.uris[doc.String()]
	switch {
	case d == nil:
		return nil, "", &externalRefError{ref: strings.TrimPrefix(doc.String(), schemaDir)}
	case frag != "" && !strings.HasPrefix(frag, "/"):
		if to = d.anchors[frag]; to == nil {
			return nil, "", fmt.Errorf("no anchor %q", frag)
		}
		return to, frag, nil
	}
	if to = w.nodes[d.path+frag]; to == nil {
		return nil, "", errors.New("nothing there that is a schema (under $defs, properties, items...)")
	}
	return to, "", nil
}
