package grade

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const checkSuite = `name: check
tasks:
  - id: arith-margin-en
    prompt: "A shirt costs $8 and sells for $9.14. What is the margin in percent?"
    grade:
      numeric: {value: 12.5, tolerance: %s}
    good: ["ANSWER: 12.5", "%s"]
    bad: ["12.4", "I don't know"]
  - id: capital-ja
    lang: ja
    prompt: 日本の首都は？
    grade:
      normalized: 東京
    good: ["答え：「東京」。"]
    bad: ["大阪"]
`

func parseCheck(t *testing.T, tolerance, good2 string) *Suite {
	t.Helper()
	src := strings.Replace(strings.Replace(checkSuite, "%s", tolerance, 1), "%s", good2, 1)
	s, err := Parse("check.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCheck(t *testing.T) {
	type brief struct {
		Task  string
		Good  bool
		Index int
	}
	tests := []struct {
		name, tolerance, good2 string
		want                   []brief
		wantText               string
	}{
		{"clean suite", "0.05", "12.5%", nil, ""},
		{"grader passes a known-bad answer", "0.2", "12.5%", []brief{{"arith-margin-en", false, 1}},
			`task "arith-margin-en": grader passes known-bad answer #1 ("12.4")`},
		{"grader fails a known-good answer", "0.05", "Answer: 1/8", []brief{{"arith-margin-en", true, 2}},
			`task "arith-margin-en": grader fails known-good answer #2 ("Answer: 1/8"): got 8, want 12.5 ± 0.05`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probs := parseCheck(t, tt.tolerance, tt.good2).Check(context.Background(), Env{})
			if tt.want == nil {
				if probs != nil {
					t.Fatalf("Check = %v, want nil", probs)
				}
				return
			}
			var got []brief
			for _, p := range probs {
				got = append(got, brief{p.Task, p.Good, p.Index})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("problems (-want +got):\n%s", diff)
			}
			if s := probs[0].String(); !strings.Contains(s, tt.wantText) {
				t.Errorf("String() = %q, want it to contain %q", s, tt.wantText)
			}
		})
	}
}

func TestCheck_ErrorsAreProblems(t *testing.T) {
	s, err := Parse("j.yaml", []byte(suiteWith(judgeGrade)))
	if err != nil {
		t.Fatal(err)
	}
	probs := s.Check(context.Background(), Env{})
	if len(probs) != 2 {
		t.Fatalf("Check = %v, want a problem per known answer", probs)
	}
	for _, p := range probs {
		if !errors.Is(p.Err, ErrNeedsJudge) {
			t.Errorf("problem %v: Err should wrap ErrNeedsJudge", p)
		}
		if !strings.Contains(p.String(), "could not run on known-") {
			t.Errorf("String() = %q", p.String())
		}
	}
}

func TestCheck_ManyTasksInOrder(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: many\ntasks:\n")
	for i := range 20 {
		b.WriteString("  - id: t" + string(rune('a'+i)) + "\n    prompt: p\n    grade: {exact: ok}\n    good: [ok]\n    bad: [ok]\n")
	}
	s, err := Parse("many.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	probs := s.Check(context.Background(), Env{})
	if len(probs) != 20 {
		t.Fatalf("got %d problems, want 20", len(probs))
	}
	for i, p := range probs {
		if want := "t" + string(rune('a'+i)); p.Task != want || p.Good {
			t.Errorf("problem %d = %s/%v, want %s known-bad", i, p.Task, p.Good, want)
		}
	}
}
