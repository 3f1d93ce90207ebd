package docs

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// linkRE finds a markdown link or image: [text](target "title").
var linkRE = regexp.MustCompile(`!?\[([^\]]*)\]\(\s*([^)\s]*)(?:\s+"[^"]*")?\s*\)`)

// TestLinks_Resolve checks every relative link of README.md and docs/*.md:
// the file it names exists, and a #fragment names a heading of that file
// (of the page itself for a bare #fragment). Links to the web are not
// fetched: no test reaches beyond loopback.
func TestLinks_Resolve(t *testing.T) {
	all := pages(t)
	byPath := map[string]*page{}
	for _, p := range all {
		byPath[p.path] = p
	}
	for _, p := range all {
		for _, para := range p.paragraphs() {
			for _, m := range linkRE.FindAllStringSubmatch(withoutCode(para.text), -1) {
				target := m[2]
				if err := checkLink(p, target, byPath); err != "" {
					t.Errorf("%s:%d: link %q: %s", p.path, para.n, target, err)
				}
			}
		}
	}
}

func checkLink(from *page, target string, byPath map[string]*page) string {
	if target == "" {
		return "empty"
	}
	if i := strings.Index(target, ":"); i > 0 && !strings.ContainsAny(target[:i], "/#.") {
		return "" // a scheme: https:, mailto:
	}
	file, frag, _ := strings.Cut(target, "#")
	dest := from.path
	if file != "" {
		dest = path.Clean(path.Join(path.Dir(from.path), file))
		if strings.HasPrefix(dest, "../") {
			return "leaves the repository"
		}
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest)))
		if err != nil {
			return "no such file " + dest
		}
		if frag != "" && st.IsDir() {
			return "a fragment on a directory"
		}
	}
	if frag == "" {
		return ""
	}
	if !strings.HasSuffix(dest, ".md") {
		return "a fragment on a file that is not markdown"
	}
	p := byPath[dest]
	if p == nil {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dest)))
		if err != nil {
			return err.Error()
		}
		p = parsePage(dest, string(data))
		byPath[dest] = p
	}
	if !p.anchors[frag] {
		return "no heading #" + frag + " in " + dest
	}
	return ""
}
