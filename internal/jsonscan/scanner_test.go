package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

var seeds = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `-1.5e+3`, `1E2`, `01`, `1.`, `.5`, `-`, `"x"`,
	`"a\nb\u00e9\ud800"`, `"\x"`, `"\u12"`, "\"a\tb\"", "\"\xff\"", `{"a":[1,{"b":null}],"c":"d"}`,
	`{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"\u0061":1}`, ` [ 1 , 2 ] `, `{"a":1}x`, `123456789`,
	`1234567890`, `-123`, `- 1`, `1e400`, `"\/\b\f\r\t\"\\"`, strings.Repeat("[", 70) + strings.Repeat("]", 70),
}

// FuzzSkipValueMatchesJSON holds SkipValue and Raw to encoding/json: what
// they accept is valid JSON and Raw is what json.RawMessage would hold;
// valid JSON within MaxDepth is accepted.
func FuzzSkipValueMatchesJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		p := Scanner{S: data}
		raw, ok := p.Raw()
		ok = ok && p.End()
		valid := json.Valid([]byte(data))
		if ok && !valid {
			t.Fatalf("SkipValue accepted %q, which encoding/json rejects", data)
		}
		if ok {
			var want json.RawMessage
			if err := json.Unmarshal([]byte(data), &want); err != nil || string(want) != raw {
				t.Fatalf("Raw(%q) = %q, encoding/json %q (%v)", data, raw, want, err)
			}
		}
		if valid && !ok && depth(data) < MaxDepth {
			t.Fatalf("SkipValue rejected valid JSON %q", data)
		}
	})
}

// depth is the deepest bracket nesting of s (strings ignored roughly: a
// bound for the completeness check only).
func depth(s string) int {
	d, m := 0, 0
	for _, c := range s {
		switch c {
		case '[', '{':
			d++
			m = max(m, d)
		case ']', '}':
			d--
		}
	}
	return m
}

// FuzzScalarsMatchJSON holds Int, Float, Bool and NullableString to
// encoding/json decoding the same token into the same Go type.
func FuzzScalarsMatchJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		{
			p := Scanner{S: data}
			var got int
			if p.Int(&got) && p.End() {
				var want int
				if err := json.Unmarshal([]byte(data), &want); err != nil || want != got {
					t.Fatalf("Int(%q) = %d, encoding/json %d (%v)", data, got, want, err)
				}
			}
		}
		{
			p := Scanner{S: data}
			var got float64
			if p.Float(&got) && p.End() {
				var want float64
				if err := json.Unmarshal([]byte(data), &want); err != nil || want != got {
					t.Fatalf("Float(%q) = %v, encoding/json %v (%v)", data, got, want, err)
				}
			}
		}
		{
			p := Scanner{S: data}
			var got bool
			if p.Bool(&got) && p.End() {
				var want bool
				if err := json.Unmarshal([]byte(data), &want); err != nil || want != got {
					t.Fatalf("Bool(%q) = %v, encoding/json %v (%v)", data, got, want, err)
				}
			}
		}
		{
			p := Scanner{S: data}
			got := "unset"
			if p.NullableString(&got) && p.End() {
				want := "unset"
				if err := json.Unmarshal([]byte(data), &want); err != nil || want != got {
					t.Fatalf("NullableString(%q) = %q, encoding/json %q (%v)", data, got, want, err)
				}
			}
		}
	})
}

func TestScanner_ReadsTheCommonShapes(t *testing.T) {
	p := Scanner{S: ` {"model":"m","n":-12,"t":0.5,"s":true,"x":{"deep":[1,"two",null]},"r":[1, 2]} `}
	var model, raw string
	var n int
	var tf float64
	var s bool
	ok := p.Object(func(key string) bool {
		switch key {
		case "model":
			return p.NullableString(&model)
		case "n":
			return p.Int(&n)
		case "t":
			return p.Float(&tf)
		case "s":
			return p.Bool(&s)
		case "r":
			var ok bool
			raw, ok = p.Raw()
			return ok
		}
		return p.SkipValue()
	}) && p.End()
	if !ok || model != "m" || n != -12 || tf != 0.5 || !s || raw != "[1, 2]" {
		t.Fatalf("ok=%v model=%q n=%d t=%v s=%v raw=%q", ok, model, n, tf, s, raw)
	}
	for _, bad := range []string{`- 1`, `01`, `1234567890`} {
		p := Scanner{S: bad}
		var n int
		if p.Int(&n) && p.End() {
			t.Errorf("Int accepted %q", bad)
		}
	}
	if !Folds("MODEL", "messages", "model") || Folds("modelx", "model") {
		t.Error("Folds")
	}
}
