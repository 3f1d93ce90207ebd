package gateway_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"

	sim "github.com/detourhq/detour/simulate"
)

// Every request a target gets carries that target's provider's key, in
// its dialect's header, though each request's headers share their values
// with the adapter's and with the other requests': official SDK clients,
// several at once, plain and streamed, whose first target is walled, fail
// over to the same provider's other model and to another provider of
// another dialect, each provider accepting its own key alone (a wrong one
// is a 401).
func TestSDK_EachTargetGetsItsOwnKey(t *testing.T) {
	for _, tc := range []struct {
		route, provider, model string
		oa                     sim.Provider
	}{
		// A model's daily quota walls that model alone: the same provider answers.
		{"same", "oa", "m2", sim.Provider{ModelScripts: map[string][]sim.Fault{"m": faults(sim.DailyQuota, 40)}}},
		// No credits walls the account: the Anthropic-dialect provider answers.
		{"cross", "an", "claude-x", sim.Provider{Script: faults(sim.NoCredits, 40)}},
	} {
		t.Run(tc.route, func(t *testing.T) {
			tc.oa.Key = upstreamKey + "o"
			f := newRsFixture(t, wallRoutes, tc.oa, sim.Provider{Key: upstreamKey + "a"})
			oa := f.client()
			an := anthropic.NewClient(anthropicopt.WithBaseURL(f.ts.URL), anthropicopt.WithAPIKey("any"), anthropicopt.WithMaxRetries(0))
			want := fmt.Sprintf("Hello from %s/%s.", tc.provider, tc.model)
			asks := []func() (model, text string, err error){
				func() (string, string, error) {
					c, err := oa.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: tc.route,
						Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
					if err != nil {
						return "", "", err
					}
					return c.Model, c.Choices[0].Message.Content, nil
				},
				func() (string, string, error) {
					st := oa.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{Model: tc.route,
						Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
					acc := openai.ChatCompletionAccumulator{}
					for st.Next() {
						acc.AddChunk(st.Current())
					}
					if err := st.Err(); err != nil || len(acc.Choices) == 0 {
						return "", "", fmt.Errorf("stream: %v, %d choices", err, len(acc.Choices))
					}
					return acc.Model, acc.Choices[0].Message.Content, nil
				},
				func() (string, string, error) {
					m, err := an.Messages.New(ctx(t), anthropicHi(tc.route))
					if err != nil {
						return "", "", err
					}
					return m.Model, m.Content[0].Text, nil
				},
				func() (string, string, error) {
					st := an.Messages.NewStreaming(ctx(t), anthropicHi(tc.route))
					var m anthropic.Message
					for st.Next() {
						if err := m.Accumulate(st.Current()); err != nil {
							return "", "", err
						}
					}
					if err := st.Err(); err != nil || len(m.Content) == 0 {
						return "", "", fmt.Errorf("stream: %v, %d blocks", err, len(m.Content))
					}
					return m.Model, m.Content[0].Text, nil
				},
			}
			// Each way of asking once alone (its first target walled), then
			// all of them four times at once.
			for i, ask := range asks {
				if model, text, err := ask(); err != nil || model != tc.model || text != want {
					t.Fatalf("ask %d alone: %q %q %v", i, model, text, err)
				}
			}
			var wg sync.WaitGroup
			for range 4 {
				for i, ask := range asks {
					wg.Go(func() {
						if model, text, err := ask(); err != nil || model != tc.model || text != want {
							t.Errorf("ask %d at once: %q %q %v", i, model, text, err)
						}
					})
				}
			}
			wg.Wait()
			st := f.sim.Stats()
			for _, p := range []string{"oa", "an"} {
				if n := st.Served(p, "", sim.Unauthorized); n != 0 {
					t.Errorf("%s refused the key of %d requests", p, n)
				}
			}
			if n := st.Requests("oa", "m"); n == 0 {
				t.Error("the walled target was never tried: nothing failed over")
			}
			if n := st.Requests(tc.provider, tc.model); n != 5*len(asks) {
				t.Errorf("%s/%s got %d requests, want %d", tc.provider, tc.model, n, 5*len(asks))
			}
		})
	}
}

// faults is a script of n faults of kind k.
func faults(k sim.Kind, n int) []sim.Fault {
	out := make([]sim.Fault, n)
	for i := range out {
		out[i] = sim.Fault{Kind: k}
	}
	return out
}

// anthropicHi is a one-message Anthropic request for model.
func anthropicHi(model string) anthropic.MessageNewParams {
	p := messageHi()
	p.Model = anthropic.Model(model)
	return p
}
