package grade

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/detourhq/detour/internal/yamlnode"
)

// grader is one check of a task's answers, compiled at load time.
type grader interface {
	// kind is the grader's key under grade: ("numeric").
	kind() string
	// grade checks input, the answer after extraction (see Task.input).
	// An error means the grader could not run.
	grade(ctx context.Context, env Env, t *Task, input string) (Verdict, error)
	// canonical is the grader's settings as plain data, for Digest.
	canonical() any
}

// graderNames are the keys under grade:, in the order messages list them.
var graderNames = []string{"exact", "normalized", "numeric", "date", "json", "program", "judge", "text"}

// runOrder is the order Grade runs graders in: cheap ones first, so a
// wrong answer costs no program run and no judge call.
var runOrder = []string{"exact", "normalized", "numeric", "date", "json", "text", "program", "judge"}

// wholeByDefault are the graders that read the whole answer unless
// extract: is set. json is one: auto extraction would cut a JSON value
// to one line and take the backticks off its code fence.
var wholeByDefault = map[string]bool{"json": true, "program": true, "judge": true, "text": true}

// graderParsers compile the value of each grader key; nil means the value
// was wrong and a problem is recorded.
var graderParsers = map[string]func(p *suiteParser, t *Task, n ast.Node) grader{
	"exact":      parseExact,
	"normalized": parseNormalized,
	"numeric":    parseNumeric,
	"date":       parseDateGrader,
	"json":       parseJSON,
	"program":    parseProgram,
	"judge":      parseJudge,
	"text":       parseText,
}

// grade reads a task's grade: mapping into t.
func (p *suiteParser) grade(t *Task, f field) {
	m, ok := p.resolve(f.val).(*ast.MappingNode)
	if !ok {
		p.errf(line(f.key), t.ID, "grade: expected one or more graders (numeric: ..., json: ...), got %s", yamlnode.Describe(p.resolve(f.val)))
		return
	}
	byKind := map[string]grader{}
	for _, mv := range m.Values {
		k := mv.Key.GetToken().Value
		if k == "extract" {
			mode := p.str(mv.Value, t.ID, "grade: extract")
			if !contains(extractModes, mode) {
				p.errf(line(mv.Key), t.ID, "grade: extract: %q is not a mode (modes: %s)", mode, strings.Join(extractModes, ", "))
			}
			t.extract = mode
			continue
		}
		parse, ok := graderParsers[k]
		if !ok {
			p.errf(line(mv.Key), t.ID, "grade: unknown grader %q (graders: %s)", k, strings.Join(graderNames, ", "))
			continue
		}
		if g := parse(p, t, mv.Value); g != nil {
			byKind[k] = g
		}
	}
	if len(byKind) == 0 && !hasAny(m, graderNames) {
		p.errf(line(f.key), t.ID, "grade: no grader; write one or more of: %s", strings.Join(graderNames, ", "))
	}
	for _, k := range runOrder {
		if g, ok := byKind[k]; ok {
			t.graders = append(t.graders, g)
		}
	}
}

// hasAny reports whether mapping m has one of keys.
func hasAny(m *ast.MappingNode, keys []string) bool {
	for _, mv := range m.Values {
		if contains(keys, mv.Key.GetToken().Value) {
			return true
		}
	}
	return false
}

// input is what grader g reads of answer: the extraction of the task's
// extract: mode, or auto, or for json, program, judge and text the whole
// answer.
func (t *Task) input(g grader, answer string) string {
	switch {
	case t.extract != "":
		return extract(t.extract, answer)
	case wholeByDefault[g.kind()]:
		if g.kind() == "text" {
			return strings.TrimSpace(answer)
		}
		return answer
	}
	return extract(extractAuto, answer)
}

// exactGrader passes text equal to one of its alternatives.
type exactGrader struct{ want []string }

func parseExact(p *suiteParser, t *Task, n ast.Node) grader {
	want, ok := p.alternatives(t, "exact", n)
	if !ok {
		return nil
	}
	for i := range want {
		want[i] = strings.TrimSpace(want[i])
	}
	return &exactGrader{want}
}

func (g *exactGrader) kind() string   { return "exact" }
func (g *exactGrader) canonical() any { return g.want }

func (g *exactGrader) grade(_ context.Context, _ Env, t *Task, answer string) (Verdict, error) {
	got := strings.TrimSpace(t.input(g, answer))
	if contains(g.want, got) {
		return Verdict{Pass: true}, nil
	}
	return Verdict{Why: fmt.Sprintf("got %s, want %s", clip(got, 60), listWant(g.want))}, nil
}

// normalizedGrader passes text equal to one of its alternatives after
// normalize.
type normalizedGrader struct{ want, norm []string }

func parseNormalized(p *suiteParser, t *Task, n ast.Node) grader {
	want, ok := p.alternatives(t, "normalized", n)
	if !ok {
		return nil
	}
	g := &normalizedGrader{want: want}
	for _, w := range want {
		g.norm = append(g.norm, normalize(w))
	}
	return g
}

func (g *normalizedGrader) kind() string   { return "normalized" }
func (g *normalizedGrader) canonical() any { return g.want }

func (g *normalizedGrader) grade(_ context.Context, _ Env, t *Task, answer string) (Verdict, error) {
	got := t.input(g, answer)
	if contains(g.norm, normalize(got)) {
		return Verdict{Pass: true}, nil
	}
	return Verdict{Why: fmt.Sprintf("got %s, want %s", clip(got, 60), listWant(g.want))}, nil
}

// alternatives reads a text or a list of non-empty texts.
func (p *suiteParser) alternatives(t *Task, key string, n ast.Node) ([]string, bool) {
	want, ok := p.strList(n, t.ID, "grade: "+key)
	if !ok {
		return nil, false
	}
	if len(want) == 0 {
		p.errf(line(n), t.ID, "grade: %s: write the answer, or a list of accepted answers", key)
		return nil, false
	}
	for _, w := range want {
		if strings.TrimSpace(w) == "" {
			p.errf(line(n), t.ID, "grade: %s: an accepted answer is empty; remove it", key)
			return nil, false
		}
	}
	return want, true
}

// listWant shows accepted answers in a message.
func listWant(want []string) string {
	if len(want) == 1 {
		return clip(want[0], 60)
	}
	q := make([]string, 0, len(want))
	for _, w := range want {
		q = append(q, clip(w, 30))
	}
	return "one of " + oneLine(strings.Join(q, ", "), 120)
}

// fold compares text case-insensitively.
var fold = cases.Fold()

// normalize returns s in NFKC, case-folded, without surrounding quotes,
// brackets, punctuation and space, with inner space runs made one space.
func normalize(s string) string {
	s = fold.String(norm.NFKC.String(s))
	s = strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.In(r, unicode.Ps, unicode.Pe, unicode.Pi, unicode.Pf) ||
			strings.ContainsRune("\"'.,;:!?*_`。、・「」『』〈〉《》【】〔〕", r)
	})
	return strings.Join(strings.Fields(s), " ")
}

// numericGrader passes text whose last number is within tolerance of
// value.
type numericGrader struct {
	Value     float64 `yaml:"value" json:"value"`
	Tolerance float64 `yaml:"tolerance" json:"tolerance"`
	// PercentOK also accepts the value written as a percentage of it
	// (value 0.125, answer "12.5%") or as a fraction of it (value 12.5,
	// answer "0.125").
	PercentOK bool `yaml:"percent_ok" json:"percent_ok"`
}

var numericFields = []string{"value", "tolerance", "percent_ok"}

func parseNumeric(p *suiteParser, t *Task, n ast.Node) grader {
	r := p.resolve(n)
	switch r.(type) {
	case *ast.IntegerNode, *ast.FloatNode: // numeric: 12.5, shorthand for {value: 12.5}
		var v float64
		if !p.decode(r, &v, t.ID, "grade: numeric", nil) {
			return nil
		}
		return &numericGrader{Value: v}
	case *ast.MappingNode:
	default:
		p.errf(line(n), t.ID, "grade: numeric: expected {value: 12.5, tolerance: 0.05}, got %s", yamlnode.Describe(r))
		return nil
	}
	var raw struct {
		Value     *float64 `yaml:"value"`
		Tolerance float64  `yaml:"tolerance"`
		PercentOK bool     `yaml:"percent_ok"`
	}
	if !p.decode(r, &raw, t.ID, "grade: numeric", numericFields) {
		return nil
	}
	switch {
	case raw.Value == nil:
		p.errf(line(n), t.ID, "grade: numeric: value: missing; write the expected number, e.g. {value: 12.5}")
	case !finite(*raw.Value) || !finite(raw.Tolerance):
		p.errf(line(n), t.ID, "grade: numeric: value and tolerance must be finite numbers")
	case raw.Tolerance < 0:
		p.errf(line(n), t.ID, "grade: numeric: tolerance: %v is negative; write 0 for an exact match or a positive margin", raw.Tolerance)
	default:
		return &numericGrader{Value: *raw.Value, Tolerance: raw.Tolerance, PercentOK: raw.PercentOK}
	}
	return nil
}

func (g *numericGrader) kind() string   { return "numeric" }
func (g *numericGrader) canonical() any { return *g }

func (g *numericGrader) grade(_ context.Context, _ Env, t *Task, answer string) (Verdict, error) {
	n, ok := LastNumber(t.input(g, answer))
	if !ok {
		return Verdict{Why: "no number in the answer"}, nil
	}
	candidates := []float64{n.Value}
	if g.PercentOK {
		if n.Percent {
			candidates = append(candidates, n.Value/100)
		} else {
			candidates = append(candidates, n.Value*100)
		}
	}
	for _, x := range candidates {
		// A hair of slack, so 12.55 is within 0.05 of 12.5 despite float rounding.
		if math.Abs(x-g.Value) <= g.Tolerance+1e-9*math.Max(1, math.Abs(g.Value)) {
			return Verdict{Pass: true}, nil
		}
	}
	want := strconv.FormatFloat(g.Value, 'g', -1, 64)
	if g.Tolerance > 0 {
		want += " ± " + strconv.FormatFloat(g.Tolerance, 'g', -1, 64)
	}
	return Verdict{Why: fmt.Sprintf("got %s, want %s", n.Text, want)}, nil
}

// dateGrader passes text whose last date is want.
type dateGrader struct{ want Date }

func parseDateGrader(p *suiteParser, t *Task, n ast.Node) grader {
	s := p.str(n, t.ID, "grade: date")
	d, ok := parseDate(s)
	if !ok {
		p.errf(line(n), t.ID, "grade: date: %q is not a date; write it as YYYY-MM-DD, e.g. \"2027-01-11\"", s)
		return nil
	}
	return &dateGrader{d}
}

func (g *dateGrader) kind() string   { return "date" }
func (g *dateGrader) canonical() any { return g.want.String() }

func (g *dateGrader) grade(_ context.Context, _ Env, t *Task, answer string) (Verdict, error) {
	d, ok := LastDate(t.input(g, answer))
	switch {
	case !ok:
		return Verdict{Why: "no date in the answer"}, nil
	case d != g.want:
		return Verdict{Why: fmt.Sprintf("got %s, want %s", d, g.want)}, nil
	}
	return Verdict{Pass: true}, nil
}

// textGrader checks what an answer contains and its length.
type textGrader struct {
	MustInclude []string `yaml:"must_include" json:"must_include"`
	MustExclude []string `yaml:"must_exclude" json:"must_exclude"`
	MaxChars    int      `yaml:"max_chars" json:"max_chars"`
	MinChars    int      `yaml:"min_chars" json:"min_chars"`
}

var textFields = []string{"must_include", "must_exclude", "max_chars", "min_chars"}

func parseText(p *suiteParser, t *Task, n ast.Node) grader {
	g := &textGrader{}
	if !p.decode(n, g, t.ID, "grade: text", textFields) {
		return nil
	}
	bad := func(format string, args ...any) grader {
		p.errf(line(n), t.ID, "grade: text: "+format, args...)
		return nil
	}
	switch {
	case g.MaxChars < 0 || g.MinChars < 0:
		return bad("max_chars and min_chars count characters: write 0 or more")
	case g.MaxChars > 0 && g.MinChars > g.MaxChars:
		return bad("min_chars %d is more than max_chars %d", g.MinChars, g.MaxChars)
	case len(g.MustInclude)+len(g.MustExclude) == 0 && g.MaxChars == 0 && g.MinChars == 0:
		return bad("no constraint; write must_include, must_exclude, max_chars or min_chars")
	}
	for _, s := range append(append([]string{}, g.MustInclude...), g.MustExclude...) {
		if strings.TrimSpace(s) == "" {
			return bad("an empty text in must_include or must_exclude; remove it")
		}
	}
	return g
}

func (g *textGrader) kind() string   { return "text" }
func (g *textGrader) canonical() any { return *g }

func (g *textGrader) grade(_ context.Context, _ Env, t *Task, answer string) (Verdict, error) {
	s := strings.TrimSpace(t.input(g, answer))
	folded := fold.String(norm.NFKC.String(s))
	for _, w := range g.MustInclude {
		if !strings.Contains(folded, fold.String(norm.NFKC.String(w))) {
			return Verdict{Why: fmt.Sprintf("does not contain %s", clip(w, 60))}, nil
		}
	}
	for _, w := range g.MustExclude {
		if strings.Contains(folded, fold.String(norm.NFKC.String(w))) {
			return Verdict{Why: fmt.Sprintf("contains %s", clip(w, 60))}, nil
		}
	}
	n := utf8.RuneCountInString(s)
	switch {
	case g.MaxChars > 0 && n > g.MaxChars:
		return Verdict{Why: fmt.Sprintf("%d characters, more than the %d allowed", n, g.MaxChars)}, nil
	case n < g.MinChars:
		return Verdict{Why: fmt.Sprintf("%d characters, fewer than the %d required", n, g.MinChars)}, nil
	}
	return Verdict{Pass: true}, nil
}
