package llm

// Reasoning asks a model that reasons to think before it answers: as
// much as Effort says (OpenAI's reasoning_effort words), or within Budget
// thinking tokens (Anthropic's thinking.budget_tokens, Gemini's
// thinkingBudget). A surface sets the one its client gave; each dialect's
// encoder sends its own form, converting by Effort and Budget.
type Reasoning struct {
	// Effort is "none", "minimal", "low", "medium" or "high"; empty when
	// the client gave a budget.
	Effort string `json:"effort,omitempty"`
	// Budget is a number of thinking tokens; 0 when the client gave an
	// effort.
	Budget int `json:"budget,omitempty"`
}

// The budgets an effort stands for where a dialect takes a budget:
// minimal is Anthropic's smallest budget, high fits every current
// Claude and Gemini 2.5 model's range, and xhigh gets no more.
var effortBudgets = map[string]int{"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576, "xhigh": 24576}

// EffortLevel returns the effort r asks for: Effort, or the level of
// Budget (under 4,096 tokens low, under 16,384 medium, else high).
func (r *Reasoning) EffortLevel() string {
	switch {
	case r.Effort != "":
		return r.Effort
	case r.Budget < 4096:
		return "low"
	case r.Budget < 16384:
		return "medium"
	}
	return "high"
}

// BudgetTokens returns the thinking budget r asks for: Budget, or the
// budget of Effort (minimal 1,024, low 2,048, medium 8,192, high
// 24,576, xhigh as high; 0 for none, and medium's for a word it does
// not know).
func (r *Reasoning) BudgetTokens() int {
	if r.Budget > 0 || r.Effort == "" {
		return r.Budget
	}
	if r.Effort == "none" {
		return 0
	}
	if b, ok := effortBudgets[r.Effort]; ok {
		return b
	}
	return effortBudgets["medium"]
}

// Off reports whether r asks for no reasoning at all (nil, effort none).
func (r *Reasoning) Off() bool {
	return r == nil || r.Effort == "none" || (r.Effort == "" && r.Budget <= 0)
}
