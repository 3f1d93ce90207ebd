package cli

import (
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/eval/suites"
	"github.com/detourhq/detour/grade"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// demoChain is the route of demo and sim: free tiers first, then credit,
// then pay-as-you-go, then prepaid; three wire dialects. bad says what the
// target does on the measured day (simulate.DayProfile).
var demoChain = []struct {
	provider, model, family, pool string
	in, out                       float64
	bad                           string
}{
	{simulate.GroqFree, simulate.GroqModel, "llama-3.3-70b", "free", 0, 0, "39% 429 tokens per day (a wall)"},
	{simulate.GeminiFree, simulate.GeminiModel, "gemini-2.5-flash", "free", 0, 0, "86% 503 overloaded, then 429 (per minute or per day)"},
	{simulate.OpenRouter, simulate.OpenRouterExpensive, "claude-sonnet-4", "credit", 3, 15, "402 for this expensive model (credit pre-check)"},
	{simulate.MistralPayg, simulate.MistralModel, "mistral-small", "payg", 0.1, 0.3, "42% 429 rate limit (Retry-After 1-2 s)"},
	{simulate.Anthropic, simulate.AnthropicModel, "claude-haiku-4-5", "prepaid", 1, 5, "about 5% 529 overloaded"},
	{simulate.DeepSeek, simulate.DeepSeekModel, "deepseek-v3", "prepaid", 0.27, 1.1, "fine"},
	{simulate.Together, simulate.TogetherModel, "llama-3.3-70b", "prepaid", 0.88, 0.88, "fine"},
}

// demoTargets are demoChain's targets, served by srv.
func demoTargets(srv *simulate.Server) []router.Target {
	var out []router.Target
	for _, c := range demoChain {
		d := srv.Dialect(c.provider)
		out = append(out, router.Target{
			Provider: c.provider, Model: c.model, Family: c.family, Pool: c.pool, Dialect: string(d),
			PriceIn: c.in, PriceOut: c.out,
			Client: config.NewClient(config.Dialect(d), srv.BaseURL(c.provider), "demo-key", nil, nil),
		})
	}
	return out
}

// demoSkills are the scripted skills of the demo's targets on the
// built-in suite: accuracy per language (and "*" for the rest), and the
// share of answers cut at their output limit (a model that thinks out
// loud). Invented for the demo; a real run measures them.
var demoSkills = map[string]struct {
	acc map[string]float64
	cut float64
}{
	simulate.GroqFree:    {acc: map[string]float64{"en": 0.85, "ja": 0.45}},
	simulate.GeminiFree:  {acc: map[string]float64{"*": 0.9}},
	simulate.OpenRouter:  {acc: map[string]float64{"*": 0.95}},
	simulate.MistralPayg: {acc: map[string]float64{"en": 0.75, "ja": 0.55}},
	simulate.Anthropic:   {acc: map[string]float64{"*": 0.93}},
	simulate.DeepSeek:    {acc: map[string]float64{"*": 0.92}, cut: 0.3},
	simulate.Together:    {acc: map[string]float64{"en": 0.85, "ja": 0.45}},
}

// skilledDay returns the providers of the measured day (seed draws their
// faults) with demoSkills answering the built-in suite's prompts. Any
// other prompt gets the providers' plain "Hello from PROVIDER/MODEL." when
// hello is set, else the Skill's "I do not know.".
func skilledDay(seed uint64, hello bool) ([]simulate.Provider, *grade.Suite, error) {
	suite, err := suites.Builtin()
	if err != nil {
		return nil, nil, err
	}
	lang, pairs := map[string]string{}, map[string]simulate.Pair{}
	for _, t := range suite.Tasks {
		lang[t.Prompt] = t.Lang
		pairs[t.Prompt] = simulate.Pair{Right: t.Good[0], Wrong: t.Bad[0]}
	}
	provs := simulate.DayProfile(seed)
	for i := range provs {
		sk, ok := demoSkills[provs[i].Name]
		if !ok {
			continue
		}
		skill := &simulate.Skill{Answers: pairs, Truncation: sk.cut, Seed: seed + uint64(i),
			AccuracyOf: func(prompt string) float64 {
				if a, ok := sk.acc[lang[prompt]]; ok {
					return a
				}
				return sk.acc["*"]
			}}
		provs[i].Answer = skill.Answer
		if hello {
			provs[i].Answer = func(q simulate.Question) simulate.Reply {
				if _, known := pairs[q.Prompt]; known {
					return skill.Answer(q)
				}
				return simulate.Reply{Text: "Hello from " + q.Provider + "/" + q.Model + "."}
			}
		}
	}
	return provs, suite, nil
}
