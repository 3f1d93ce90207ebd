package gemini

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSanitizeSchema(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"nil", ``, ``},
		{"null", `null`, ``},
		{"empty", `{}`, ``},
		{"only dropped keywords", `{"$schema":"x","additionalProperties":false}`, ``},
		{
			// An MCP tool schema as zod-to-json-schema emits it.
			name: "zod",
			in:   `{"type":"object","properties":{"path":{"type":"string","description":"File","minLength":1},"depth":{"type":"integer","exclusiveMinimum":0,"default":1}},"required":["path"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`,
			want: `{"properties":{"depth":{"default":1,"type":"integer"},"path":{"description":"File","minLength":1,"type":"string"}},"required":["path"],"type":"object"}`,
		},
		{
			// Pydantic: Optional fields, $defs and $ref, titles.
			name: "pydantic",
			in:   `{"$defs":{"Unit":{"enum":["c","f"],"title":"Unit","type":"string"}},"properties":{"unit":{"$ref":"#/$defs/Unit","description":"Unit to use"},"days":{"anyOf":[{"type":"integer"},{"type":"null"}],"default":null,"title":"Days"}},"required":["unit"],"title":"Args","type":"object"}`,
			want: `{"properties":{"days":{"default":null,"nullable":true,"title":"Days","type":"integer"},"unit":{"description":"Unit to use","enum":["c","f"],"title":"Unit","type":"string"}},"required":["unit"],"title":"Args","type":"object"}`,
		},
		{
			name: "recursive ref ends",
			in:   `{"definitions":{"node":{"type":"object","properties":{"next":{"$ref":"#/definitions/node"},"v":{"type":"number","format":"double"}}}},"$ref":"#/definitions/node"}`,
			want: `{"properties":{"next":{},"v":{"format":"double","type":"number"}},"type":"object"}`,
		},
		{
			name: "oneOf, allOf, not, const, non-string enum",
			in:   `{"oneOf":[{"type":"string","format":"uri"},{"type":"number","enum":[1,2]}],"allOf":[{"type":"string"}],"not":{"type":"null"},"properties":{"k":{"const":"v"},"e":{}}}`,
			want: `{"anyOf":[{"type":"string"},{"type":"number"}],"properties":{"e":{},"k":{"enum":["v"]}}}`,
		},
		{
			name: "type list and null type",
			in:   `{"type":["null","array"],"items":{"type":"null"},"maxItems":3}`,
			want: `{"items":{"nullable":true},"maxItems":3,"nullable":true,"type":"array"}`,
		},
		{
			name: "nested empty properties removed",
			in:   `{"type":"object","properties":{"opts":{"type":"object","properties":{}}}}`,
			want: `{"properties":{"opts":{"type":"object"}},"type":"object"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SanitizeSchema(json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("SanitizeSchema =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestSanitizeSchema_DeepNestingIsCut(t *testing.T) {
	in := strings.Repeat(`{"type":"array","items":`, 200) + `{"type":"string"}` + strings.Repeat(`}`, 200)
	got, err := SanitizeSchema(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(got), `"items"`); n > maxSchemaDepth+1 {
		t.Errorf("%d levels kept, want at most %d", n, maxSchemaDepth+1)
	}
}

func TestParameters_ObjectWithoutPropertiesIsLeftOut(t *testing.T) {
	for _, in := range []string{`{"type":"object"}`, `{"type":"object","properties":{},"additionalProperties":false}`, `{"type":"OBJECT"}`, `{}`} {
		if got, err := parameters(json.RawMessage(in)); err != nil || got != nil {
			t.Errorf("parameters(%s) = %s, %v; want nothing", in, got, err)
		}
	}
	if got, _ := parameters(json.RawMessage(`{"type":"string"}`)); string(got) != `{"type":"string"}` {
		t.Errorf("parameters of a string schema = %s", got)
	}
}
