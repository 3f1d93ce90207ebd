package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	sim "github.com/detourhq/detour/simulate"
)

// echoedKeys are the keys of the SDK echo test, one a provider: each with
// slashes, where the simulator cuts a stream's text, so that each key
// reaches detour in three events, the first holding 12 bytes of it (held
// back) or 5 (sent before the rest is seen).
var echoedKeys = map[string]string{
	"oa": "sk-proj-Qm7x/V2pL9sKd4Wz8RnT3/bYc6HjF5gAe1",
	"an": "sk-an/t-api03-Lp3Qr8Ws0aZ/x7QkT9uVw2YbN4",
	"gm": "AIzaSyD-k9k9/Z3xW8vL4mR2sT6yB/q1Np7Hc5Fj",
}

// echoText is the answer of an upstream that echoes its key.
func echoText(key string) string {
	return "Your request came with Authorization: Bearer " + key + " as sent."
}

// Each official SDK (openai-go chat completions and Responses,
// anthropic-sdk-go Messages, go-genai generateContent), streamed and
// plain, asks a gateway whose upstream (the simulator, of the SDK's own
// dialect: the answer passes through raw) echoes the key it was sent,
// cut across three stream events: the text the SDK puts together holds
// "[redacted]" where the key was, the text around it as it was, and no
// key.
func TestKeyGuard_OfficialSDKsNeverSeeAnEchoedKey(t *testing.T) {
	var ps []sim.Provider
	for name, dialect := range map[string]sim.Dialect{"oa": sim.DialectOpenAI, "an": sim.DialectAnthropic, "gm": sim.DialectGemini} {
		key := echoedKeys[name]
		ps = append(ps, sim.Provider{Name: name, Dialect: dialect, Key: key,
			Answer: func(sim.Question) sim.Reply { return sim.Reply{Text: echoText(key)} }})
	}
	srv, err := sim.NewServer(ps...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := guardGateway(t, srv, map[string]string{"OA_KEY": echoedKeys["oa"], "AN_KEY": echoedKeys["an"], "GM_KEY": echoedKeys["gm"]})

	oc := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey(clientKey), option.WithMaxRetries(0))
	ac := anthropic.NewClient(anthropicopt.WithBaseURL(ts.URL), anthropicopt.WithAPIKey(clientKey), anthropicopt.WithMaxRetries(0))
	gc, err := genai.NewClient(ctx(t), &genai.ClientConfig{APIKey: clientKey, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: ts.URL, APIVersion: "v1beta"}})
	if err != nil {
		t.Fatal(err)
	}
	hi := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}
	rsHi := responses.ResponseNewParams{Model: "oa", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
	for _, tc := range []struct {
		name, provider string
		ask            func() (string, error)
	}{
		{"openai chat", "oa", func() (string, error) {
			c, err := oc.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: "oa", Messages: hi})
			if err != nil {
				return "", err
			}
			return c.Choices[0].Message.Content, nil
		}},
		{"openai chat, streamed", "oa", func() (string, error) {
			st := oc.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{Model: "oa", Messages: hi})
			acc := openai.ChatCompletionAccumulator{}
			for st.Next() {
				acc.AddChunk(st.Current())
			}
			if err := st.Err(); err != nil || len(acc.Choices) == 0 {
				return "", fmt.Errorf("stream: %v, %d choices", err, len(acc.Choices))
			}
			return acc.Choices[0].Message.Content, nil
		}},
		{"openai responses", "oa", func() (string, error) {
			r, err := oc.Responses.New(ctx(t), rsHi)
			if err != nil {
				return "", err
			}
			return r.OutputText(), nil
		}},
		{"openai responses, streamed", "oa", func() (string, error) {
			st := oc.Responses.NewStreaming(ctx(t), rsHi)
			var deltas strings.Builder
			done := ""
			for st.Next() {
				switch ev := st.Current(); ev.Type {
				case "response.output_text.delta":
					deltas.WriteString(ev.Delta)
				case "response.completed":
					done = ev.Response.OutputText()
				}
			}
			if done != deltas.String() {
				return "", fmt.Errorf("the deltas say %q, response.completed %q", deltas.String(), done)
			}
			return done, st.Err()
		}},
		{"anthropic messages", "an", func() (string, error) {
			m, err := ac.Messages.New(ctx(t), anthropicHi("an"))
			if err != nil {
				return "", err
			}
			return m.Content[0].Text, nil
		}},
		{"anthropic messages, streamed", "an", func() (string, error) {
			st := ac.Messages.NewStreaming(ctx(t), anthropicHi("an"))
			var m anthropic.Message
			for st.Next() {
				if err := m.Accumulate(st.Current()); err != nil {
					return "", err
				}
			}
			if err := st.Err(); err != nil || len(m.Content) == 0 {
				return "", fmt.Errorf("stream: %v, %d blocks", err, len(m.Content))
			}
			return m.Content[0].Text, nil
		}},
		{"gemini generateContent", "gm", func() (string, error) {
			r, err := gc.Models.GenerateContent(ctx(t), "gm", genai.Text("hi"), nil)
			if err != nil {
				return "", err
			}
			return r.Text(), nil
		}},
		{"gemini streamGenerateContent", "gm", func() (string, error) {
			var b strings.Builder
			for r, err := range gc.Models.GenerateContentStream(ctx(t), "gm", genai.Text("hi"), nil) {
				if err != nil {
					return "", err
				}
				b.WriteString(r.Text())
			}
			return b.String(), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.ask()
			if err != nil {
				t.Fatal(err)
			}
			key := echoedKeys[tc.provider]
			want := echoText("[redacted]")
			if strings.HasSuffix(tc.name, "streamed") || strings.HasPrefix(tc.name, "gemini stream") {
				// The key's first piece: 12 bytes, held back; Anthropic's 5,
				// sent before the rest was seen.
				if first, _, _ := strings.Cut(key, "/"); len(first) < 8 {
					want = echoText(first + "[redacted]")
				}
			}
			if got != want || strings.Contains(got, key) {
				t.Errorf("the SDK read %q, want %q", got, want)
			}
		})
	}
	if n := srv.Stats().Served("oa", "", sim.Unauthorized) + srv.Stats().Served("an", "", sim.Unauthorized) + srv.Stats().Served("gm", "", sim.Unauthorized); n != 0 {
		t.Errorf("%d requests were sent with a wrong key: the echo was not of the key detour holds", n)
	}
}
