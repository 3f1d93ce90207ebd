package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// maxSchemaDepth bounds how deep SanitizeSchema follows nested schemas and
// $ref expansions.
const maxSchemaDepth = 32

// schemaFormats are the values of "format" the Gemini API accepts; any
// other ("email", "uri", ...) fails the request (Firebase AI Logic
// reference, SchemaShared.format; Vertex AI Schema reference).
var schemaFormats = map[string]bool{
	"enum": true, "date-time": true, "float": true, "double": true, "int32": true, "int64": true,
}

// SanitizeSchema turns a JSON Schema (a tool's parameters, a json_schema
// response format) into the subset of OpenAPI 3.0 that Gemini's Schema
// accepts: Gemini rejects any unknown field of a schema with 400
// INVALID_ARGUMENT ("Invalid JSON payload received. Unknown name ..."),
// so only its fields are kept (ai.google.dev/api/caching#Schema; rejected
// "additional_properties" google/adk-python#2734, "const"
// danny-avila/LibreChat#11761, "ref" mnfst/llm-gateway#1858):
// type, format, title, description, nullable, enum, properties, required,
// items, anyOf, propertyOrdering, minItems, maxItems, minLength,
// maxLength, minProperties, maxProperties, minimum, maximum, pattern,
// example and default.
//
// Dropped, at every level: $schema, $id, $comment, $defs, definitions,
// additionalProperties, patternProperties, unevaluatedProperties, allOf,
// not, if/then/else, dependentRequired, dependentSchemas,
// exclusiveMinimum, exclusiveMaximum, multipleOf, uniqueItems, examples,
// readOnly, writeOnly, deprecated, contentEncoding, contentMediaType,
// strict, and every other unknown keyword. Rewritten:
//
//   - "$ref": "#/$defs/X" (or "#/definitions/X") is replaced by the
//     definition (recursive references end in an empty schema);
//   - "type": ["string", "null"] becomes "type": "string" with
//     "nullable": true, and an anyOf member {"type": "null"} becomes
//     "nullable": true (a single member left replaces the anyOf);
//   - "oneOf" becomes "anyOf"; "const": "x" becomes "enum": ["x"];
//   - "enum" is kept only when every value is a string, "format" only
//     when Gemini knows it (enum, date-time, float, double, int32, int64),
//     "required" only for names that are in "properties";
//   - an empty "properties" object is removed ("should be non-empty for
//     OBJECT type").
//
// A nil or empty schema gives nil. An error means the schema is not JSON
// or not an object.
func SanitizeSchema(schema json.RawMessage) (json.RawMessage, error) {
	schema = json.RawMessage(bytes.TrimSpace(schema))
	if len(schema) == 0 || string(schema) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("schema is not a JSON object")
	}
	s := sanitizer{defs: map[string]any{}}
	for _, k := range []string{"definitions", "$defs"} {
		if m, ok := root[k].(map[string]any); ok {
			for name, d := range m {
				s.defs["#/"+k+"/"+name] = d
			}
		}
	}
	out := s.clean(root, 0, nil)
	if len(out) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// parameters sanitizes a tool's parameters: as SanitizeSchema, and an
// object schema without properties is left out altogether (Gemini rejects
// "parameters.properties: should be non-empty for OBJECT type").
func parameters(schema json.RawMessage) (json.RawMessage, error) {
	out, err := SanitizeSchema(schema)
	if err != nil || out == nil {
		return out, err
	}
	var m struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
		AnyOf      []any          `json:"anyOf"`
	}
	if json.Unmarshal(out, &m) == nil && len(m.Properties) == 0 && len(m.AnyOf) == 0 &&
		(m.Type == "" || strings.EqualFold(m.Type, "object")) {
		return nil, nil
	}
	return out, nil
}

// sanitizer holds the definitions $ref may name.
type sanitizer struct {
	defs map[string]any
}

// clean returns the Gemini form of one schema object; refs are the $ref
// targets being expanded above it (a repeat is a cycle).
func (s *sanitizer) clean(m map[string]any, depth int, refs []string) map[string]any {
	out := map[string]any{}
	if depth > maxSchemaDepth {
		return out
	}
	if ref, ok := m["$ref"].(string); ok {
		def, found := s.defs[ref].(map[string]any)
		for _, r := range refs {
			if r == ref {
				found = false
			}
		}
		if found {
			out = s.clean(def, depth+1, append(refs, ref))
		}
		// Keywords beside the $ref (a description) win over the target's.
	}
	for k, v := range m {
		switch k {
		case "type":
			s.cleanType(out, v)
		case "format":
			if f, ok := v.(string); ok && schemaFormats[f] {
				out[k] = f
			}
		case "title", "description", "pattern":
			if str, ok := v.(string); ok {
				out[k] = str
			}
		case "nullable":
			if b, ok := v.(bool); ok {
				out[k] = b
			}
		case "enum":
			if e, ok := stringList(v); ok && len(e) > 0 {
				out[k] = e
			}
		case "const":
			if str, ok := v.(string); ok && m["enum"] == nil {
				out["enum"] = []string{str}
			}
		case "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "minimum", "maximum":
			if n, ok := v.(json.Number); ok {
				out[k] = n
			}
		case "propertyOrdering":
			if e, ok := stringList(v); ok {
				out[k] = e
			}
		case "example", "default":
			out[k] = v
		case "items":
			if im, ok := v.(map[string]any); ok {
				out[k] = s.clean(im, depth+1, refs)
			}
		case "properties":
			pm, ok := v.(map[string]any)
			if !ok {
				continue
			}
			props := map[string]any{}
			for name, p := range pm {
				if ps, ok := p.(map[string]any); ok {
					props[name] = s.clean(ps, depth+1, refs)
				}
			}
			if len(props) > 0 {
				out[k] = props
			}
		case "anyOf", "oneOf":
			if k == "oneOf" && m["anyOf"] != nil {
				continue
			}
			s.cleanAnyOf(out, v, depth, refs)
		}
	}
	if req, ok := stringList(m["required"]); ok {
		props, _ := out["properties"].(map[string]any)
		var keep []string
		for _, r := range req {
			if _, ok := props[r]; ok {
				keep = append(keep, r)
			}
		}
		if len(keep) > 0 {
			out["required"] = keep
		}
	}
	return out
}

// cleanType reads "type": a string, or a list whose "null" member becomes
// nullable.
func (s *sanitizer) cleanType(out map[string]any, v any) {
	switch t := v.(type) {
	case string:
		if t == "null" {
			out["nullable"] = true
			return
		}
		out["type"] = t
	case []any:
		for _, e := range t {
			if str, ok := e.(string); ok {
				if str == "null" {
					out["nullable"] = true
				} else if out["type"] == nil {
					out["type"] = str
				}
			}
		}
	}
}

// cleanAnyOf reads anyOf (or oneOf): members {"type":"null"} become
// nullable, and a single member left is merged into out.
func (s *sanitizer) cleanAnyOf(out map[string]any, v any, depth int, refs []string) {
	list, ok := v.([]any)
	if !ok {
		return
	}
	var members []any
	for _, e := range list {
		em, ok := e.(map[string]any)
		if !ok {
			continue
		}
		c := s.clean(em, depth+1, refs)
		if t, _ := em["type"].(string); t == "null" && len(c) == 1 {
			out["nullable"] = true
			continue
		}
		members = append(members, c)
	}
	switch len(members) {
	case 0:
	case 1:
		for k, v := range members[0].(map[string]any) {
			if _, set := out[k]; !set {
				out[k] = v
			}
		}
	default:
		out["anyOf"] = members
	}
}

// stringList returns v as a list of strings; ok is false when v is not a
// list or holds anything else.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		str, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, str)
	}
	return out, true
}
