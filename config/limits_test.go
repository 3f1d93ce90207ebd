package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// nested returns n lines, each indented one space more than the last,
// each a key whose value is the next.
func nested(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	return b.String()
}

// keys returns a mapping of n keys at the top level.
func keys(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + ": v\n")
	}
	return b.String()
}

func TestLimits_RefuseBeforeParsing(t *testing.T) {
	tests := []struct {
		name string
		src  string
		// at is where the message starts: file, line and column.
		at, hint string
	}{
		{"100,000 nested [", strings.Repeat("[", 100_000), "detour.yaml:1:64: ", "nest 65 levels deep here, past the most a config may nest (64 levels"},
		{"nested { after a key", "routes: " + strings.Repeat("{a: ", 70), "detour.yaml:1:", "past the most a config may nest (64 levels"},
		{"nested brackets over lines", "a:\n" + strings.Repeat("  [\n", 80), "detour.yaml:65:3: ", "nest 65 levels deep"},
		{"compact nested lists", strings.Repeat("- ", 100_000) + "x\n", "detour.yaml:1:127: ", "nest 65 levels deep"},
		{"indented mappings", nested(100), "detour.yaml:65:65: ", "nest 65 levels deep"},
		{"entries the YAML library nests at one column", strings.Repeat("-\n0:\n", 100), "detour.yaml:65:1: ", "nest 65 levels deep"},
		{"brackets under indentation", nested(40) + strings.Repeat(" ", 40) + "k: " + strings.Repeat("[", 30), "detour.yaml:41:", "nest 65 levels deep"},
		{"a file past 1 MiB", "a: " + strings.Repeat("x", MaxFileSize), "detour.yaml:1:1048577: ", "larger than 1048576 bytes (1 MiB)"},
		{"the size limit names the line it passes", strings.Repeat("# a comment line\n", MaxFileSize/17+1), "detour.yaml:61681:17: ", "larger than 1048576 bytes"},
		{"too many values", "a: [" + strings.Repeat("x,", 30_000) + "x]\n", "detour.yaml:1:", "more than 50000 words and punctuation marks"},
		{"too many comments", strings.Repeat("#\n", 50_001), "detour.yaml:50001:1: ", "more than 50000 words"},
		{"too many keys in one mapping", keys(1001), "detour.yaml:1001:1: ", "this mapping or list has more than 1000 entries"},
		{"too many entries in one list", "chain:\n" + strings.Repeat("- a/b\n", 1001), "detour.yaml:1002:1: ", "more than 1000 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("detour.yaml", []byte(tt.src))
			var errs Errors
			if !errors.As(err, &errs) || len(errs) != 1 {
				t.Fatalf("Parse error = %v, want one problem", err)
			}
			if !errors.Is(err, ErrLimit) {
				t.Errorf("the problem does not wrap ErrLimit: %v", err)
			}
			msg := errs[0].Error()
			if !strings.HasPrefix(msg, tt.at) || !strings.Contains(msg, tt.hint) {
				t.Errorf("message:\n%.300s\nwant it to start with %q and contain %q", msg, tt.at, tt.hint)
			}
		})
	}
}

// TestLimits_FailFastWithBoundedMemory is the case: a 200 KB file
// of 100,000 nested "[" drove the YAML parser past 15 GB. Refused before
// parsing, it and the other hostile files cost next to nothing.
func TestLimits_FailFastWithBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, []byte("a: "+strings.Repeat("x", 8<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		load func() error
	}{
		{"100,000 nested [", func() error { _, err := Parse("f.yaml", []byte(strings.Repeat("[", 100_000))); return err }},
		{"100,000 nested {a:", func() error { _, err := Parse("f.yaml", []byte(strings.Repeat("{a: ", 100_000))); return err }},
		{"500,000 compact -", func() error { _, err := Parse("f.yaml", []byte(strings.Repeat("- ", 500_000))); return err }},
		{"a mapping of 100,000 keys", func() error { _, err := Parse("f.yaml", []byte(keys(100_000))); return err }},
		{"an 8 MiB file, loaded", func() error { _, err := Load(huge); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			allocated := allocatedBy(func() { err = tt.load() })
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("err = %.200v, want ErrLimit", err)
			}
			if allocated > 10<<20 {
				t.Errorf("refusing it allocated %d MiB, want under 10 MiB", allocated>>20)
			}
		})
	}
}

// allocatedBy returns the bytes f allocates (the inputs made before it are
// not counted).
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLimits_RealConfigsPass checks that the limits leave room: the
// example config, and every shape a config is written in, stay far below
// them, and YAML that looks deep but is text does not count.
func TestLimits_RealConfigsPass(t *testing.T) {
	example, err := os.ReadFile("../examples/detour.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		src      string
		maxDepth int
	}{
		{"examples/detour.yaml", string(example), 8},
		{"brackets in quotes and comments", "a: \"[[[[[[\" # [[[[[[[[\nb: '{{{{{{'\nd: \"\\\"[[[[\"\n", 1},
		{"brackets closed in plain text", "a: see [1] and {2}, x[y]\n", 2},
		{"brackets in a block scalar", "a: |\n  [[[[[[[[[[[[[[[[[[[[\n  {{{{{{{{{{{{{{{{{{{{\nb: >-\n  [[[[[[[[[[[\n", 1},
		{"a block scalar in a list", "- a: |\n    [[[[[[[[[\n  b: 1\n", 2},
		{"a quoted scalar over lines", "a: \"[[[[[\n  [[[[[[[[\"\nb: '[[[[\n  ]]'\n", 1},
		{"flow collections", "a: [1, [2, {b: [3]}]]\n", 5},
		{"compact lists", "- - - x\n", 4},
		{"a key after a list entry", "- a:\n    b: c\n", 3},
		{"a CRLF file", "a:\r\n  b: [1]\r\n", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tokens, e := tokenize([]byte(tt.src), fileLimits)
			if e != nil {
				t.Fatalf("limits: %v", e)
			}
			st, _ := walkTokens(tokens, fileLimits)
			if st.depth > tt.maxDepth {
				t.Errorf("depth %d, want at most %d", st.depth, tt.maxDepth)
			}
		})
	}
}

// TestLimits_AtTheLimits checks the limits are where they say: a
// document exactly at each parses (the limit is not an error), one past
// it does not.
func TestLimits_AtTheLimits(t *testing.T) {
	flow := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tt := range []struct {
		name    string
		at, far string
	}{
		{"depth", "a: " + flow(MaxDepth-1) + "\n", "a: " + flow(MaxDepth) + "\n"},
		{"entries", keys(MaxEntries), keys(MaxEntries + 1)},
		{"size", "#" + strings.Repeat("x", MaxFileSize-2) + "\n", "#" + strings.Repeat("x", MaxFileSize-1) + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, e := tokenize([]byte(tt.at), fileLimits); e != nil {
				t.Errorf("at the limit: %v", e)
			}
			if _, e := tokenize([]byte(tt.far), fileLimits); e == nil {
				t.Error("past the limit: no error")
			}
		})
	}
}

// FuzzLimits checks the limits against the YAML library itself, under
// limits small enough for short inputs to reach: the byte scan never
// counts far fewer words and punctuation marks than the library makes
// tokens (which bounds what tokenizing costs), and a document the checks
// let through never nests deeper, once parsed, than the depth limit, nor
// deeper in brackets than the library's tokens say. A check that counted
// less would let a hostile file through to the parser.
func FuzzLimits(f *testing.F) {
	for _, s := range []string{
		"a: [1, [2, {b: [3]}]]\n", "- - - x\n", "- a:\n    b: c\n", "a: |\n  [[[\nb: [x]\n",
		"a: \"x\n[[\" [[\n", "? [a]\n: [b]\n", "\"a\":[[b]]\n", "--- [[a]]\n... [b]\n", "a: 'it''s' [[\n",
		"a: &x [*x]\n", "a: !t [[1]]\n", "a:\r[[\r]]\r", "%YAML 1.2\n---\n[a]\n", "- |\n x\n- [[y]]\n", "a: b #[[\nc: [d] # ]]\n",
		strings.Repeat("[", 40), nested(20), "k: >2\n   x\n  [[[\n", "\xef\xbb\xbf[[a]]", "a: [b, # c\n  [d]]\n",
		"-\n0:\n-\n0:\n-\n0:\n", "a:\n- b:\n  - c:\n    - d\n", "&%%%%%%00", "% {",
	} {
		f.Add([]byte(s), uint8(4))
	}
	f.Fuzz(func(t *testing.T, data []byte, depth uint8) {
		if len(data) > 4096 {
			return
		}
		lim := limits{depth: int(depth%8) + 2, entries: 4}
		st, e := scanBytes(data, limits{})
		if e != nil {
			t.Fatalf("a scan without limits failed: %v", e)
		}
		tokens := lexer.Tokenize(string(data))
		if n := len(tokens); n > 2*st.nodes+2 {
			t.Fatalf("the scan counted %d words and marks, the library made %d tokens", st.nodes, n)
		}
		if _, e := tokenize(data, lim); e != nil {
			if !errors.Is(e, ErrLimit) || e.Line < 1 || e.Column < 0 || e.Msg == "" {
				t.Fatalf("limit problem %#v", e)
			}
			return
		}
		// The parser reads no further than the lexer's first invalid
		// token, so only a document without one can nest.
		if lf := lexFlow(tokens); tokens.InvalidToken() == nil && lf > lim.depth {
			t.Fatalf("let through brackets %d deep, past the limit %d", lf, lim.depth)
		}
		file, err := parser.Parse(tokens, 0, parser.AllowDuplicateMapKey())
		if err != nil {
			return
		}
		for _, doc := range file.Docs {
			if d := treeDepth(doc.Body, 0); d > lim.depth {
				t.Fatalf("let through a tree %d deep, past the limit %d", d, lim.depth)
			}
		}
	})
}

// lexFlow returns the deepest nesting of brackets among tokens.
func lexFlow(tokens token.Tokens) int {
	depth, deepest := 0, 0
	for _, tk := range tokens {
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			depth++
			deepest = max(deepest, depth)
		case token.SequenceEndType, token.MappingEndType:
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

// treeDepth returns how deep mappings and lists nest in n, from depth.
func treeDepth(n ast.Node, depth int) int {
	if depth > 1000 {
		return depth
	}
	deepest := depth
	visit := func(c ast.Node, d int) {
		if c != nil {
			deepest = max(deepest, treeDepth(c, d))
		}
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		for _, mv := range v.Values {
			visit(mv.Key, depth+1)
			visit(mv.Value, depth+1)
		}
		deepest = max(deepest, depth+1)
	case *ast.MappingValueNode:
		visit(v.Key, depth+1)
		visit(v.Value, depth+1)
		deepest = max(deepest, depth+1)
	case *ast.SequenceNode:
		for _, c := range v.Values {
			visit(c, depth+1)
		}
		deepest = max(deepest, depth+1)
	case *ast.MappingKeyNode:
		visit(v.Value, depth)
	case *ast.AnchorNode:
		visit(v.Value, depth)
	case *ast.TagNode:
		visit(v.Value, depth)
	}
	return deepest
}
