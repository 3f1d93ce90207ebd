package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	sim "github.com/detourhq/detour/simulate"
)

// What the OpenAI Agents SDK and Codex send by default is served, not
// refused: a strict function tool reaches an OpenAI-dialect target as
// OpenAI's own "strict": true, and an Anthropic one goes without it, the
// answer degraded and saying so; include and reasoning.summary are
// dropped and said, never a 400.
func TestSDKResponses_StrictToolsAndIncludeAreServed(t *testing.T) {
	f := newRsFixture(t, rsRoutes, sim.Provider{Answer: echo}, sim.Provider{Answer: echo})
	strictTool := responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
		"additionalProperties": false}, true)
	for _, tc := range []struct {
		route, dropped string
		degraded       bool
	}{{"gpt", "include", true}, {"claude", "strict, include", true}} {
		t.Run(tc.route, func(t *testing.T) {
			var hr *http.Response
			_, err := f.client().Responses.New(ctx(t), responses.ResponseNewParams{
				Model:   tc.route,
				Input:   responses.ResponseNewParamsInputUnion{OfString: openai.String("weather in Oslo?")},
				Tools:   []responses.ToolUnionParam{strictTool},
				Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
				Store:   openai.Bool(false),
			}, option.WithResponseInto(&hr))
			if err != nil {
				t.Fatal(err)
			}
			if got := hr.Header.Get("X-Detour-Dropped"); got != tc.dropped || hr.Header.Get("X-Detour-Degraded") != "true" {
				t.Errorf("dropped %q (degraded %s), want %q", got, hr.Header.Get("X-Detour-Degraded"), tc.dropped)
			}
			body := f.last(t)
			if tc.route == "gpt" && !strings.Contains(body, `"strict":true`) {
				t.Errorf("the OpenAI target did not get strict: %s", body)
			}
			if tc.route == "claude" && strings.Contains(body, "strict") {
				t.Errorf("the Anthropic target got strict: %s", body)
			}
		})
	}
}
