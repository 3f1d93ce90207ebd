package config_test

import (
	"fmt"

	"github.com/detourhq/detour/config"
)

func ExampleParse() {
	_, err := config.Parse("detour.yaml", []byte(`providers:
  groq: {pool: fre}
  mine: {key_env: MINE_KEY}
routes:
  default:
    chain: [groq/llama-3.3-70b-versatile, groqq/llama-3.3-70b]
    budget: {deadline: 30}
`))
	fmt.Println(err)
	// Output:
	// detour.yaml:2:16: providers.groq.pool: unknown pool "fre" (did you mean "free"? pools are: free, credit, payg, prepaid, local)
	// detour.yaml:3:3: providers.mine: base_url is missing: a provider that is not a preset needs one, like base_url: https://api.example.com/v1 (or copy a preset with preset: NAME; presets are: groq, cerebras, openrouter, openai, openai-responses, mistral, xai, fireworks, deepseek, together, gemini, anthropic, llamacpp, vllm, ollama)
	// detour.yaml:6:43: routes.default.chain[1]: unknown provider "groqq" (did you mean "groq"? providers are: groq, mine; presets: cerebras, openrouter, openai, openai-responses, mistral, xai, fireworks, deepseek, together, gemini, anthropic, llamacpp, vllm, ollama); declare it under providers: or fix the name
	// detour.yaml:7:24: routes.default.budget.deadline: 30 has no unit: write "30s" for seconds (units: ms, s, m, h)
}

func ExampleDefault() {
	getenv := func(k string) string {
		return map[string]string{"DEEPSEEK_API_KEY": "…", "GROQ_API_KEY": "…"}[k]
	}
	c, err := config.Default(getenv)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Routes[config.DefaultRoute].Chain)
	for _, k := range c.Keys(getenv) {
		fmt.Println(k.Target, k)
	}
	// Output:
	// [groq/llama-3.3-70b-versatile deepseek/deepseek-chat]
	// groq/llama-3.3-70b-versatile set (GROQ_API_KEY)
	// deepseek/deepseek-chat set (DEEPSEEK_API_KEY)
}
