package grade

import (
	"encoding/json"
	"errors"
	"math/big"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaBase is the URI a suite's schema is resolved against; a $ref
// that leaves it is refused.
const schemaBase = schemaDir + "schema.json"

// schemaDir is cut from a refused $ref's URL, to show it as written.
const schemaDir = "https://detour.invalid/"

// The two drafts, spelt as the library wants them in $schema.
const (
	draft2020 = "https://json-schema.org/draft/2020-12/schema"
	draft07   = "http://json-schema.org/draft-07/schema#"
)

// compiledSchema is a suite's JSON schema, checked and resolved. It is
// safe for concurrent use.
type compiledSchema struct {
	resolved *jsonschema.Resolved
	// idPaths maps the $id of a subschema to its JSON pointer, which the
	// library's errors name instead.
	idPaths map[string]string
}

// externalRefError is a $ref to a schema outside the suite's own.
type externalRefError struct{ ref string }

func (e *externalRefError) Error() string { return "refers to " + e.ref }

// compileSchema checks doc (a JSON schema decoded into plain Go values:
// a mapping or a boolean) and resolves it. An *externalRefError says a
// $ref leaves the schema.
func compileSchema(doc any) (*compiledSchema, error) {
	w, err := walkSchema(doc)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	s.Schema = w.draft // one spelling of each draft is known to the library
	// The walk has followed every $ref; the loader is a second lock.
	r, err := s.Resolve(&jsonschema.ResolveOptions{
		BaseURI: schemaBase,
		Loader: func(u *url.URL) (*jsonschema.Schema, error) {
			return nil, &externalRefError{ref: strings.TrimPrefix(u.String(), schemaDir)}
		},
	})
	if err != nil {
		var xe *externalRefError
		if errors.As(err, &xe) {
			return nil, xe
		}
		msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "jsonschema.Schema: "), "<anonymous schema>", "the schema")
		return nil, errors.New(msg)
	}
	return &compiledSchema{resolved: r, idPaths: w.ids}, nil
}

// check validates an answer's JSON. It returns "" when it matches, else
// what follows "the JSON " in a Verdict's Why.
func (c *compiledSchema) check(raw []byte) string {
	var inst any // numbers as float64, as the library wants them
	if err := json.Unmarshal(raw, &inst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) { // a number beyond float64
			return "has a number too large to check against the schema: " + clip(strings.TrimPrefix(te.Value, "number "), 40)
		}
		return "does not parse: " + err.Error()
	}
	if err := c.resolved.Validate(inst); err != nil {
		return "does not match the schema: " + c.flatten(err)
	}
	return ""
}

// flatten makes one line of a validation error: where in the answer,
// then what. The library wraps its message in one "validating <schema>"
// for each schema it went through, named by JSON pointer ("root" at the
// top) or by $id; the path into the answer is read from those.
func (c *compiledSchema) flatten(err error) string {
	var steps []string
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		msg, rest := err.Error(), ": "+inner.Error()
		if !strings.HasPrefix(msg, "validating ") || !strings.HasSuffix(msg, rest) {
			break
		}
		steps = append(steps, strings.TrimSuffix(strings.TrimPrefix(msg, "validating "), rest))
		err = inner
	}
	why := tidySchemaMessage(err.Error())
	if at := c.answerPath(steps); at != "" {
		why = "at " + at + ": " + why
	}
	return oneLine(why, 160)
}

// answerPath turns the schemas a validation went through into a path in
// the answer ("/items/*/qty"; * for an item or key the error does not
// name). A step that does not go under the one before is a $ref, which
// stays at the same value.
func (c *compiledSchema) answerPath(steps []string) string {
	var parts []string
	prev, known := "", true
	for _, s := range steps {
		switch {
		case s == "root":
			s = ""
		case strings.HasPrefix(s, "/"):
		default:
			p, ok := c.idPaths[s]
			if !ok {
				known = false
				continue
			}
			s = p
		}
		if known && strings.HasPrefix(s, prev+"/") {
			parts = append(parts, answerSteps(strings.Split(s[len(prev)+1:], "/"))...)
		}
		prev, known = s, true
	}
	if len(parts) == 0 {
		return ""
	}
	return "/" + strings.Join(parts, "/")
}

// answerSteps reads the keywords of a schema path as steps in the value
// they apply to.
func answerSteps(segs []string) []string {
	var out []string
	next := func() string {
		if len(segs) == 0 {
			return ""
		}
		s := segs[0]
		segs = segs[1:]
		return s
	}
	for len(segs) > 0 {
		switch k := next(); k {
		case "properties":
			out = append(out, pointerUnescaper.Replace(next()))
		case "prefixItems":
			out = append(out, next())
		case "items":
			if len(segs) > 0 && isIndex(segs[0]) { // draft-07's list of items
				out = append(out, next())
			} else {
				out = append(out, "*")
			}
		case "patternProperties":
			next()
			out = append(out, "*")
		case "additionalItems", "unevaluatedItems", "contains",
			"additionalProperties", "unevaluatedProperties", "propertyNames":
			out = append(out, "*")
		case "allOf", "anyOf", "oneOf", "dependentSchemas", "dependencies", "$defs", "definitions":
			next() // the same value
		}
	}
	return out
}

// pointerUnescaper reads a JSON pointer segment.
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// tidySchemaMessage shortens the library's message of what failed: no
// instance printed as a Go value in a type error, no list of anonymous
// schemas, the reasons of anyOf on the same line.
func tidySchemaMessage(m string) string {
	rw := schemaRewrites()
	for _, r := range rw.rules {
		m = r.re.ReplaceAllString(m, r.with)
	}
	m = tidyBound(rw.bound, m)
	return strings.Join(strings.Fields(strings.ReplaceAll(m, "\n", "; ")), " ")
}

// schemaRewrites are the rules of tidySchemaMessage, compiled on first
// use rather than at every start of detour. The messages are those of
// github.com/google/jsonschema-go v0.4.3 (jsonschema/validate.go);
// grade's tests pin them.
var schemaRewrites = sync.OnceValue(func() (rw rewrites) {
	rw.rules = []rewrite{
		{regexp.MustCompile(`(?m)^(?:validating [^:\n]*: )+`), ""},
		{regexp.MustCompile(`anyOf: did not validate against any of \[[^\]]*\]:\n?`), "anyOf: none matches: "},
		{regexp.MustCompile(`(?m)type: .* has type "(\w+)", want`), "type: got $1, want"},
		{regexp.MustCompile(`(?m)oneOf: did not validate against any of \[[^\]]*\]$`), "oneOf: none matches"},
		{regexp.MustCompile(`(?m)oneOf: validated against both .* and .*$`), "oneOf: more than one matches"},
		{regexp.MustCompile(`(?m)not: validated against .*$`), "not: it matches the schema under not"},
		{regexp.MustCompile(`(?m)contains: .* does not have an item matching .*$`), "contains: no item matches"},
	}
	rw.bound = regexp.MustCompile(`^((?:minimum|maximum|exclusiveMinimum|exclusiveMaximum|multipleOf): )(\S+)( .* )(\S+)$`)
	return rw
})

// rewrites are the rules of tidySchemaMessage.
type rewrites struct {
	rules []rewrite // applied in order
	// bound matches the messages on numbers, which print the value as a
	// fraction ("3/2") and the bound with %f ("1.000000").
	bound *regexp.Regexp
}

// rewrite replaces what re matches with with (which may name groups).
type rewrite struct {
	re   *regexp.Regexp
	with string
}

// tidyBound writes the numbers of a message that bound matches as JSON
// would.
func tidyBound(bound *regexp.Regexp, m string) string {
	s := bound.FindStringSubmatch(m)
	if s == nil {
		return m
	}
	num := func(t string) string {
		r, ok := new(big.Rat).SetString(t)
		if !ok {
			return t
		}
		if r.IsInt() {
			return r.Num().String()
		}
		f, _ := r.Float64()
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return s[1] + num(s[2]) + s[3] + num(s[4])
}
