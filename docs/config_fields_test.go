package docs

import (
	"regexp"
	"strings"
	"testing"

	"github.com/detourhq/detour/config"
)

// TestConfigReference_FieldsExist checks that every field the configuration
// reference's table names is a field of the config file: a setting renamed
// or removed in code fails here until the page follows. Each field is set
// alone, to null, in a file of its own; only "unknown field" counts (a
// route without a chain is not this test's business).
func TestConfigReference_FieldsExist(t *testing.T) {
	var ref *page
	for _, p := range pages(t) {
		if p.path == "docs/configuration.md" {
			ref = p
		}
	}
	if ref == nil {
		t.Fatal("no docs/configuration.md")
	}
	rows := 0
	for _, l := range ref.prose {
		if !strings.HasPrefix(l.text, "| `") {
			continue
		}
		cells := strings.Split(l.text, "|")
		var parent []string
		for _, span := range codeSpans(cells[1]) {
			path := splitPath(span)
			if len(path) == 1 && parent != nil { // `max_backoff` after `budget.base_backoff`
				path = append(append([]string(nil), parent...), path[0])
			}
			parent = path[:len(path)-1]
			if path[len(path)-1] == "*" {
				continue // defaults.*: every route field
			}
			rows++
			doc := fieldYAML(path)
			_, err := config.Parse("field.yaml", []byte(doc))
			if err != nil && strings.Contains(err.Error(), "unknown field") {
				t.Errorf("docs/configuration.md:%d: `%s` is no field of the config file:\n%s\n%v", l.n, span, doc, err)
			}
		}
	}
	if rows < 50 {
		t.Errorf("read %d fields from the table; the page's table has more: has its shape changed?", rows)
	}
}

var pathPartRE = regexp.MustCompile(`"[^"]*"|[^.]+`)

// splitPath splits a field path of the table: routes.NAME.budget,
// targets."p/m".price.
func splitPath(s string) []string {
	return pathPartRE.FindAllString(s, -1)
}

// fieldYAML is a config file that sets the field at path to null. The
// table writes a route's budget fields as budget.x: they live under
// routes.NAME.budget.
func fieldYAML(path []string) string {
	if path[0] == "budget" {
		path = append([]string{"routes", "NAME"}, path...)
	}
	var b strings.Builder
	for i, p := range path {
		switch {
		case p == "NAME" || p == "*":
			p = "x"
		case strings.HasPrefix(p, `"`):
		}
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i < len(path)-1 {
			b.WriteString("\n")
		}
	}
	b.WriteString(" ~\n")
	return b.String()
}
