package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// marshal is what encoding/json writes for v with HTML escaping off.
func marshal(t *testing.T, v any) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// FuzzMatchesEncodingJSON holds String, Strings, Float and Raw to encoding/json's
// bytes for the same values.
func FuzzMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\s/", "\b\f\n\r\t\x00\x1f\x7f", "<>&", "\u2028\u2029é", "\xff\xfe", "日本"} {
		f.Add(s, 0.5, []byte(` { "a" : [1, 2] } `))
	}
	f.Add("x", 1e21, []byte(`nul`))
	f.Add("x", 1e-7, []byte(`"a\u00e9"`))
	f.Add("x", -0.0, []byte(`[1,]`))
	f.Add("x", 123456789.125, []byte(`{"<":"&"}`))
	f.Fuzz(func(t *testing.T, s string, fl float64, raw []byte) {
		want, _ := marshal(t, s)
		if got := String(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("String(%q) = %s, encoding/json %s", s, got, want)
		}
		list := []string{s, "", s + "x"}[:len(s)%4%3] // empty, one or two
		if want, _ := marshal(t, list); !bytes.Equal(Strings(nil, list), want) {
			t.Fatalf("Strings(%q) = %s, encoding/json %s", list, Strings(nil, list), want)
		}
		want, werr := marshal(t, fl)
		got, gerr := Float(nil, fl)
		if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("Float(%v) = %s (%v), encoding/json %s (%v)", fl, got, gerr, want, werr)
		}
		want, werr = marshal(t, json.RawMessage(raw))
		got, gerr = Raw([]byte("x"), raw)
		if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("Raw(%q) = %s (%v), encoding/json %s (%v)", raw, got, gerr, want, werr)
		}
		if gerr != nil && string(got) != "x" {
			t.Fatalf("Raw(%q) failed but changed the buffer: %q", raw, got)
		}
	})
}

func TestFloat_RejectsWhatJSONCannotHold(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := Float(nil, f); err == nil {
			t.Errorf("Float(%v): no error", f)
		}
	}
	if got, _ := Float(nil, 1e-7); string(got) != "1e-7" {
		t.Errorf("Float(1e-7) = %s", got)
	}
}
