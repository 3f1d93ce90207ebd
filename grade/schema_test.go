package grade

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaSuite is a one-task suite whose json grader has the schema
// written in YAML flow style; the grade: block is at line 6.
func schemaSuite(schema string) string {
	return "name: s\ntasks:\n  - id: x\n    prompt: p\n    grade:\n      json: {schema: " + schema + "}\n    good: [a]\n    bad: [b]\n"
}

func TestJSONSchema_RefusedAtParse(t *testing.T) {
	const at = `s.yaml:6: task "x": grade: json: schema: `
	tests := []struct {
		name, schema, want string
	}{
		{"misspelt type", "{type: objekt}", at + `type: "objekt" is not a type (string, number, integer, boolean, object, array, null)`},
		{"no types", "{type: []}", at + "type: want at least one type"},
		{"nested value of the wrong kind", "{properties: {a: {minLength: -1}}}", at + "at /properties/a: minLength: want a whole number, 0 or more, got -1"},
		{"property not a schema", "{properties: {a: 5}}", at + "properties: a: want a schema (a mapping, or true or false), got 5"},
		{"number as text", "{minimum: x}", at + `minimum: want a number, got text "x"`},
		{"multipleOf zero", "{multipleOf: 0}", at + "multipleOf: want a whole number above 0, got 0"},
		{"multipleOf a fraction", "{multipleOf: 0.01}", at + "multipleOf: 0.01: detour checks whole multiples only"},
		{"empty anyOf", "{anyOf: []}", at + "anyOf: want at least one schema"},
		{"bad pattern", "{properties: {a: {pattern: '(?<x'}}}", at + "at /properties/a: pattern: error parsing regexp: invalid named capture: `(?<x`"},
		{"bad patternProperties key", "{patternProperties: {'[': {}}}", at + "patternProperties: error parsing regexp: missing closing ]: `[`"},
		{"file ref", `{$ref: "file:///etc/passwd"}`, at + `refers to "file:///etc/passwd"; a suite's schema must be whole in the file (put shared parts under $defs)`},
		{"http ref", `{properties: {a: {$ref: "https://example.com/s.json#/a"}}}`, at + `refers to "https://example.com/s.json"; a suite's schema must be whole in the file (put shared parts under $defs)`},
		{"relative ref", `{items: {$ref: "item.json"}}`, at + `refers to "item.json"; a suite's schema`},
		{"ref to nothing", `{$ref: "#/$defs/nope"}`, at + `$ref "#/$defs/nope": nothing there that is a schema`},
		{"ref to a non-schema key", `{$ref: "#/x-shared/a", x-shared: {a: {}}}`, at + `$ref "#/x-shared/a": nothing there that is a schema`},
		{"ref to no anchor", `{$ref: "#nope"}`, at + `$ref "#nope": no anchor "nope"`},
		{"ref to itself", `{$ref: "#"}`, at + `$ref "#" makes a loop that never goes into a part of the answer, so checking would never end`},
		{"loop through allOf", `{allOf: [{$ref: "#"}]}`, at + `at /allOf/0: $ref "#" makes a loop`},
		{"loop through defs and not", `{$defs: {a: {$ref: "#/$defs/b"}, b: {not: {$ref: "#/$defs/a"}}}, $ref: "#/$defs/a"}`, "makes a loop"},
		{"loop through an anchor", `{$defs: {a: {$anchor: A, anyOf: [{$ref: "#A"}]}}}`, `$ref "#A" makes a loop`},
		{"draft-04", `{$schema: "http://json-schema.org/draft-04/schema#"}`, at + `$schema "http://json-schema.org/draft-04/schema#": detour checks draft 2020-12 (the default) and draft-07 only`},
		{"draft 2019-09", `{$schema: "https://json-schema.org/draft/2019-09/schema"}`, "detour checks draft 2020-12 (the default) and draft-07 only"},
		{"a part changes draft", `{$defs: {a: {$schema: "http://json-schema.org/draft-07/schema#"}}}`, at + "at /$defs/a: $schema: a part of a schema cannot change its draft"},
		{"format in draft-07", `{$schema: "http://json-schema.org/draft-07/schema#", format: email}`, at + "format: not checked by detour, and draft-07 says it is checked"},
		{"2020 keyword in draft-07", `{$schema: "http://json-schema.org/draft-07/schema#", unevaluatedProperties: false}`, at + "unevaluatedProperties: a draft 2020-12 keyword, and $schema says draft-07"},
		{"items list in 2020-12", "{items: [{type: string}]}", at + "items: a list of schemas is draft-07; in draft 2020-12 write prefixItems"},
		{"dependencies in 2020-12", "{dependencies: {a: [b]}}", at + "dependencies: a draft-07 keyword; in draft 2020-12 write dependentRequired or dependentSchemas"},
		{"recursiveRef", `{$recursiveRef: "#"}`, at + "$recursiveRef: a draft 2019-09 keyword, not checked"},
		{"both defs", "{$defs: {}, definitions: {}}", at + "write $defs or definitions, not both"},
		{"keyword in other case", `{allOF: [{$ref: "#"}]}`, at + "allOF: write allOf (keywords are case-sensitive)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(schemaSuite(tt.schema)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestJSONSchema_Accepted(t *testing.T) {
	for _, schema := range []string{
		"true",
		"false",
		`{$schema: "https://json-schema.org/draft/2020-12/schema", type: object}`,
		`{$schema: "https://json-schema.org/draft/2020-12/schema#", type: object}`,
		`{$schema: "http://json-schema.org/draft-07/schema", items: [{type: string}], additionalItems: false}`,
		`{$schema: "http://json-schema.org/draft-07/schema#", dependencies: {a: [b], c: {required: [d]}}}`,
		"{format: date, x-note: {anything: [1, 2]}}", // format is a note in 2020-12, as before
		`{type: object, properties: {next: {$ref: "#"}}}`,
		`{$defs: {a: {$id: "a.json", $defs: {b: {type: string}}}}, $ref: "a.json#/$defs/b"}`,
	} {
		if _, err := Parse("s.yaml", []byte(schemaSuite(schema))); err != nil {
			t.Errorf("schema %s: %v", schema, err)
		}
	}
}

func TestJSONGrader_Schema(t *testing.T) {
	j := func(schema string) string { return "json:\n  schema: " + schema + "\n" }
	runGradeCases(t, []gradeCase{
		{"integer 1.0 is an integer", j("{type: array, items: {type: integer}}"), "[1.0, 2]", true, ""},
		{"integer 1.5 is not", j("{type: array, items: {type: integer}}"), "[1, 1.5]", false, `at /*: type: got number, want "integer"`},
		{"big integer", j("{type: array, items: {type: integer, minimum: 10000000000000000}}"), "[123456789012345678901234567890]", true, ""},
		{"number beyond float64", j("{type: array}"), "[1e400]", false, `the JSON has a number too large to check against the schema: "1e400"`},
		{"tiny number is 0", j("{type: array, items: {maximum: 0}}"), "[1e-400]", true, ""},
		{"enum", j("{properties: {c: {enum: [red, green]}}}"), `{"c": "blue"}`, false, "at /c: enum: blue does not equal any of: [red green]"},
		{"enum numbers by value", j("{properties: {n: {enum: [1, 2]}}}"), `{"n": 2.0}`, true, ""},
		{"const", j("{properties: {v: {const: 3}}}"), `{"v": 4}`, false, "at /v: const: 4 does not equal 3"},
		{"required", j("{required: [a, b]}"), `{"a": 1}`, false, `required: missing properties: ["b"]`},
		{"additionalProperties false", j("{properties: {a: {}}, additionalProperties: false}"), `{"a": 1, "b": 2}`, false, `unexpected additional properties ["b"]`},
		{"additionalProperties schema", j("{additionalProperties: {type: string}}"), `{"a": "x", "b": 2}`, false, `at /*: type: got integer, want "string"`},
		{"minItems", j("{properties: {xs: {minItems: 2}}}"), `{"xs": [1]}`, false, "at /xs: minItems: array length 1 is less than 2"},
		{"pattern", j("{properties: {id: {pattern: '^[a-z]+-[0-9]+$'}}}"), `{"id": "abc"}`, false, `at /id: pattern: "abc" does not match regular expression "^[a-z]+-[0-9]+$"`},
		{"maxLength counts characters", j("{properties: {s: {maxLength: 4}}}"), `{"s": "日本語です"}`, false, "at /s: maxLength"},
		{"minimum as JSON numbers", j("{items: {minimum: 1.5}}"), "[2, 0.5]", false, "at /*: minimum: 0.5 is less than 1.5"},
		{"multipleOf", j("{items: {multipleOf: 3}}"), "[3, 4]", false, "at /*: multipleOf: 4 is not a multiple of 3"},
		{"internal ref", j(`{$defs: {pos: {type: integer, minimum: 1}}, type: array, items: {$ref: "#/$defs/pos"}}`), "[1, 2, 0]", false, "at /*: minimum: 0 is less than 1"},
		{"internal ref passes", j(`{$defs: {pos: {type: integer, minimum: 1}}, type: array, items: {$ref: "#/$defs/pos"}}`), "[1, 2]", true, ""},
		{"recursive ref", j(`{type: object, properties: {next: {$ref: "#"}}}`), `{"next": {"next": 5}}`, false, `at /next/next: type: got integer, want "object"`},
		{"nested path", j("{type: object, properties: {order: {type: object, properties: {items: {type: array, items: {type: object, required: [qty], properties: {qty: {type: integer}}}}}}}}"),
			`{"order": {"items": [{"qty": 1}, {"qty": "two"}]}}`, false, `the JSON does not match the schema: at /order/items/*/qty: type: got string, want "integer"`},
		{"prefixItems index", j("{prefixItems: [{type: string}, {type: integer}]}"), `["a", "b"]`, false, `at /1: type: got string, want "integer"`},
		{"subschema with $id", j(`{properties: {a: {$id: "a.json", properties: {b: {type: string}}}}}`), `{"a": {"b": 1}}`, false, `at /a/b: type: got integer`},
		{"anyOf reasons on one line", j("{items: {anyOf: [{type: string}, {type: integer}]}}"), "[1.5]", false, `at /*: anyOf: none matches: type: got number, want "string"; type: got number, want "integer"`},
		{"oneOf none", j("{items: {oneOf: [{type: string}, {type: boolean}]}}"), "[1]", false, "at /*: oneOf: none matches"},
		{"oneOf two", j("{items: {oneOf: [{type: number}, {type: integer}]}}"), "[1]", false, "at /*: oneOf: more than one matches"},
		{"not", j("{items: {not: {type: string}}}"), `["a"]`, false, "at /*: not: it matches the schema under not"},
		{"contains", j("{contains: {type: string}}"), "[1, 2]", false, "contains: no item matches"},
		{"draft-07 items list", j(`{$schema: "http://json-schema.org/draft-07/schema#", items: [{type: string}]}`), "[1]", false, `at /0: type: got integer, want "string"`},
		{"draft-07 dependencies", j(`{$schema: "http://json-schema.org/draft-07/schema#", dependencies: {a: [b]}}`), `{"a": 1}`, false, `dependentRequired["a"]: missing properties ["b"]`},
		{"2020-12 with #", j(`{$schema: "https://json-schema.org/draft/2020-12/schema#", type: array}`), `{"a": 1}`, false, `type: got object, want "array"`},
		{"false schema", j("false"), "[]", false, "does not match the schema"},
		{"long reason cut", j("{items: {enum: [" + strings.Repeat("aaaaaaaaaa, ", 30) + "b]}}"), `["c"]`, false, "…"},
	})
}

func TestJSONSchema_WhyIsOneLine(t *testing.T) {
	task := taskWith(t, "json:\n  schema: {items: {anyOf: [{type: string}, {type: object, required: ["+strings.Repeat("k, ", 40)+"z]}]}}\n")
	v, err := task.Grade(context.Background(), Env{}, "[1]")
	if err != nil || v.Pass {
		t.Fatalf("Grade = %+v, %v; want a failure", v, err)
	}
	why := strings.TrimPrefix(v.Why, "the JSON does not match the schema: ")
	if strings.Contains(why, "\n") || len([]rune(why)) > 160 {
		t.Errorf("Why is not one line of at most 160 characters: %q", why)
	}
}

func TestJSONSchema_ConcurrentGrades(t *testing.T) {
	task := taskWith(t, "json:\n  schema: {type: array, items: {$ref: \"#/$defs/p\"}, $defs: {p: {type: integer}}}\n")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			v, err := task.Grade(context.Background(), Env{}, fmt.Sprintf("[%d, 1.5]", i))
			if err != nil || v.Pass || !strings.Contains(v.Why, "at /*: type: got number") {
				t.Errorf("Grade = %+v, %v", v, err)
			}
		})
	}
	wg.Wait()
}

func TestJSONSchema_FieldsKeepNumbers(t *testing.T) {
	// The schema sees float64s; the fields compare as before.
	task := taskWith(t, "json:\n  schema: {type: object}\n  fields: {n: 12345678901234567890}\n")
	v, err := task.Grade(context.Background(), Env{}, `{"n": 12345678901234567890}`)
	if err != nil || !v.Pass {
		t.Fatalf("Grade = %+v, %v; want a pass", v, err)
	}
}

// FuzzJSONSchema compiles schemas and checks answers against those that
// compile: no panic, and no schema that recurses without end (which
// would overflow the stack and end the fuzzer).
func FuzzJSONSchema(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"integer"}}}`, `{"a":1.5}`},
		{`{"$ref":"#"}`, `[]`},
		{`{"allOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"anyOf":[{"$ref":"#"}]}}}`, `{}`},
		{`{"$dynamicAnchor":"m","items":{"$dynamicRef":"#m"}}`, `[[1]]`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"$ref":"#"}],"dependencies":{"a":{"$ref":"#"}}}`, `[{"a":1}]`},
		{`{"$id":"http://x/a","$defs":{"b":{"$id":"b","$anchor":"B","not":{"$ref":"a"}}},"$ref":"b#B"}`, `1`},
		{`{"prefixItems":[{"const":1}],"uniqueItems":true,"contains":{"minimum":2}}`, `[1,2,2]`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, schema, answer string) {
		var doc any
		if json.Unmarshal([]byte(schema), &doc) != nil || !isSchema(doc) {
			return
		}
		c, err := compileSchema(doc)
		if err != nil {
			return
		}
		if !json.Valid([]byte(answer)) {
			return
		}
		if why := c.check([]byte(answer)); strings.Contains(why, "\n") {
			t.Fatalf("a Why of two lines: %q", why)
		}
	})
}

func TestJSONSchema_KeywordsAreTheLibrarys(t *testing.T) {
	// The walk must know every keyword the library reads, or it would
	// miss a $ref loop or a value the library cannot take.
	names := map[string]bool{"type": true, "items": true, "dependencies": true} // read by its UnmarshalJSON
	st := reflect.TypeFor[jsonschema.Schema]()
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names[name] = true
		}
	}
	for name := range names {
		if _, ok := schemaKeywords[name]; !ok {
			t.Errorf("the library reads %q; schemaKeywords does not know it", name)
		}
	}
	for name := range schemaKeywords {
		if !names[name] {
			t.Errorf("schemaKeywords has %q; the library does not read it", name)
		}
	}
}
