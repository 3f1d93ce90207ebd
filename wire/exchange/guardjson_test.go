package exchange

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// jsonKey has a slash, which some encoders escape (\/), and starts with a
// letter that names an escape (\n).
const jsonKey = "nK7/pQ2xW9vL4mR8sT3yZ6bA"

// everyU writes s as \u00XX escapes.
func everyU(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\u%04x`, s[i])
	}
	return b.String()
}

func TestRedactJSON_KeyAsItIsAndEscapedAsJSONAllows(t *testing.T) {
	ks := NewKeySet(jsonKey)
	for _, tc := range []struct {
		name, lit, want string // lit: the inside of a JSON string
	}{
		{"as it is", "key " + jsonKey + " end", "key [redacted] end"},
		{`slash as \/`, "key " + strings.ReplaceAll(jsonKey, "/", `\/`) + " end", "key [redacted] end"},
		{`every byte as \u00XX`, "key " + everyU(jsonKey) + " end", "key [redacted] end"},
		{`upper-case hex`, `key \u006E\u004B\u0037` + jsonKey[3:], "key [redacted]"},
		{`after an escape`, `line\n` + jsonKey + `\"`, `line\n[redacted]\"`},
		{`an escape's letter is not the key's`, `\` + jsonKey, `\` + jsonKey},
		{`an escaped backslash before it`, `\\` + jsonKey, `\\[redacted]`},
		{`inside \u escape digits`, `\u00` + jsonKey, `\u00` + jsonKey},
		{"repeated, touching", jsonKey + jsonKey, "[redacted]"},
		{"no key: the escapes stay as they were", `a\/b \u0041 ` + jsonKey[:10], `a\/b \u0041 ` + jsonKey[:10]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := `data: {"choices":[{"delta":{"content":"` + tc.lit + `"}}]}` + "\n\n"
			prefix := "event: x\n"
			out, changed := ks.RedactJSON([]byte(prefix), []byte(event))
			if !changed {
				out = append(out, event...)
			}
			got := string(out)
			if changed != (tc.lit != tc.want) {
				t.Errorf("changed %v for %q", changed, tc.lit)
			}
			want := prefix + `data: {"choices":[{"delta":{"content":"` + tc.want + `"}}]}` + "\n\n"
			if got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
}

// The rest of the text is written with the needless escapes of key bytes
// decoded once a key is found: the same JSON value.
func TestRedactJSON_DecodedEscapesKeepTheValue(t *testing.T) {
	ks := NewKeySet(jsonKey)
	in := `{"a":"x\/y \u004E \u00e9 \"q\" ` + strings.ReplaceAll(jsonKey, "/", `\/`) + `","b":[1,"\\n"]}`
	out, _ := ks.RedactJSON(nil, []byte(in))
	var before, after map[string]any
	if err := json.Unmarshal([]byte(in), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatalf("not JSON after: %v\n%s", err, out)
	}
	want := strings.Replace(before["a"].(string), jsonKey, "[redacted]", 1)
	if after["a"] != want || fmt.Sprint(after["b"]) != fmt.Sprint(before["b"]) {
		t.Errorf("got %v, want a=%q b=%v", after, want, before["b"])
	}
}

func BenchmarkRedactJSON_NoKey(b *testing.B) {
	ks := NewKeySet(guardKey, jsonKey, "sk-ant-api03-"+strings.Repeat("x7Q", 30), "AIzaSyD-"+strings.Repeat("k9", 16))
	event := []byte(`data: {"id":"chatcmpl-Cw1Uv3kKqgX0CqZb7zTgM4hRYjLQe","object":"chat.completion.chunk","created":1733000000,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{"content":" the quick brown fox\n"},"finish_reason":null}]}` + "\n\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, changed := ks.RedactJSON(nil, event); changed {
			b.Fatal("changed")
		}
	}
}

func BenchmarkGuard_NoKey(b *testing.B) {
	ks := NewKeySet(guardKey, jsonKey, "sk-ant-api03-"+strings.Repeat("x7Q", 30), "AIzaSyD-"+strings.Repeat("k9", 16))
	var g Guard
	g.Reset(ks)
	pieces := []string{" the", " quick", " brown", " fox", " jumps", " over", " lazy", " dogs"}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pieces {
			g.Next(p)
			if g.Hold() {
				b.Fatal("held")
			}
			g.Out(p)
		}
	}
}
