package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
)

// A 1x1 PNG, as the corpus carries it.
const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// The official OpenAI SDK sends an image message (by URL and inline): the
// upstream of the same dialect gets both parts as the SDK wrote them.
func TestSDK_OpenAIImageMessageArrives(t *testing.T) {
	rec, ts, _ := fidelityGateway(t)
	rec.answerWith(surfaces[0].answer, "application/json")
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "up/gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in these images?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/cat.png", Detail: "low"}),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + png1x1}),
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Model    string `json:"model"`
		Messages []struct {
			Content []struct {
				Type     string `json:"type"`
				ImageURL struct {
					URL    string `json:"url"`
					Detail string `json:"detail"`
				} `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(rec.last(t), &got); err != nil || len(got.Messages) != 1 || len(got.Messages[0].Content) != 3 {
		t.Fatalf("upstream got %s (%v)", rec.last(t), err)
	}
	parts := got.Messages[0].Content
	if got.Model != "gpt-4o" || parts[1].ImageURL.URL != "https://example.com/cat.png" || parts[1].ImageURL.Detail != "low" ||
		parts[2].ImageURL.URL != "data:image/png;base64,"+png1x1 {
		t.Errorf("upstream got %s", rec.last(t))
	}
}

// An assistant turn with a signed thinking block and a tool call: the
// official Anthropic SDK replays it (Message.ToParam) with the tool's
// result, and the upstream gets the thinking block, its signature and the
// tool call byte for byte, as extended thinking with tools requires.
func TestSDK_AnthropicThinkingAcrossAToolTurn(t *testing.T) {
	rec, ts, _ := fidelityGateway(t)
	const signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/AnthropicSignature=="
	first := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` +
		`{"type":"thinking","thinking":"The user wants the weather; I should call the tool.","signature":"` + signature + `"},` +
		`{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"location":"Paris"}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":50,"output_tokens":40}}`
	rec.answerWith([]byte(first), "application/json")
	c := anthropic.NewClient(anthropicopt.WithBaseURL(ts.URL), anthropicopt.WithAPIKey("unused"), anthropicopt.WithMaxRetries(0))
	tools := []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"location": map[string]any{"type": "string"}}}, "get_weather")}
	params := anthropic.MessageNewParams{
		Model: "upa/claude-sonnet-4-5", MaxTokens: 4096, Thinking: anthropic.ThinkingConfigParamOfEnabled(2048), Tools: tools,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
	}
	msg, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[0].Signature != signature {
		t.Fatalf("the SDK got %+v: want the thinking block and its signature", msg.Content)
	}
	if !strings.Contains(string(rec.last(t)), `"thinking":{"budget_tokens":2048,"type":"enabled"}`) &&
		!strings.Contains(string(rec.last(t)), `"budget_tokens":2048`) {
		t.Errorf("thinking did not reach the upstream: %s", rec.last(t))
	}
	rec.answerWith(surfaces[1].answer, "application/json")
	params.Messages = append(params.Messages, msg.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_01", "18°C and sunny", false)))
	if _, err := c.Messages.New(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(rec.last(t), &got); err != nil || len(got.Messages) != 3 || len(got.Messages[1].Content) != 2 {
		t.Fatalf("upstream got %s (%v)", rec.last(t), err)
	}
	var think struct{ Type, Thinking, Signature string }
	if err := json.Unmarshal(got.Messages[1].Content[0], &think); err != nil || think.Type != "thinking" ||
		think.Signature != signature || think.Thinking != "The user wants the weather; I should call the tool." {
		t.Errorf("the replayed thinking block reached the upstream as %s", got.Messages[1].Content[0])
	}
	if !strings.Contains(string(got.Messages[1].Content[1]), `"toolu_01"`) || !strings.Contains(string(rec.last(t)), "18°C and sunny") {
		t.Errorf("the tool call and its result did not reach the upstream: %s", rec.last(t))
	}
}

// Prompt caching: cache_control on the system prompt reaches the upstream,
// and the official Anthropic SDK reads the cache counters of the answer,
// whole and streamed.
func TestSDK_AnthropicPromptCachingCounters(t *testing.T) {
	rec, ts, _ := fidelityGateway(t)
	answer := `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Summary."}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2048,"cache_read_input_tokens":1800,` +
		`"cache_creation_input_tokens":248,"output_tokens":503,"cache_creation":{"ephemeral_5m_input_tokens":148,"ephemeral_1h_input_tokens":100}}}`
	rec.answerWith([]byte(answer), "application/json")
	c := anthropic.NewClient(anthropicopt.WithBaseURL(ts.URL), anthropicopt.WithAPIKey("unused"), anthropicopt.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model: "upa/claude-sonnet-4-5", MaxTokens: 1024,
		System:   []anthropic.TextBlockParam{{Text: "A long, stable system prompt.", CacheControl: anthropic.NewCacheControlEphemeralParam()}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Summarize."))},
	}
	msg, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	u := msg.Usage
	if u.CacheReadInputTokens != 1800 || u.CacheCreationInputTokens != 248 || u.CacheCreation.Ephemeral1hInputTokens != 100 {
		t.Errorf("the SDK read usage %+v: want the cache counters of the answer", u)
	}
	if !strings.Contains(string(rec.last(t)), `"cache_control":{"type":"ephemeral"}`) {
		t.Errorf("cache_control did not reach the upstream: %s", rec.last(t))
	}
	// Streamed: message_start and message_delta carry the counters.
	stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_3\",\"type\":\"message\",\"role\":\"assistant\"," +
		"\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":2048," +
		"\"cache_read_input_tokens\":1800,\"cache_creation_input_tokens\":248,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Summary.\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}," +
		"\"usage\":{\"output_tokens\":503}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	rec.answerWith([]byte(stream), "text/event-stream")
	st := c.Messages.NewStreaming(context.Background(), params)
	acc := accumulate(t, st)
	if acc.Usage.CacheReadInputTokens != 1800 || acc.Usage.CacheCreationInputTokens != 248 || acc.Usage.InputTokens != 2048 ||
		acc.Usage.OutputTokens != 503 {
		t.Errorf("the SDK accumulated usage %+v from the stream", acc.Usage)
	}
}

// failingFirst answers the OpenAI-dialect path 503 (an outage) and the
// Anthropic path with answer, keeping the request Anthropic got.
type failingFirst struct {
	mu       sync.Mutex
	answer   []byte
	stream   bool
	got      []byte
	upstream int
}

func (f *failingFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if strings.HasPrefix(r.URL.Path, "/up/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"message":"The engine is overloaded","type":"server_error","code":null}}`)) //nolint:errcheck // test
		return
	}
	f.mu.Lock()
	f.got, f.upstream = b, f.upstream+1
	answer, stream := f.answer, f.stream
	f.mu.Unlock()
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Write(answer) //nolint:errcheck // test
}

// Structured output across dialects: the OpenAI SDK asks for a JSON schema
// on a route whose OpenAI-compatible target is down; the Anthropic-dialect
// fallback gets the schema as a forced tool, and the SDK still parses the
// answer into its type, whole and streamed.
func TestSDK_StructuredOutputParsesFromTheAnthropicFallback(t *testing.T) {
	up := &failingFirst{}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	cfg, err := config.Parse("detour.yaml", []byte(fmt.Sprintf(`providers:
  up:  {dialect: openai, base_url: %[1]s/up/v1, key_env: ""}
  upa: {dialect: anthropic, base_url: %[1]s/upa, key_env: ""}
routes:
  json: {chain: [up/gpt-4o, upa/claude-sonnet-4-5], budget: {max_per_target: 1}}
`, srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{File: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gw)
	t.Cleanup(ts.Close)
	type weather struct {
		City    string  `json:"city"`
		Celsius float64 `json:"celsius"`
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"city": map[string]any{"type": "string"}, "celsius": map[string]any{"type": "number"}},
		"required": []string{"city", "celsius"}, "additionalProperties": false}
	params := openai.ChatCompletionNewParams{Model: "json",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris as JSON")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: schema, Strict: openai.Bool(true)}}}}
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))

	up.answer = []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` +
		`{"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Paris","celsius":18.5}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":20}}`)
	var resp *http.Response
	cc, err := c.Chat.Completions.New(context.Background(), params, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	var w weather
	if err := json.Unmarshal([]byte(cc.Choices[0].Message.Content), &w); err != nil || w.City != "Paris" || w.Celsius != 18.5 {
		t.Fatalf("content %q did not parse into the schema's type: %v", cc.Choices[0].Message.Content, err)
	}
	if cc.Choices[0].FinishReason != "stop" || len(cc.Choices[0].Message.ToolCalls) != 0 || resp.Header.Get("X-Detour-Provider") != "upa" {
		t.Errorf("finish %q, tool calls %v, provider %q", cc.Choices[0].FinishReason, cc.Choices[0].Message.ToolCalls, resp.Header.Get("X-Detour-Provider"))
	}
	var sent struct {
		Tools      []struct{ Name string }
		ToolChoice struct{ Type, Name string } `json:"tool_choice"`
	}
	if json.Unmarshal(up.got, &sent) != nil || len(sent.Tools) != 1 || sent.Tools[0].Name != "weather" ||
		sent.ToolChoice.Type != "tool" || sent.ToolChoice.Name != "weather" {
		t.Errorf("Anthropic got %s: want the schema as a forced tool", up.got)
	}

	// Streamed: the forced tool's input fragments arrive as content.
	up.mu.Lock()
	up.stream = true
	up.answer = []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":30,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"weather\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Paris\\\",\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\" \\\"celsius\\\": 18.5}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":20}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	up.mu.Unlock()
	st := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	w = weather{}
	if err := json.Unmarshal([]byte(acc.Choices[0].Message.Content), &w); err != nil || w.City != "Paris" || w.Celsius != 18.5 {
		t.Fatalf("streamed content %q did not parse: %v", acc.Choices[0].Message.Content, err)
	}
}

// An Anthropic client streaming from an OpenAI-dialect target learns the
// input tokens too: OpenAI reports usage only at the end, so message_start
// cannot hold them, and the final message_delta does (the official SDK
// takes input_tokens from it).
func TestSDK_AnthropicStreamFromAnotherDialectCountsInput(t *testing.T) {
	rec, ts, _ := fidelityGateway(t)
	stream := strings.ReplaceAll(string(surfaces[0].stream), `"prompt_tokens":1`, `"prompt_tokens":37`)
	rec.answerWith([]byte(stream), "text/event-stream")
	c := anthropic.NewClient(anthropicopt.WithBaseURL(ts.URL), anthropicopt.WithAPIKey("unused"), anthropicopt.WithMaxRetries(0))
	st := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "up/gpt-4o", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	acc := accumulate(t, st)
	if acc.Usage.InputTokens != 37 || acc.Usage.OutputTokens != 1 {
		t.Errorf("usage %+v: want the upstream's 37 input tokens", acc.Usage)
	}
}
