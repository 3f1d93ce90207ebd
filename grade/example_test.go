package grade_test

import (
	"context"
	"fmt"

	"github.com/detourhq/detour/grade"
)

func ExampleParse() {
	s, err := grade.Parse("suite.yaml", []byte(`
name: demo
tasks:
  - id: margin
    prompt: A shirt costs $8 and sells for $9.14. What is the margin in percent?
    grade:
      numeric: {value: 12.5, tolerance: 0.05}
    good: ["ANSWER: 12.5"]
    bad: ["12.4"]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	fmt.Println(s.Check(ctx, grade.Env{}) == nil)
	v, _ := s.Task("margin").Grade(ctx, grade.Env{}, "(9.14 - 8) / 9.14 = 0.1247...\n**Answer:** 12.47%")
	fmt.Println(v.Pass)
	v, _ = s.Task("margin").Grade(ctx, grade.Env{}, "Answer: 14.25%")
	fmt.Println(v.Pass, v.Why)
	// Output:
	// true
	// true
	// false got 14.25, want 12.5 ± 0.05
}
