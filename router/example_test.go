package router_test

import (
	"context"
	"fmt"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// Example uses detour as a Go library: a config names two providers, the
// first out of credit; Complete walks the chain and says who answered and
// what every attempt did. Here the providers are simulated on loopback;
// with real ones, only the config changes.
func Example() {
	sim, err := simulate.Start(
		simulate.Provider{Name: "cheap", Script: []simulate.Fault{{Kind: simulate.NoCredits}}},
		simulate.Provider{Name: "backup"},
	)
	if err != nil {
		panic(err)
	}
	defer sim.Close()

	cfg, err := config.Parse("detour.yaml", []byte(`
providers:
  cheap:  {dialect: openai, base_url: `+sim.BaseURL("cheap")+`, key_env: CHEAP_KEY, pool: free}
  backup: {dialect: openai, base_url: `+sim.BaseURL("backup")+`, key_env: BACKUP_KEY, pool: payg}
routes:
  default:
    chain: [cheap/small-model, backup/small-model]
`))
	if err != nil {
		panic(err)
	}
	keys := func(name string) string { return map[string]string{"CHEAP_KEY": "k1", "BACKUP_KEY": "k2"}[name] }
	route, err := cfg.Lookup("default", config.BuildOptions{Getenv: keys})
	if err != nil {
		panic(err)
	}

	book := &ledger.Memory{} // or ledger.OpenFile(path): one JSON line per attempt
	r := &router.Router{Ledger: book}
	res, err := r.Complete(context.Background(), route, &llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hello."}},
	}, router.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println("answered by", res.Target.ID()+":", res.Response.Message.Content)
	for _, a := range res.Attempts {
		fmt.Printf("%s: %s -> %s", a.Target.ID(), a.Status, a.Action)
		if a.Reason != "" {
			fmt.Printf(" (%s)", a.Reason)
		}
		fmt.Println()
	}
	fmt.Println(len(book.Records()), "ledger records")
	// Output:
	// answered by backup/small-model: Hello from backup/small-model.
	// cheap/small-model: http_402 -> failover (402 insufficient credits)
	// backup/small-model: ok -> return
	// 2 ledger records
}
