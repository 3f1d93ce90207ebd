package yamledit

import (
	"errors"
	"slices"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"
)

var chainPath = []string{"routes", "default", "chain"}

// listAt reads the list at path from doc with a YAML decoder.
func listAt(t *testing.T, doc []byte, path []string) []string {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatalf("the result is no YAML: %v\n%s", err, doc)
	}
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("no mapping at %q in\n%s", k, doc)
		}
		v = m[k]
	}
	xs, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is %T, not a list, in\n%s", path, v, doc)
	}
	var out []string
	for _, x := range xs {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("entry %v is %T, not a string, in\n%s", x, x, doc)
		}
		out = append(out, s)
	}
	return out
}

func TestSetList(t *testing.T) {
	items := []Item{{Value: "groq/llama-3.3-70b", Comment: "1. free"}, {Value: "local/qwen2.5:7b", Comment: "2. local"}}
	for _, tc := range []struct {
		name, src, want string
		path            []string
	}{
		{
			name: "a block list is rewritten in place; everything else stays",
			src: `# my config
providers:
  groq: {pool: free}   # 無料
routes:
  default:   # the main one
    # chosen by hand
    chain:
      - a/x   # old
      # - b/y  (off for now)
      - c/z
    budget: batch   # keep
  other:
    chain: [a/x]
`,
			want: `# my config
providers:
  groq: {pool: free}   # 無料
routes:
  default:   # the main one
    # chosen by hand
    chain:
      - groq/llama-3.3-70b  # 1. free
      - "local/qwen2.5:7b"  # 2. local
    budget: batch   # keep
  other:
    chain: [a/x]
`,
		},
		{
			name: "comments after the last entry stay with what follows",
			src:  "routes:\n  default:\n    chain:\n    - a/x\n    - c/z\n    # next: the budget\n    budget: batch\n",
			want: "routes:\n  default:\n    chain:\n    - groq/llama-3.3-70b  # 1. free\n    - \"local/qwen2.5:7b\"  # 2. local\n    # next: the budget\n    budget: batch\n",
		},
		{
			name: "a flow list stays a flow list, multi-byte text before it on the line",
			src:  "routes:\n  default: {説明: \"日本語\", chain: [a/x, c/z], budget: batch}  # 注\n",
			want: "routes:\n  default: {説明: \"日本語\", chain: [groq/llama-3.3-70b, \"local/qwen2.5:7b\"], budget: batch}  # 注\n",
		},
		{
			name: "a new route goes after the last route, before the next section's comments",
			src:  "routes:\n  other:\n    chain: [a/x]\n    budget: batch\n\n# health\nhealth:\n  store: memory\n",
			want: "routes:\n  other:\n    chain: [a/x]\n    budget: batch\n  default:\n    chain:\n      - groq/llama-3.3-70b  # 1. free\n      - \"local/qwen2.5:7b\"  # 2. local\n\n# health\nhealth:\n  store: memory\n",
		},
		{
			name: "the indentation of the file is copied",
			src:  "routes:\n    other:\n        chain: [a/x]\n",
			want: "routes:\n    other:\n        chain: [a/x]\n    default:\n        chain:\n            - groq/llama-3.3-70b  # 1. free\n            - \"local/qwen2.5:7b\"  # 2. local\n",
		},
		{
			name: "no routes: at all: added at the end, a file without a last newline left without one",
			src:  "providers:\n  groq: {pool: free}",
			want: "providers:\n  groq: {pool: free}\nroutes:\n  default:\n    chain:\n      - groq/llama-3.3-70b  # 1. free\n      - \"local/qwen2.5:7b\"  # 2. local",
		},
		{
			name: "an empty document",
			src:  "",
			want: "routes:\n  default:\n    chain:\n      - groq/llama-3.3-70b  # 1. free\n      - \"local/qwen2.5:7b\"  # 2. local\n",
		},
		{
			name: "a route without a chain gets one",
			src:  "routes:\n  default:\n    budget: batch\n  other: {chain: [a/x]}\n",
			want: "routes:\n  default:\n    budget: batch\n    chain:\n      - groq/llama-3.3-70b  # 1. free\n      - \"local/qwen2.5:7b\"  # 2. local\n  other: {chain: [a/x]}\n",
		},
		{
			name: "an empty routes: key",
			src:  "routes:   # none yet\nhealth: {store: memory}\n",
			want: "routes:   # none yet\n  default:\n    chain:\n      - groq/llama-3.3-70b  # 1. free\n      - \"local/qwen2.5:7b\"  # 2. local\nhealth: {store: memory}\n",
		},
		{
			name: "a written null",
			src:  "routes:\n  default:\n    chain: ~   # todo\n",
			want: "routes:\n  default:\n    chain: [groq/llama-3.3-70b, \"local/qwen2.5:7b\"]   # todo\n",
		},
		{
			name: "a flow routes: mapping takes a new route",
			src:  "routes: {other: {chain: [a/x]}}\n",
			want: "routes: {other: {chain: [a/x]}, default: {chain: [groq/llama-3.3-70b, \"local/qwen2.5:7b\"]}}\n",
		},
		{
			name: "the last list of a file without a last newline",
			src:  "routes:\n  default:\n    chain:\n      - a/x",
			want: "routes:\n  default:\n    chain:\n      - groq/llama-3.3-70b  # 1. free\n      - \"local/qwen2.5:7b\"  # 2. local",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SetList([]byte(tc.src), chainPath, items)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, string(got)); d != "" {
				t.Errorf("-want +got:\n%s", d)
			}
			if l := listAt(t, got, chainPath); !slices.Equal(l, []string{"groq/llama-3.3-70b", "local/qwen2.5:7b"}) {
				t.Errorf("the list reads back as %q", l)
			}
		})
	}
}

// What cannot be set without touching more than the list is refused, and
// the source is left as it was.
func TestSetList_RefusesWhatIsShared(t *testing.T) {
	for name, src := range map[string]string{
		"an anchored chain":  "routes:\n  default:\n    chain: &c [a/x]\n  other:\n    chain: *c\n",
		"an aliased route":   "base: &b {chain: [a/x]}\nroutes:\n  default: *b\n",
		"routes is a list":   "routes:\n  - default\n",
		"chain is a mapping": "routes:\n  default:\n    chain: {a: 1}\n",
		"two documents":      "routes: {}\n---\nroutes: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			src := []byte(src)
			orig := string(src)
			_, err := SetList(src, chainPath, []Item{{Value: "p/m"}})
			if !errors.Is(err, ErrShape) {
				t.Fatalf("err = %v, want ErrShape", err)
			}
			if string(src) != orig {
				t.Fatal("the source was changed")
			}
		})
	}
}

// Values YAML would read as something else are quoted.
func TestScalar(t *testing.T) {
	for in, want := range map[string]string{
		"groq/llama-3.3-70b": "groq/llama-3.3-70b", "local/qwen2.5:7b": `"local/qwen2.5:7b"`, "yes": `"yes"`,
		"1.5": `"1.5"`, "a #b": `"a #b"`, "-x": `"-x"`, "x/y [z]": `"x/y [z]"`, "": `""`,
	} {
		if got := scalar(in); got != want {
			t.Errorf("scalar(%q) = %s, want %s", in, got, want)
		}
		doc := []byte("k: [" + scalar(in) + "]\n")
		if l := listAt(t, doc, []string{"k"}); len(l) != 1 || l[0] != in {
			t.Errorf("%s reads back as %q", scalar(in), l)
		}
	}
}
