package gateway

import (
	"slices"

	"github.com/detourhq/detour/internal/jsonscan"
	"github.com/detourhq/detour/llm"
)

// efforts are the reasoning_effort words OpenAI documents; another word
// is not translated for another dialect.
var efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// reasoningOf reads the client's ask for reasoning from body, when its
// needs name one: OpenAI's "reasoning_effort" (a word of efforts),
// Anthropic's "thinking" ({"type":"enabled","budget_tokens":N}). Another
// dialect's target gets it translated (llm.Request.Reasoning). It returns
// the needs changed to match: a thinking that is "disabled" asks for
// nothing and leaves them, an ask of another shape is renamed
// ("reasoning_effort (WORD)", "thinking (TYPE)"), which no other dialect
// carries.
func reasoningOf(d dialect, body []byte, needs []string) (*llm.Reasoning, []string) {
	key := "reasoning_effort"
	if d == anthropicDialect {
		key = "thinking"
	}
	i := slices.Index(needs, key)
	if i < 0 {
		return nil, needs
	}
	var r *llm.Reasoning
	other := "?"
	s := &jsonscan.Scanner{S: string(body)}
	s.Object(func(k string) bool {
		if k != key {
			return s.SkipValue()
		}
		if d != anthropicDialect {
			var w string
			if !s.NullableString(&w) {
				return false
			}
			if other = w; slices.Contains(efforts, w) {
				r = &llm.Reasoning{Effort: w}
			}
			return true
		}
		var typ string
		budget := 0
		return s.Object(func(k string) bool {
			switch k {
			case "type":
				return s.NullableString(&typ)
			case "budget_tokens":
				return s.Int(&budget)
			}
			return s.SkipValue()
		}) && func() bool {
			switch {
			case typ == "enabled" && budget > 0:
				r = &llm.Reasoning{Budget: budget}
			case typ == "disabled":
				other = ""
			default:
				other = typ
			}
			return true
		}()
	})
	needs = slices.Clone(needs)
	switch {
	case r != nil:
	case other == "":
		needs = slices.Delete(needs, i, i+1)
	default:
		needs[i] = key + " (" + other + ")"
	}
	return r, needs
}
