// Command failover shows detour's library failing over, against simulated
// providers on loopback (no keys, no network): a free tier out of tokens for
// the day, a request that moves on at once to the next provider, a second
// request that skips the parked free tier without sending to it, and the
// ledger lines the two left, one per attempt.
//
//	go run ./examples/failover
//
// With real providers only the config changes: drop the base URLs (the
// presets know them) and set GROQ_API_KEY and the others.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/detour"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
}

// configYAML is the example's detour.yaml; the %s are the simulated providers'
// base URLs.
const configYAML = `
providers:
  groq:       {base_url: %s, key_env: GROQ_API_KEY, pool: free}
  openrouter: {base_url: %s, key_env: OPENROUTER_API_KEY, pool: credit}
  deepseek:   {base_url: %s, key_env: DEEPSEEK_API_KEY, pool: prepaid}
targets:
  groq/llama-3.3-70b-versatile: {family: llama-3.3-70b}
  openrouter/meta-llama/llama-3.3-70b-instruct: {family: llama-3.3-70b, price: {in: 0.12, out: 0.30}}
  deepseek/deepseek-chat: {family: deepseek-chat, price: {in: 0.28, out: 0.42}}
routes:
  default:
    chain: [groq/llama-3.3-70b-versatile, openrouter/meta-llama/llama-3.3-70b-instruct, deepseek/deepseek-chat]
`

// simulatedKeys stands for the environment: any key will do for the
// simulator. Real code leaves WithGetenv out and detour reads os.Getenv.
func simulatedKeys(name string) string {
	return map[string]string{
		"GROQ_API_KEY": "sim-groq-key", "OPENROUTER_API_KEY": "sim-openrouter-key", "DEEPSEEK_API_KEY": "sim-deepseek-key",
	}[name]
}

// run starts the simulated providers, sends two requests through a
// detour.Client and writes what happened to w.
func run(ctx context.Context, w io.Writer) error {
	sim, err := simulate.Start(
		// Groq's free tier has used its tokens for the day: its first
		// answer is the 429 "tokens per day (TPD)" with a reset in 7m12s,
		// a wall rather than a rate limit.
		simulate.Provider{Name: "groq", Style: simulate.StyleGroq,
			Script: []simulate.Fault{{Kind: simulate.DailyQuota}}},
		simulate.Provider{Name: "openrouter", Style: simulate.StyleOpenRouter},
		simulate.Provider{Name: "deepseek"},
	)
	if err != nil {
		return err
	}
	defer sim.Close()

	cfg, err := config.Parse("detour.yaml", fmt.Appendf(nil, configYAML,
		sim.BaseURL("groq"), sim.BaseURL("openrouter"), sim.BaseURL("deepseek")))
	if err != nil {
		return err
	}
	book := &ledger.Memory{} // detour.WithLedgerFile("ledger.jsonl") writes the same lines to a file
	c, err := detour.New(cfg, detour.WithGetenv(simulatedKeys), detour.WithLedger(book),
		detour.OnHop(func(h router.Hop) {
			fmt.Fprintf(w, "  %s -> %s (%s): %s\n", h.From, h.To, h.Action, h.Reason)
		}))
	if err != nil {
		return err
	}
	defer c.Close()

	for i, prompt := range []string{"Summarise RFC 9110 in one line.", "And RFC 9111?"} {
		fmt.Fprintf(w, "request %d: %q\n", i+1, prompt)
		res, err := c.Complete(ctx, "default", &llm.Request{
			Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}},
		})
		if err != nil {
			return err
		}
		for _, a := range res.Attempts {
			if a.Status == ledger.StatusSkippedParked {
				fmt.Fprintf(w, "  %s skipped, no send: %s\n", a.Target.ID(), a.Reason)
			}
		}
		fmt.Fprintf(w, "  answered by %s (degraded: %v): %s\n",
			res.Target.ID(), res.Degraded, res.Response.Message.Content)
	}
	fmt.Fprintf(w, "sends: groq %d, openrouter %d, deepseek %d\n",
		sim.Stats().Requests("groq", "llama-3.3-70b-versatile"),
		sim.Stats().Requests("openrouter", "meta-llama/llama-3.3-70b-instruct"),
		sim.Stats().Requests("deepseek", "deepseek-chat"))

	fmt.Fprintln(w, "ledger:")
	for _, r := range book.Records() {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s\n", line)
	}
	return nil
}
