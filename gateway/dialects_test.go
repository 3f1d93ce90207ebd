package gateway_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	sim "github.com/detourhq/detour/simulate"
)

// Either client surface reaches either upstream dialect: the gateway speaks
// llm's canonical shapes in between.
func TestDialects_EachSurfaceReachesEachUpstream(t *testing.T) {
	up, err := sim.Start(sim.Provider{Name: "an", Dialect: sim.DialectAnthropic}, sim.Provider{Name: "gm", Dialect: sim.DialectGemini},
		sim.Provider{Name: "oa"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	cfg, err := config.Parse("detour.yaml", []byte(`providers:
  an: {dialect: anthropic, base_url: `+up.BaseURL("an")+`, key_env: AN_KEY}
  gm: {dialect: gemini, base_url: `+up.BaseURL("gm")+`, key_env: GM_KEY}
  oa: {base_url: `+up.BaseURL("oa")+`, key_env: OA_KEY}
routes:
  claude: {chain: [an/claude-x]}
  gemini: {chain: [gm/gemini-x]}
  gpt: {chain: [oa/gpt-x]}
`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AN_KEY": upstreamKey + "a", "GM_KEY": upstreamKey + "g", "OA_KEY": upstreamKey + "o"}
	gw, err := gateway.New(gateway.Config{File: cfg, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gw)
	t.Cleanup(ts.Close)
	oc := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("any"))
	ac := anthropic.NewClient(anthropicopt.WithBaseURL(ts.URL), anthropicopt.WithAPIKey("any"))
	for _, route := range []string{"claude", "gemini", "gpt"} {
		t.Run(route, func(t *testing.T) {
			p := userHi()
			p.Model = route
			got, err := oc.Chat.Completions.New(ctx(t), p)
			if err != nil || !strings.HasPrefix(got.Choices[0].Message.Content, "Hello") {
				t.Errorf("openai client: %v %+v", err, got)
			}
			s := oc.Chat.Completions.NewStreaming(ctx(t), p)
			acc := openai.ChatCompletionAccumulator{}
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if s.Err() != nil || got != nil && acc.Choices[0].Message.Content != got.Choices[0].Message.Content {
				t.Errorf("openai stream: %v %+v", s.Err(), acc.Choices)
			}
			m := messageHi()
			m.Model = route
			msg, err := ac.Messages.New(ctx(t), m)
			if err != nil || len(msg.Content) != 1 || !strings.HasPrefix(msg.Content[0].Text, "Hello") {
				t.Errorf("anthropic client: %v %+v", err, msg)
			}
			as := ac.Messages.NewStreaming(ctx(t), m)
			var am anthropic.Message
			for as.Next() {
				if err := am.Accumulate(as.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if as.Err() != nil || len(am.Content) != 1 || msg != nil && len(msg.Content) == 1 && am.Content[0].Text != msg.Content[0].Text {
				t.Errorf("anthropic stream: %v %s", as.Err(), am.RawJSON())
			}
		})
	}
}
