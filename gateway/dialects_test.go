package gateway_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	sim "github.com/detourhq/detour/simulate"
)

// Every client surface reaches every upstream dialect, whole and streamed,
// through each surface's official client: 4 surfaces (chat completions,
// Messages, the Responses API, generateContent) × 4 upstream dialects
// (Anthropic, Gemini, chat completions, the Responses API). The gateway
// speaks llm's canonical shapes in between, or passes a request raw to a
// target of its own dialect.
func TestDialects_EachSurfaceReachesEachUpstream(t *testing.T) {
	up, err := sim.Start(sim.Provider{Name: "an", Dialect: sim.DialectAnthropic}, sim.Provider{Name: "gm", Dialect: sim.DialectGemini},
		sim.Provider{Name: "oa"}, sim.Provider{Name: "rs", Dialect: sim.DialectResponses})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	cfg, err := config.Parse("detour.yaml", []byte(`providers:
  an: {dialect: anthropic, base_url: `+up.BaseURL("an")+`, key_env: AN_KEY}
  gm: {dialect: gemini, base_url: `+up.BaseURL("gm")+`, key_env: GM_KEY}
  oa: {base_url: `+up.BaseURL("oa")+`, key_env: OA_KEY}
  rs: {dialect: openai-responses, base_url: `+up.BaseURL("rs")+`, key_env: RS_KEY}
routes:
  claude: {chain: [an/claude-x]}
  gemini: {chain: [gm/gemini-x]}
  gpt: {chain: [oa/gpt-x]}
  pro: {chain: [rs/gpt-x-pro]}
`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AN_KEY": upstreamKey + "a", "GM_KEY": upstreamKey + "g", "OA_KEY": upstreamKey + "o", "RS_KEY": upstreamKey + "r"}
	gw, err := gateway.New(gateway.Config{File: cfg, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gw)
	t.Cleanup(ts.Close)
	oc := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("any"))
	ac := anthropic.NewClient(anthropicopt.WithBaseURL(ts.URL), anthropicopt.WithAPIKey("any"))
	gc, err := genai.NewClient(ctx(t), &genai.ClientConfig{APIKey: "any", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: ts.URL, APIVersion: "v1beta"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{"claude", "gemini", "gpt", "pro"} {
		t.Run(route, func(t *testing.T) {
			t.Run("chat completions", func(t *testing.T) {
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
			})
			t.Run("messages", func(t *testing.T) {
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
			t.Run("responses", func(t *testing.T) {
				p := responses.ResponseNewParams{Model: route, Instructions: openai.String("Be brief."),
					Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
				resp, err := oc.Responses.New(ctx(t), p)
				if err != nil || !strings.HasPrefix(resp.OutputText(), "Hello") || resp.Status != responses.ResponseStatusCompleted {
					t.Errorf("responses client: %v %+v", err, resp)
				}
				s := oc.Responses.NewStreaming(ctx(t), p)
				var final string
				for s.Next() {
					if ev := s.Current(); ev.Type == "response.completed" {
						final = ev.AsResponseCompleted().Response.OutputText()
					}
				}
				if s.Err() != nil || resp != nil && final != resp.OutputText() {
					t.Errorf("responses stream: %v %q", s.Err(), final)
				}
			})
			t.Run("generateContent", func(t *testing.T) {
				whole, err := gc.Models.GenerateContent(ctx(t), route, genai.Text("hi"), nil)
				if err != nil || !strings.HasPrefix(whole.Text(), "Hello") {
					t.Errorf("genai client: %v %+v", err, whole)
				}
				var b strings.Builder
				for chunk, err := range gc.Models.GenerateContentStream(ctx(t), route, genai.Text("hi"), nil) {
					if err != nil {
						t.Fatalf("genai stream: %v", err)
					}
					b.WriteString(chunk.Text())
				}
				if whole != nil && b.String() != whole.Text() {
					t.Errorf("genai stream %q, whole %q", b.String(), whole.Text())
				}
			})
		})
	}
}
