package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/detourhq/detour/"

// levels is DESIGN.md's layer list, top first, with the packages it does
// not name placed where their imports and importers put them. A package
// imports only packages of lower levels, or of its own unit: the package
// a table entry names and those under it (health/stores imports health).
// Units on one level do not import each other (batch does not import eval).
var levels = [][]string{
	{"cmd/detour"},
	{"cli"},
	{"gateway"},
	// the commands' engines and the library's front door
	{"batch", "eval", "report", "probe", "telemetry", "detour", "toolrun"},
	{"grade"}, // eval's graders, read by eval and its suites
	{"config"},
	{"router"},
	{"policy"},
	{"health"},
	{"ledger", "evalresults"}, // record files: attempts; eval's answers and its gate
	{"wire/openai", "wire/anthropic", "wire/gemini", "wire/responses", "wire"},
	{"wire/exchange"},
	{"classify", "fit"}, // fit: token estimates, read by router and config
	{"sse"},
	{"llm"},
	{"simulate"},
	{"clock", "prom", "internal/jsonedit", "internal/yamledit", "internal/durable",
		"internal/lazyregexp", "internal/residency", "internal/samefile"},
	{"internal/jsonscan", "internal/jsonw", "internal/yamlnode"},
}

// support are packages that exist for tests (fixtures, fault scenarios, a
// real redis-server) and tools beside the product (benchmarks, examples,
// the docs' and the deploy files' tests). They may import any package;
// no layered package's non-test code may import them.
var support = []string{
	"internal/scenario", "internal/recordstest", "internal/redistest",
	"internal/jsonscan/scantest", "wire/internal/wiretest",
	"bench", "examples", "docs", "deploy", "internal/layers",
}

// place returns the level and unit of a package path relative to the
// module, the unit being the longest table entry that is the path or a
// directory above it; level -1 for a support package, -2 when unplaced.
func place(pkg string) (level int, unit string) {
	under := func(entry string) bool { return pkg == entry || strings.HasPrefix(pkg, entry+"/") }
	for _, s := range support {
		if under(s) {
			return -1, s
		}
	}
	level = -2
	for i, l := range levels {
		for _, e := range l {
			if under(e) && len(e) > len(unit) {
				level, unit = i, e
			}
		}
	}
	return level, unit
}

// imports returns each package of the module (relative path) and the
// module packages its non-test files import.
func imports(t *testing.T) map[string][]string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no module root at %s: %v", root, err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if dep, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out[pkg], dep) {
				out[pkg] = append(out[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportsPointDown fails on an import that runs up the layer list, or
// sideways between two units of one level, and on a package the list does
// not place.
func TestImportsPointDown(t *testing.T) {
	all := imports(t)
	if len(all) < 30 {
		t.Fatalf("found %d packages: the walk missed the module", len(all))
	}
	for pkg, deps := range all {
		lv, unit := place(pkg)
		if lv == -2 {
			t.Errorf("%s is not in the layer list: place it in levels (or support) in internal/layers/layers_test.go", pkg)
			continue
		}
		for _, dep := range deps {
			dl, dunit := place(dep)
			switch {
			case lv == -1:
				// a test support package or a tool may import anything
			case dl == -1:
				t.Errorf("%s imports %s, which exists for tests and tools only", pkg, dep)
			case dl == -2:
				// reported as unplaced on its own
			case dunit == unit:
			case dl <= lv:
				t.Errorf("%s imports %s: an import that runs up (or across) the layer list of DESIGN.md (%s is on level %d, %s on level %d)",
					pkg, dep, unit, lv, dunit, dl)
			}
		}
	}
}

// TestPlace_CatchesAnUpwardImport holds the check itself to account: the
// imports issue 33 found running up would fail it.
func TestPlace_CatchesAnUpwardImport(t *testing.T) {
	for _, c := range []struct{ from, to string }{
		{"config", "eval/results"}, {"health/stores", "config"}, {"router", "gateway"},
		{"batch", "eval"}, {"llm", "sse"}, {"classify", "policy"},
	} {
		fl, fu := place(c.from)
		tl, tu := place(c.to)
		if fu != tu && tl > fl {
			t.Errorf("%s -> %s reads as pointing down (levels %d -> %d)", c.from, c.to, fl, tl)
		}
	}
	if l, _ := place("health/redisstore"); l != 8 {
		t.Errorf("health/redisstore on level %d, want health's (8)", l)
	}
	if l, _ := place("newpkg"); l != -2 {
		t.Errorf("an unknown package is placed (level %d)", l)
	}
}
