package grade

import (
	"context"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/detourhq/detour/internal/lazyregexp"
)

// judgeGrader asks an LLM route whether an answer meets a rubric.
type judgeGrader struct {
	Route     string `yaml:"route" json:"route"`
	Rubric    string `yaml:"rubric" json:"rubric"`
	Reference string `yaml:"reference" json:"reference"`
}

var judgeFields = []string{"route", "rubric", "reference"}

func parseJudge(p *suiteParser, t *Task, n ast.Node) grader {
	g := &judgeGrader{}
	if !p.decode(n, g, t.ID, "grade: judge", judgeFields) {
		return nil
	}
	switch {
	case strings.TrimSpace(g.Route) == "":
		p.errf(line(n), t.ID, "grade: judge: route: missing; write the route that judges, like route: judge")
	case strings.TrimSpace(g.Rubric) == "":
		p.errf(line(n), t.ID, "grade: judge: rubric: missing; write what a passing answer must do")
	default:
		return g
	}
	return nil
}

func (g *judgeGrader) kind() string   { return "judge" }
func (g *judgeGrader) canonical() any { return *g }

// verdictLine matches a judge's verdict line; the value is checked apart
// so "VERDICT: MAYBE" is told from no verdict line at all.
var verdictLine = lazyregexp.New(`(?i)^[\s*#>_-]*verdict[\s*_]*[:：][\s*_]*([\p{L}]*)`)

func (g *judgeGrader) grade(ctx context.Context, env Env, t *Task, answer string) (Verdict, error) {
	if env.Judge == nil {
		return Verdict{}, needsJudge(t)
	}
	reply, err := env.Judge(ctx, g.Route, g.prompt(t, t.input(g, answer)))
	if err != nil {
		return Verdict{}, fmt.Errorf("judge route %q: %w", g.Route, err)
	}
	pass, reason, err := parseVerdict(reply)
	if err != nil {
		return Verdict{}, fmt.Errorf("route %q: %w: %s", g.Route, err, clip(tail(reply, 80), 80))
	}
	if pass {
		return Verdict{Pass: true, Detail: reply}, nil
	}
	why := "judge: fail"
	if reason != "" {
		why = "judge: " + reason
	}
	return Verdict{Why: why, Detail: reply}, nil
}

// prompt builds the judge's prompt.
func (g *judgeGrader) prompt(t *Task, answer string) string {
	var b strings.Builder
	b.WriteString("You are grading an answer to a task. Judge only whether the answer meets the rubric.\n\n")
	b.WriteString("<task>\n" + t.Prompt + "\n</task>\n\n")
	b.WriteString("<rubric>\n" + g.Rubric + "\n</rubric>\n\n")
	if g.Reference != "" {
		b.WriteString("<reference_answer>\n" + g.Reference + "\n</reference_answer>\n\n")
	}
	b.WriteString("<answer>\n" + answer + "\n</answer>\n\n")
	b.WriteString("Explain your reasoning in one or two sentences, then end with a final line that is exactly " +
		"`VERDICT: PASS` if the answer meets the rubric, or `VERDICT: FAIL` if it does not.\n")
	return b.String()
}

// parseVerdict reads the last VERDICT line of a judge's reply, and the
// reason: the last non-empty line before it. An error wraps ErrNoVerdict.
func parseVerdict(reply string) (pass bool, reason string, err error) {
	lines := strings.Split(reply, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		m := verdictLine().FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		switch strings.ToUpper(m[1]) {
		case "PASS":
			pass = true
		case "FAIL":
		default:
			return false, "", ErrNoVerdict
		}
		for j := i - 1; j >= 0; j-- {
			if l := strings.TrimSpace(lines[j]); l != "" {
				reason = oneLine(l, maxWhy-len("judge: "))
				break
			}
		}
		return pass, reason, nil
	}
	return false, "", ErrNoVerdict
}
