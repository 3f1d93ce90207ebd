package config

import "testing"

// A preset marks the models it knows to reason, and only those: their
// targets get the long first-token limit by default (router.Target.Reasons).
// A non-reasoning variant of a reasoning line is excepted; a provider that
// is not a preset knows none; offers: [reasoning] says it for any target.
func TestBuild_PresetsMarkTheReasoningModelsTheyKnow(t *testing.T) {
	c := mustParse(t, `providers:
  openai: {}
  gemini: {}
  deepseek: {}
  groq: {}
  mine: {base_url: https://llm.example/v1, key_env: MINE_KEY}
targets:
  mine/thinker: {offers: [reasoning]}
routes:
  default:
    chain: [openai/o3-mini, openai/gpt-4o-mini, openai/gpt-5-chat-latest, openai/GPT-5, gemini/gemini-2.5-flash,
      gemini/gemini-2.5-flash-lite, deepseek/deepseek-reasoner, deepseek/deepseek-chat, groq/openai/gpt-oss-120b,
      groq/llama-3.3-70b-versatile, mine/o3, mine/thinker]
`)
	routes, err := c.Build(BuildOptions{Getenv: env(map[string]string{"OPENAI_API_KEY": "k-0123456789abcdef",
		"GEMINI_API_KEY": "k-0123456789abcdef", "DEEPSEEK_API_KEY": "k-0123456789abcdef", "GROQ_API_KEY": "k-0123456789abcdef",
		"MINE_KEY": "k-0123456789abcdef"})})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"openai/o3-mini": true, "openai/gpt-4o-mini": false, "openai/gpt-5-chat-latest": false, "openai/GPT-5": true,
		"gemini/gemini-2.5-flash": true, "gemini/gemini-2.5-flash-lite": false,
		"deepseek/deepseek-reasoner": true, "deepseek/deepseek-chat": false,
		"groq/openai/gpt-oss-120b": true, "groq/llama-3.3-70b-versatile": false,
		"mine/o3": false, "mine/thinker": true,
	}
	chain := routes["default"].Chain
	if len(chain) != len(want) {
		t.Fatalf("chain of %d targets, want %d", len(chain), len(want))
	}
	for i := range chain {
		tg := &chain[i]
		if got := tg.Reasons(); got != want[tg.ID()] {
			t.Errorf("%s reasons: %v, want %v", tg.ID(), got, want[tg.ID()])
		}
	}
}
