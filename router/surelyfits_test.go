package router

import (
	"strings"
	"testing"

	"github.com/detourhq/detour/fit"
	"github.com/detourhq/detour/llm"
)

// surelyFits never says a request fits a window the estimator, at its high
// end, says it passes: digits, CJK, punctuation and emoji included.
func TestSurelyFitsIsNeverLooserThanTheEstimate(t *testing.T) {
	texts := []string{
		strings.Repeat("1234567890", 300), strings.Repeat("日本語の文章です。", 200), strings.Repeat("why? ", 500),
		strings.Repeat("🙂👍🏽", 300), strings.Repeat("plain English words in a sentence. ", 100), "{\"a\":[1,2,3]}",
	}
	for _, text := range texts {
		req := &llm.Request{MaxTokens: 100, Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
		for _, family := range []string{"", "gemini-2.5-flash", "llama-3.3-70b", "claude-sonnet-4", "gpt-4o"} {
			tokens, relErr := fit.Estimate(req, family)
			high := tokens + fit.Margin(tokens, relErr) + reserve(req)
			if surelyFits(req, high-1) {
				t.Errorf("%.20q (%s): surelyFits a window of %d; the estimate's high end is %d", text, family, high-1, high)
			}
		}
	}
}
