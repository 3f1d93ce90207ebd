package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// A group of equals through the gateway, with the official OpenAI client
// as users point it at detour: the member picked first is walled (a
// model's daily quota spent, as a dry free tier answers), the other member of
// the group answers, and the chain after the group is never reached;
// with the other member at the same provider (another model on the same
// key) and at another provider.
func TestSDK_GroupMovesToTheOtherMember(t *testing.T) {
	for _, c := range []struct{ name, other string }{
		{"other member at another provider", "p2/m"},
		{"other member at the same provider", "p1/m2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, setup{
				targets: "  p1/m2: {family: fam, price: {in: 1, out: 2}}\n",
				routes: "  pair:\n    chain:\n      - group: [p1/m, " + c.other + "]\n        pick: least_busy\n" +
					"      - p3/other\n    budget: {base_backoff: 1ms, max_backoff: 5ms}\n",
			})
			if err := f.sim.Enqueue("p1", "m", sim.Fault{Kind: sim.DailyQuota}); err != nil {
				t.Fatal(err)
			}
			client := openai.NewClient(option.WithBaseURL(f.ts.URL+"/v1"), option.WithAPIKey(clientKey), option.WithMaxRetries(0))
			resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    "pair",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			})
			if err != nil {
				t.Fatal(err)
			}
			model := strings.TrimPrefix(c.other, c.other[:strings.Index(c.other, "/")+1])
			if resp.Model != model {
				t.Errorf("answered by model %q, want %q (the group's other member)", resp.Model, model)
			}
			var lines []string
			for _, r := range f.ledger.Records() {
				lines = append(lines, r.Provider+"/"+r.Model+" "+r.Status)
				if r.Provider == "p3" {
					t.Errorf("the chain after the group was reached: %+v", r)
				}
				if r.Status == ledger.StatusOK && !strings.HasPrefix(r.Pick, "least_busy: ") {
					t.Errorf("the answer's ledger line has pick %q, want least_busy's", r.Pick)
				}
			}
			if len(lines) != 2 || lines[0] != "p1/m http_429" {
				t.Errorf("ledger %v: want p1/m's 429, then the other member's answer", lines)
			}
		})
	}
}
