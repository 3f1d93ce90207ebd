package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Cache counters cross dialects: an OpenAI client answered by an Anthropic
// target reads the cache's reads in prompt_tokens_details.cached_tokens,
// its prompt counting every input token; an Anthropic client answered by
// an OpenAI target reads them in cache_read_input_tokens, apart from
// input_tokens, whole and streamed. Each SDK reads them with its own types.
func TestSDK_CacheCountersAcrossDialects(t *testing.T) {
	rec, ts, _ := fidelityGateway(t)
	anAnswer := `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Summary."}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2048,"cache_read_input_tokens":1800,` +
		`"cache_creation_input_tokens":248,"output_tokens":503}}`
	rec.answerWith([]byte(anAnswer), "application/json")
	oc := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	comp, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "upa/claude-sonnet-4-5",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Summarize.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if u := comp.Usage; u.PromptTokens != 2048+1800+248 || u.PromptTokensDetails.CachedTokens != 1800 || u.CompletionTokens != 503 {
		t.Errorf("the OpenAI SDK read usage %+v: want prompt 4096 of which 1800 cached", u)
	}

	ac := anthropic.NewClient(anthropicopt.WithBaseURL(ts.URL), anthropicopt.WithAPIKey("unused"), anthropicopt.WithMaxRetries(0))
	params := anthropic.MessageNewParams{Model: "up/gpt-4o", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
	oaAnswer := strings.Replace(string(surfaces[0].answer), `"prompt_tokens":1,`,
		`"prompt_tokens":1500,"prompt_tokens_details":{"cached_tokens":1280},`, 1)
	rec.answerWith([]byte(oaAnswer), "application/json")
	msg, err := ac.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if u := msg.Usage; u.InputTokens != 220 || u.CacheReadInputTokens != 1280 || u.CacheCreationInputTokens != 0 {
		t.Errorf("the Anthropic SDK read usage %+v: want 220 uncached input tokens and 1280 read from the cache", u)
	}
	oaStream := strings.Replace(string(surfaces[0].stream), `"prompt_tokens":1,`,
		`"prompt_tokens":1500,"prompt_tokens_details":{"cached_tokens":1280},`, 1)
	rec.answerWith([]byte(oaStream), "text/event-stream")
	st := ac.Messages.NewStreaming(context.Background(), params)
	acc := accumulate(t, st)
	if u := acc.Usage; u.InputTokens != 220 || u.CacheReadInputTokens != 1280 {
		t.Errorf("the Anthropic SDK accumulated usage %+v from the stream: want 220 and 1280 read from the cache", u)
	}
}

// accumulate reads an Anthropic SDK stream to its end into one message, as
// the SDK's own Accumulate builds it; a stream error fails the test.
func accumulate(t *testing.T, st *ssestream.Stream[anthropic.MessageStreamEventUnion]) anthropic.Message {
	t.Helper()
	var acc anthropic.Message
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return acc
}
