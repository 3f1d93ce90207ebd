package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoIndex is what inline names are checked against: the module's test
// functions, its top-level directories, and the text of its Go sources.
type repoIndex struct {
	testFuncs map[string]bool
	topDirs   map[string]bool
	source    string // every non-test .go file outside docs/, joined
}

var testFuncRE = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)

func newRepoIndex(t *testing.T) *repoIndex {
	t.Helper()
	x := &repoIndex{testFuncs: map[string]bool{}, topDirs: map[string]bool{}}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			x.topDirs[e.Name()] = true
		}
	}
	var src strings.Builder
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "docs" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.go") {
			for _, m := range testFuncRE.FindAllStringSubmatch(string(data), -1) {
				x.testFuncs[m[1]] = true
			}
			return nil
		}
		src.Write(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	x.source = src.String()
	return x
}

var (
	testNameRE = regexp.MustCompile(`^(?:Test|Benchmark|Fuzz)[A-Z_]\w*$`)
	pathRE     = regexp.MustCompile(`^[\w-][\w.-]*(?:/[\w.-]+)+/?$`)
	fileExtRE  = regexp.MustCompile(`\.(?:go|ya?ml|md|json|jsonl|sh|png|txt|js)$`)
	metricRE   = regexp.MustCompile(`^(detour_[a-z_]+)(?:\{.*\})?(?:\s.*)?$`)
)

// check returns what is wrong with one inline code span: a test or
// benchmark that no _test.go declares, a repository path that does not
// exist, a metric (detour_...) that no source names.
func (x *repoIndex) check(span string) error {
	switch {
	case testNameRE.MatchString(span):
		if !x.testFuncs[span] {
			return fmt.Errorf("no test, benchmark or fuzz target %s in the module", span)
		}
	case pathRE.MatchString(span):
		first, _, _ := strings.Cut(span, "/")
		// a file, or a directory of the repository; not detour/cache,
		// the name of a last resort
		if (fileExtRE.MatchString(span) || (x.topDirs[first] && first != "detour")) && !exists(strings.TrimSuffix(span, "/")) {
			return fmt.Errorf("no %s in the repository", span)
		}
	case metricRE.MatchString(span):
		name := metricRE.FindStringSubmatch(span)[1]
		if !strings.Contains(x.source, `"`+name) {
			return fmt.Errorf("no metric %s in the sources", name)
		}
	}
	return nil
}

// TestExamples_InlineNames checks the names the prose gives as inline code:
// pkg.Name (pkg.Type.Member, pkg.Type{Field:) of one of detour's packages,
// tests and benchmarks named as evidence, repository paths, metrics.
func TestExamples_InlineNames(t *testing.T) {
	cmds := newCommandChecker(t)
	repo := newRepoIndex(t)
	for _, p := range pages(t) {
		for _, para := range p.paragraphs() {
			for _, span := range codeSpans(para.text) {
				for _, err := range cmds.pkgs.checkNames(span) {
					t.Errorf("%s:%d: `%s`: %v", p.path, para.n, span, err)
				}
				if err := repo.check(span); err != nil {
					t.Errorf("%s:%d: `%s`: %v", p.path, para.n, span, err)
				}
			}
		}
	}
}
