// Package docs holds detour's documentation pages and, in its tests, the
// checks that keep them true: every example in README.md and docs/*.md is
// parsed or run the way detour would read it, and every relative link
// resolves (docs_test.go says what each kind of block goes through).
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// page is one markdown file, split into what the checks read.
type page struct {
	path   string // relative to the module root, slash-separated
	blocks []block
	prose  []proseLine // lines outside fenced blocks, HTML comments blanked
	// anchors holds the fragment of every heading, as GitHub makes it.
	anchors map[string]bool
}

// block is one fenced code block.
type block struct {
	lang  string // the info string's first word, "" when none
	line  int    // 1-based line of the opening fence
	text  string
	check string // the <!-- check: ... --> marker just above it, "" when none
}

type proseLine struct {
	n    int
	text string
}

// root is the module root, where README.md is.
const root = ".."

// pages returns README.md and every docs/*.md, read and split.
func pages(t *testing.T) []*page {
	t.Helper()
	paths := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rel, _ := filepath.Rel(root, m)
		paths = append(paths, filepath.ToSlash(rel))
	}
	var out []*page
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parsePage(p, string(data)))
	}
	return out
}

var (
	fenceRE  = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^`\\s]*)")
	markerRE = regexp.MustCompile(`^\s*<!--\s*check:\s*(.*?)\s*-->\s*$`)
	headRE   = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

func parsePage(path, text string) *page {
	p := &page{path: path, anchors: map[string]bool{}}
	lines := strings.Split(text, "\n")
	seen := map[string]int{}
	marker, markerLine := "", -10
	inComment := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := fenceRE.FindStringSubmatch(l); m != nil && !inComment {
			fence := m[2]
			b := block{lang: m[3], line: i + 1}
			if markerLine == i-1 {
				b.check = marker
			}
			var body []string
			for i++; i < len(lines); i++ {
				if strings.HasPrefix(strings.TrimSpace(lines[i]), fence) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(lines[i]), fence[:1])) == "" {
					break
				}
				body = append(body, strings.TrimPrefix(lines[i], m[1]))
			}
			b.text = strings.Join(body, "\n")
			p.blocks = append(p.blocks, b)
			continue
		}
		if m := markerRE.FindStringSubmatch(l); m != nil {
			marker, markerLine = m[1], i
			p.prose = append(p.prose, proseLine{i + 1, ""})
			continue
		}
		// HTML comments are not prose: blank them, across lines too.
		var kept strings.Builder
		rest := l
		for rest != "" {
			if inComment {
				j := strings.Index(rest, "-->")
				if j < 0 {
					rest = ""
					break
				}
				inComment, rest = false, rest[j+3:]
				continue
			}
			j := strings.Index(rest, "<!--")
			if j < 0 {
				kept.WriteString(rest)
				break
			}
			kept.WriteString(rest[:j])
			inComment, rest = true, rest[j+4:]
		}
		l = kept.String()
		p.prose = append(p.prose, proseLine{i + 1, l})
		if m := headRE.FindStringSubmatch(l); m != nil {
			a := slug(m[2])
			if n := seen[a]; n > 0 {
				p.anchors[a+"-"+itoa(n)] = true
			} else {
				p.anchors[a] = true
			}
			seen[a]++
		}
	}
	return p
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// slug is the fragment GitHub gives a heading: its text lower-cased,
// punctuation dropped (letters, digits, '-' and '_' kept), spaces as '-'.
func slug(heading string) string {
	heading = linkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// paragraphs joins the prose into paragraphs (blank lines and headings
// split them), each with the line it starts on, so that an inline code span
// broken over two lines is read whole.
func (p *page) paragraphs() []proseLine {
	var out []proseLine
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, proseLine{start, strings.Join(cur, "\n")})
		}
		cur = nil
	}
	for _, l := range p.prose {
		if strings.TrimSpace(l.text) == "" || headRE.MatchString(l.text) {
			flush()
			if headRE.MatchString(l.text) {
				out = append(out, proseLine{l.n, l.text})
			}
			continue
		}
		if len(cur) == 0 {
			start = l.n
		}
		cur = append(cur, l.text)
	}
	flush()
	return out
}

// codeSpans returns the inline code spans of a paragraph, newlines in them
// read as spaces.
func codeSpans(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(text) && text[j] == '`' {
			j++
		}
		ticks := text[i:j]
		k := strings.Index(text[j:], ticks)
		if k < 0 {
			i = j
			continue
		}
		span := strings.ReplaceAll(text[j:j+k], "\n", " ")
		out = append(out, strings.TrimSpace(span))
		i = j + k + len(ticks)
	}
	return out
}

// withoutCode blanks a paragraph's inline code spans, so that what is left
// is the text and its links.
func withoutCode(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		if text[i] != '`' {
			b.WriteByte(text[i])
			i++
			continue
		}
		j := i
		for j < len(text) && text[j] == '`' {
			j++
		}
		k := strings.Index(text[j:], text[i:j])
		if k < 0 {
			b.WriteString(text[i:j])
			i = j
			continue
		}
		b.WriteString("code")
		i = j + k + (j - i)
	}
	return b.String()
}
