package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// The answer an official SDK gets after a fallback says whether it is
// degraded, in the X-Detour-Degraded header and in the ledger's answer
// line alike: another model family is degraded whether it sits at the
// failing provider or at another; the same family elsewhere (a failover)
// is not. Streamed and not, over real HTTP.
func TestSDK_DegradedAfterFallback_SameProviderAndAnother(t *testing.T) {
	for _, tc := range []struct {
		name     string
		route    string
		script   func(*fixture)
		answerer string
		degraded bool
	}{
		{"same provider, other family", "same", func(f *fixture) {
			enqueue(f, "p1", "m", sim.Fault{Kind: sim.DailyQuota})
		}, "p1/alt", true},
		{"other provider, same family", "default", func(f *fixture) {
			enqueue(f, "p1", "m", sim.Fault{Kind: sim.DailyQuota})
		}, "p2/m", false},
		{"other provider, other family", "default", func(f *fixture) {
			enqueue(f, "p1", "m", sim.Fault{Kind: sim.DailyQuota})
			enqueue(f, "p2", "m", sim.Fault{Kind: sim.DailyQuota})
		}, "p3/other", true},
	} {
		for _, stream := range []bool{false, true} {
			name := tc.name
			if stream {
				name += ", streamed"
			}
			t.Run(name, func(t *testing.T) {
				f := newFixture(t, setup{routes: "  same:\n    chain: [p1/m, p1/alt]\n    budget: {base_backoff: 1ms, max_backoff: 5ms}\n"})
				tc.script(f)
				c := f.openai(option.WithMaxRetries(0))
				params := openai.ChatCompletionNewParams{Model: tc.route, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
				var raw *http.Response
				var model string
				if stream {
					s := c.Chat.Completions.NewStreaming(ctx(t), params, option.WithResponseInto(&raw))
					for s.Next() {
						if m := s.Current().Model; m != "" {
							model = m
						}
					}
					if err := s.Err(); err != nil {
						t.Fatal(err)
					}
				} else {
					got, err := c.Chat.Completions.New(ctx(t), params, option.WithResponseInto(&raw))
					if err != nil {
						t.Fatal(err)
					}
					model = got.Model
				}
				_, wantModel, _ := strings.Cut(tc.answerer, "/")
				if model != wantModel {
					t.Errorf("model %q, want %q (the one that answered)", model, wantModel)
				}
				if got := raw.Header.Get("X-Detour-Degraded"); got != map[bool]string{true: "true", false: "false"}[tc.degraded] {
					t.Errorf("X-Detour-Degraded %q, want %v", got, tc.degraded)
				}
				var answer *ledger.Record
				for _, r := range f.ledger.Records() {
					if r.Status == ledger.StatusOK {
						answer = &r
					}
				}
				if answer == nil || answer.Provider+"/"+answer.Model != tc.answerer || answer.Degraded != tc.degraded {
					t.Fatalf("ledger answer %+v, want %s with degraded %v", answer, tc.answerer, tc.degraded)
				}
			})
		}
	}
}

func enqueue(f *fixture, provider, model string, faults ...sim.Fault) {
	f.t.Helper()
	if err := f.sim.Enqueue(provider, model, faults...); err != nil {
		f.t.Fatal(err)
	}
}
