package grade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

const judgeGrade = `judge:
  route: judge
  rubric: "Names the capital city; no hedging."
  reference: "Tokyo"
`

// fakeJudge answers with reply after checking that the prompt carries the
// answer, the rubric and the reference.
func fakeJudge(t *testing.T, reply string, err error) Judge {
	return func(ctx context.Context, route, prompt string) (string, error) {
		if route != "judge" {
			t.Errorf("route = %q, want judge", route)
		}
		for _, want := range []string{"THE-ANSWER-TEXT", "Names the capital city; no hedging.", "Tokyo", "Write p", "VERDICT: PASS"} {
			if !strings.Contains(prompt, want) {
				t.Errorf("judge prompt lacks %q:\n%s", want, prompt)
			}
		}
		return reply, err
	}
}

func judgeTask(t *testing.T) *Task {
	t.Helper()
	src := strings.Replace(suiteWith(judgeGrade), "prompt: p", "prompt: Write p", 1)
	s, err := Parse("judge.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s.Tasks[0]
}

func TestJudge(t *testing.T) {
	boom := errors.New("route judge: all targets failed")
	tests := []struct {
		name    string
		reply   string
		err     error
		pass    bool
		why     string
		wantErr error
	}{
		{"pass", "The answer names Tokyo.\nVERDICT: PASS", nil, true, "", nil},
		{"fail with reason", "It hedges between two cities.\n\nVERDICT: FAIL\n", nil, false, "judge: It hedges between two cities.", nil},
		{"lowercase and markdown", "ok\n**Verdict:** pass", nil, true, "", nil},
		{"last verdict wins", "VERDICT: PASS\nWait, it hedges.\nVERDICT: FAIL", nil, false, "judge: Wait, it hedges.", nil},
		{"no verdict", "Looks fine to me.", nil, false, "", ErrNoVerdict},
		{"unknown verdict", "VERDICT: MAYBE", nil, false, "", ErrNoVerdict},
		{"judge call fails", "", boom, false, "", boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := judgeTask(t)
			v, err := task.Grade(context.Background(), Env{Judge: fakeJudge(t, tt.reply, tt.err)}, "Answer: THE-ANSWER-TEXT")
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Grade error: %v", err)
			}
			if v.Pass != tt.pass || !strings.Contains(v.Why, tt.why) {
				t.Fatalf("verdict = %+v, want Pass %v, Why with %q", v, tt.pass, tt.why)
			}
		})
	}
}

func TestJudge_NilJudgeIsAnError(t *testing.T) {
	task := judgeTask(t)
	if !task.NeedsJudge() {
		t.Fatal("NeedsJudge() = false")
	}
	_, err := task.Grade(context.Background(), Env{}, "x")
	if !errors.Is(err, ErrNeedsJudge) {
		t.Fatalf("err = %v, want ErrNeedsJudge", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `task "t1" needs a judge route`) || !strings.Contains(msg, "grade.Env.Judge") {
		t.Errorf("message %q should name the task and grade.Env.Judge", msg)
	}
}

func TestJudge_RunsAfterCheaperGraders(t *testing.T) {
	src := suiteWith("numeric: {value: 5}\n" + judgeGrade)
	s, err := Parse("judge.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	env := Env{Judge: func(ctx context.Context, route, prompt string) (string, error) {
		calls++
		return "VERDICT: PASS", nil
	}}
	v, err := s.Tasks[0].Grade(context.Background(), env, "Answer: 6")
	if err != nil || v.Pass || calls != 0 {
		t.Fatalf("verdict %+v, err %v, judge calls %d; want a numeric fail without calling the judge", v, err, calls)
	}
	if v, err = s.Tasks[0].Grade(context.Background(), env, "Answer: 5"); err != nil || !v.Pass || calls != 1 {
		t.Fatalf("verdict %+v, err %v, judge calls %d; want a pass after one call", v, err, calls)
	}
	if got := fmt.Sprint(s.Tasks[0].Graders()); got != "[numeric judge]" {
		t.Errorf("Graders() = %s", got)
	}
}
