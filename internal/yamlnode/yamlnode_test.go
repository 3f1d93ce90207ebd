package yamlnode

import (
	"testing"

	"github.com/goccy/go-yaml/parser"
)

func TestDescribe(t *testing.T) {
	for src, want := range map[string]string{
		"a: 1": "a mapping", "[1, 2]": "a list", "3.5": "a number", "true": "true/false", "hello": "text", "~": "nothing",
	} {
		f, err := parser.ParseBytes([]byte(src), 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := Describe(f.Docs[0].Body); got != want {
			t.Errorf("Describe(%q) = %q, want %q", src, got, want)
		}
	}
}
