package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadme_StaysShortWithItsTwoCommands holds the README to what issue 32
// asked of it: a page a newcomer reads in ten minutes (under 350 lines),
// whose set-up commands stay the demo and make test, the latter being what
// CI runs (.ci/run).
func TestReadme_StaysShortWithItsTwoCommands(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n >= 350 {
		t.Errorf("README.md has %d lines: move detail to a page of docs/ (the README stays under 350)", n)
	}
	readme := parsePage("README.md", string(data))
	if len(readme.blocks) == 0 || strings.TrimSpace(readme.blocks[0].text) != "go run ./cmd/detour demo" {
		t.Errorf("README.md's first block must be the demo, `go run ./cmd/detour demo`")
	}
	var test string
	for _, para := range readme.paragraphs() {
		if strings.HasPrefix(para.text, "## Run the tests") {
			for _, b := range readme.blocks {
				if b.line > para.n {
					test = strings.TrimSpace(b.text)
					break
				}
			}
		}
	}
	if test != "make test" {
		t.Errorf("README.md's Run the tests block is %q, want make test", test)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range strings.Split(string(ci), "\n") {
		if strings.TrimSpace(l) == test {
			found = true
		}
	}
	if !found {
		t.Errorf(".ci/run does not run the README's test command %q", test)
	}
}
