package llm

import "testing"

func TestReasoning_EffortAndBudgetConvert(t *testing.T) {
	cases := []struct {
		r      *Reasoning
		effort string
		budget int
		off    bool
	}{
		{r: nil, off: true},
		{r: &Reasoning{Effort: "none"}, effort: "none", budget: 0, off: true},
		{r: &Reasoning{Effort: "minimal"}, effort: "minimal", budget: 1024},
		{r: &Reasoning{Effort: "low"}, effort: "low", budget: 2048},
		{r: &Reasoning{Effort: "medium"}, effort: "medium", budget: 8192},
		{r: &Reasoning{Effort: "high"}, effort: "high", budget: 24576},
		{r: &Reasoning{Effort: "xhigh"}, effort: "xhigh", budget: 24576},
		{r: &Reasoning{Effort: "extreme"}, effort: "extreme", budget: 8192},
		{r: &Reasoning{Budget: 1024}, effort: "low", budget: 1024},
		{r: &Reasoning{Budget: 4096}, effort: "medium", budget: 4096},
		{r: &Reasoning{Budget: 16384}, effort: "high", budget: 16384},
		{r: &Reasoning{}, off: true},
	}
	for _, c := range cases {
		if got := c.r.Off(); got != c.off {
			t.Errorf("%+v: Off %v, want %v", c.r, got, c.off)
		}
		if c.r == nil || c.r.Off() && c.r.Effort == "" {
			continue
		}
		if got := c.r.EffortLevel(); got != c.effort {
			t.Errorf("%+v: effort %q, want %q", c.r, got, c.effort)
		}
		if got := c.r.BudgetTokens(); got != c.budget {
			t.Errorf("%+v: budget %d, want %d", c.r, got, c.budget)
		}
	}
}
