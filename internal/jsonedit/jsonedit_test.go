package jsonedit

import (
	"encoding/json"
	"reflect"
	"testing"
)

// want is what Object must give, by encoding/json: body's members without
// the owned keys, then set.
func want(t testing.TB, body []byte, drop []string, set []Field) (map[string]any, bool) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, false
	}
	for _, k := range drop {
		delete(m, k)
	}
	for _, f := range set {
		var v any
		if err := json.Unmarshal(f.Value, &v); err != nil {
			t.Fatalf("bad set value %q", f.Value)
		}
		m[f.Key] = v
	}
	return m, true
}

func check(t testing.TB, body []byte, drop []string, set []Field) {
	t.Helper()
	got, ok := Object([]byte("prefix"), body, drop, set...)
	w, wok := want(t, body, drop, set)
	if ok != wok {
		t.Fatalf("Object(%q) ok = %v, encoding/json says %v", body, ok, wok)
	}
	if string(got[:6]) != "prefix" {
		t.Fatalf("Object wrote over dst: %q", got)
	}
	if !ok {
		if len(got) != 6 {
			t.Fatalf("a failed Object left %q in dst", got[6:])
		}
		return
	}
	var m map[string]any
	if err := json.Unmarshal(got[6:], &m); err != nil {
		t.Fatalf("Object(%q) = %q: not JSON: %v", body, got[6:], err)
	}
	if !reflect.DeepEqual(m, w) {
		t.Fatalf("Object(%q) = %s, want %v", body, got[6:], w)
	}
}

func TestObject(t *testing.T) {
	set := []Field{{"model", []byte(`"llama"`)}, {"stream", []byte(`true`)}}
	for _, body := range []string{
		`{"model":"route","messages":[{"role":"user","content":"hi"}],"seed":7,"logit_bias":{"50256":-100}}`,
		` { "model" : "a" , "n" : 2 } `,
		`{}`,
		`{"models":["a","b"],"stream":false}`,
		`{"k\u00e9y":1,"model":"x"}`, // an escaped key: the slow path
		`{"model":"x","model":"y","extra":{"a":[1,{"b":null}]}}`, // a repeated key
		`{"a":1}{}`, `[1]`, `{"a":}`, `null`, ``,
	} {
		check(t, []byte(body), []string{"models"}, set)
	}
}

func TestObject_KeepsBytesAndOrder(t *testing.T) {
	got, ok := Object(nil, []byte(`{"a": 1.50, "model":"x", "b":"\u00e9"}`), nil, Field{"model", []byte(`"y"`)})
	if !ok || string(got) != `{"a":1.50,"b":"\u00e9","model":"y"}` {
		t.Fatalf("got %s, %v", got, ok)
	}
}

func TestValue(t *testing.T) {
	for _, tt := range []struct {
		body, key, want string
		ok              bool
	}{
		{`{"stream_options":{"include_usage":false},"n":2}`, "stream_options", `{"include_usage":false}`, true},
		{`{"a":1}`, "b", "", false},
		{`{"k\u00e9y":1,"a":[2]}`, "a", "[2]", true},
		{`not json`, "a", "", false},
	} {
		v, ok := Value([]byte(tt.body), tt.key)
		if ok != tt.ok || string(v) != tt.want {
			t.Errorf("Value(%s, %s) = %s, %v; want %s, %v", tt.body, tt.key, v, ok, tt.want, tt.ok)
		}
	}
}

func FuzzObject(f *testing.F) {
	for _, s := range []string{`{"model":"a","x":[1,2,{"y":"z"}]}`, `{"a":"\ud83d\ude00","model":null}`, `{}`, `{"model":1,"model":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		check(t, body, []string{"models", "detour"}, []Field{{"model", []byte(`"m"`)}})
	})
}
