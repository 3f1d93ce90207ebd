package detour_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/detour"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/router"
	"github.com/detourhq/detour/simulate"
)

// keys stands for the environment: the providers' key variables. Real keys
// come from os.Getenv, the default.
func keys(name string) string {
	return map[string]string{"FREE_KEY": "free-key-123", "PAID_KEY": "paid-key-456"}[name]
}

// simulated starts two fake OpenAI-compatible providers on loopback and
// returns them with a config whose route "default" chains free/m (a free
// tier) then paid/m (the same model, pay as you go). With real providers,
// only the base URLs change.
func simulated() (*simulate.Server, *config.Config) {
	sim, err := simulate.Start(simulate.Provider{Name: "free"}, simulate.Provider{Name: "paid"})
	if err != nil {
		panic(err)
	}
	cfg, err := config.Parse("detour.yaml", []byte(yamlFor(sim)))
	if err != nil {
		panic(err)
	}
	return sim, cfg
}

// yamlFor is the config of simulated, for sim's URLs.
func yamlFor(sim *simulate.Server) string {
	return `
providers:
  free: {base_url: ` + sim.BaseURL("free") + `, key_env: FREE_KEY, pool: free}
  paid: {base_url: ` + sim.BaseURL("paid") + `, key_env: PAID_KEY, pool: payg}
routes:
  default:
    chain: [free/m, paid/m]
`
}

// New builds a Client from a config made in code; Ask is the shortest
// call.
func ExampleNew() {
	sim, cfg := simulated()
	defer sim.Close()

	c, err := detour.New(cfg, detour.WithGetenv(keys))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	answer, err := c.Ask(context.Background(), "default", "Say hello.")
	if err != nil {
		panic(err)
	}
	fmt.Println(answer)
	// Output:
	// Hello from free/m.
}

// Open reads a config file (or, with "", finds one as the CLI does); the
// Client appends one ledger line per attempt to the file it is given.
func ExampleOpen() {
	sim, _ := simulated()
	defer sim.Close()
	dir, err := os.MkdirTemp("", "detour-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "detour.yaml")
	if err := os.WriteFile(path, []byte(yamlFor(sim)), 0o600); err != nil {
		panic(err)
	}

	c, err := detour.Open(path, detour.WithGetenv(keys), detour.WithLedgerFile(filepath.Join(dir, "ledger.jsonl")))
	if err != nil {
		panic(err)
	}
	answer, err := c.Ask(context.Background(), "paid/m", "Say hello.") // a target, named directly
	if err != nil {
		panic(err)
	}
	c.Close()

	fmt.Println(answer)
	recs, err := ledger.ReadFile(filepath.Join(dir, "ledger.jsonl"))
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Println(r.Route, r.Provider+"/"+r.Model, r.Status)
	}
	// Output:
	// Hello from paid/m.
	// paid/m paid/m ok
}

// The free tier's tokens for the day are gone: Complete moves on at once
// to the next target, and says which target answered. The wall parks the
// free tier, so the next request skips it without a send.
func ExampleClient_Complete() {
	sim, cfg := simulated()
	defer sim.Close()
	sim.Enqueue("free", "m", simulate.Fault{Kind: simulate.DailyQuota})

	c, err := detour.New(cfg, detour.WithGetenv(keys))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hello."}}}
	for range 2 {
		res, err := c.Complete(context.Background(), "default", req)
		if err != nil {
			panic(err)
		}
		fmt.Println("answered by", res.Target.ID()+":", res.Response.Message.Content)
		for _, a := range res.Attempts {
			fmt.Printf("  %s %s -> %s\n", a.Target.ID(), a.Status, a.Action)
		}
	}
	fmt.Println("sends to free/m:", sim.Stats().Requests("free", "m"))
	// Output:
	// answered by paid/m: Hello from paid/m.
	//   free/m http_429 -> failover
	//   paid/m ok -> return
	// answered by paid/m: Hello from paid/m.
	//   free/m skipped_parked -> skip
	//   paid/m ok -> return
	// sends to free/m: 1
}

// Embed gets the embeddings of texts; a wall at the first target fails
// over to the same model family elsewhere, never to another family.
func ExampleClient_Embed() {
	sim, cfg := simulated()
	defer sim.Close()
	sim.Enqueue("free", "m", simulate.Fault{Kind: simulate.DailyQuota})

	c, err := detour.New(cfg, detour.WithGetenv(keys))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	res, err := c.Embed(context.Background(), "default", &llm.EmbedRequest{Input: []string{"hello", "world"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("embedded by", res.Target.ID()+":", len(res.Embeddings.Vectors), "vectors of", len(res.Embeddings.Vectors[0]))
	for _, a := range res.Attempts {
		fmt.Printf("  %s %s -> %s\n", a.Target.ID(), a.Status, a.Action)
	}
	// Output:
	// embedded by paid/m: 2 vectors of 8
	//   free/m http_429 -> failover
	//   paid/m ok -> return
}

// Batch takes items from a channel, at most 2 in flight here, and yields
// one Outcome per item as each finishes: match them by ID.
func ExampleClient_Batch() {
	sim, cfg := simulated()
	defer sim.Close()
	c, err := detour.New(cfg, detour.WithGetenv(keys))
	if err != nil {
		panic(err)
	}
	defer c.Close()

	in := make(chan detour.Item)
	go func() {
		defer close(in)
		for _, id := range []string{"a", "b", "c"} {
			in <- detour.Item{ID: id, Request: &llm.Request{
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "Item " + id}},
			}}
		}
		in <- detour.Item{ID: "d", Route: "paid/m", Request: &llm.Request{ // this one names its own target
			Messages: []llm.Message{{Role: llm.RoleUser, Content: "Item d"}},
		}}
	}()
	var lines []string
	for o := range c.Batch(context.Background(), "default", in, 2) {
		if o.Err != nil {
			lines = append(lines, o.ID+": "+o.Err.Error())
			continue
		}
		lines = append(lines, o.ID+": "+o.Result.Target.ID()+" "+o.Result.Response.Message.Content)
	}
	slices.Sort(lines) // outcomes come in the order they finish
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// a: free/m Hello from free/m.
	// b: free/m Hello from free/m.
	// c: free/m Hello from free/m.
	// d: paid/m Hello from paid/m.
}

// Stream returns once a target produced its first output; failures before
// it (here a 402: the free tier is out of credits) fail over unseen.
func ExampleClient_Stream() {
	sim, cfg := simulated()
	defer sim.Close()
	sim.Enqueue("free", "m", simulate.Fault{Kind: simulate.NoCredits})

	c, err := detour.New(cfg, detour.WithGetenv(keys))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	res, err := c.Stream(context.Background(), "default", &llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Say hello."}},
	})
	if err != nil {
		panic(err)
	}
	defer res.Stream.Close()
	var text strings.Builder
	for {
		chunk, err := res.Stream.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic(err) // a cut after the first byte: never another model's text
		}
		text.WriteString(chunk.Content)
	}
	fmt.Println(res.Target.ID()+":", text.String())
	// Output:
	// paid/m: Hello from paid/m.
}

// OnAttempt sees every attempt and skip as it happens, after its ledger
// record; OnHop sees each move away from a target that failed.
func ExampleOnAttempt() {
	sim, cfg := simulated()
	defer sim.Close()
	sim.Enqueue("free", "m", simulate.Fault{Kind: simulate.DailyQuota})

	c, err := detour.New(cfg, detour.WithGetenv(keys),
		detour.OnAttempt(func(a router.Attempt) {
			fmt.Printf("attempt %s: %s (%s)\n", a.Target.ID(), a.Status, a.Kind)
		}),
		detour.OnHop(func(h router.Hop) {
			fmt.Printf("hop %s -> %s: %s\n", h.From, h.To, h.Action)
		}))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if _, err := c.Ask(context.Background(), "default", "Say hello."); err != nil {
		panic(err)
	}
	// Output:
	// attempt free/m: http_429 (wall)
	// hop free/m -> paid/m: failover
	// attempt paid/m: ok ()
}
