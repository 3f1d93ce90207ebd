package gateway_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	"github.com/detourhq/detour/ledger"
	sim "github.com/detourhq/detour/simulate"
)

// newRtFixture is a gateway in front of a fake provider "rs" speaking the
// Responses API (config's dialect openai-responses) and "oa" (chat
// completions), with the routes the test gives; f.bodies records every
// upstream request body.
func newRtFixture(t *testing.T, routes string, rs, oa sim.Provider) *rsFixture {
	t.Helper()
	rs.Name, rs.Dialect, oa.Name = "rs", sim.DialectResponses, "oa"
	srv, err := sim.NewServer(rs, oa)
	if err != nil {
		t.Fatal(err)
	}
	f := &rsFixture{ledger: &ledger.Memory{}, sim: srv}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { up.Close(); srv.Close() })
	cfg, err := config.Parse("detour.yaml", []byte(`providers:
  rs: {dialect: openai-responses, base_url: `+up.URL+`/rs/v1, key_env: RS_KEY}
  oa: {base_url: `+up.URL+`/oa/v1, key_env: OA_KEY}
routes:
`+routes))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"RS_KEY": upstreamKey + "r", "OA_KEY": upstreamKey + "o"}
	gw, err := gateway.New(gateway.Config{File: cfg, Getenv: func(k string) string { return env[k] }, Ledger: f.ledger})
	if err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(gw)
	t.Cleanup(f.ts.Close)
	return f
}

const rtRoutes = `  pro: {chain: [rs/gpt-5-pro], budget: {base_backoff: 1ms, max_backoff: 2ms}}
  pro-then-chat: {chain: [rs/gpt-5-pro, oa/m], budget: {base_backoff: 1ms, max_backoff: 2ms}}
  chat-then-pro: {chain: [oa/m, rs/gpt-5-pro], budget: {base_backoff: 1ms, max_backoff: 2ms}}
`

// rtJSON is an Answer whose text is a forecast as JSON.
func rtJSON(sim.Question) sim.Reply { return sim.Reply{Text: `{"city":"Paris","temp_c":18}`} }

// The official openai-go client on the Responses surface, to a Responses
// target: the request goes on raw (every field the client wrote, reasoning
// items included, but model; store: false added when the client said
// nothing of it), and the answer and every stream event come back as the
// provider sent them, whole and streamed.
func TestSDKResponsesTarget_ResponsesSurfacePassesThrough(t *testing.T) {
	f := newRtFixture(t, rtRoutes, sim.Provider{Answer: echo}, sim.Provider{})
	input := responses.ResponseInputParam{
		{OfReasoning: &responses.ResponseReasoningItemParam{ID: "rs_0123", EncryptedContent: openai.String("gAAAAAencrypted"),
			Summary: []responses.ResponseReasoningItemSummaryParam{}}},
		{OfMessage: &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser,
			Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String("hi there")}}},
	}
	p := responses.ResponseNewParams{
		Model:        "pro",
		Instructions: openai.String("be brief"),
		Input:        responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		Include:      []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
		Reasoning:    shared.ReasoningParam{Effort: shared.ReasoningEffortHigh, Summary: shared.ReasoningSummaryAuto},
		Metadata:     shared.Metadata{"job": "42"},
		ServiceTier:  responses.ResponseNewParamsServiceTierFlex,
	}
	for _, stream := range []bool{false, true} {
		var hr *http.Response
		var text, model string
		if stream {
			events, deltas, err := rsEvents(t, f, p, option.WithResponseInto(&hr))
			if err != nil {
				t.Fatal(err)
			}
			final := events[len(events)-1].AsResponseCompleted().Response
			text, model = final.OutputText(), final.Model
			if deltas != text || !strings.HasPrefix(final.ID, "resp_") {
				t.Errorf("deltas %q, final %s", deltas, final.RawJSON())
			}
			// The provider's own events, numbered as it numbered them.
			checkSequence(t, events)
		} else {
			resp, err := f.client().Responses.New(ctx(t), p, option.WithResponseInto(&hr))
			if err != nil {
				t.Fatal(err)
			}
			text, model = resp.OutputText(), resp.Model
			if resp.Usage.TotalTokens == 0 {
				t.Errorf("usage %s", resp.Usage.RawJSON())
			}
		}
		if text != "sys=be brief prompt=hi there" || model != "gpt-5-pro" {
			t.Errorf("stream %v: answer %q from %q", stream, text, model)
		}
		if hr.Header.Get("X-Detour-Degraded") == "true" && hr.Header.Get("X-Detour-Dropped") != "" {
			t.Errorf("stream %v: a same-dialect answer dropped %s", stream, hr.Header.Get("X-Detour-Dropped"))
		}
		var sent, want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(f.last(t)), &sent); err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(p)
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		want["model"] = json.RawMessage(`"gpt-5-pro"`)
		want["store"] = json.RawMessage(`false`)
		if stream {
			want["stream"] = json.RawMessage(`true`)
		}
		for k, v := range want {
			if sent[k] == nil {
				t.Errorf("stream %v: upstream lacks %s", stream, k)
			} else if diff := jsonEqual(t, sent[k], v); diff != "" {
				t.Errorf("stream %v: upstream %s (-sent +want):\n%s", stream, k, diff)
			}
		}
		if len(sent) != len(want) {
			t.Errorf("stream %v: upstream got %d fields, want %d: %s", stream, len(sent), len(want), f.last(t))
		}
	}
}

// The official openai-go client on the chat completions surface, to a
// Responses target: the request is translated (system prompt as
// instructions, store: false), and the answer reads as a chat completion,
// whole and streamed.
func TestSDKResponsesTarget_ChatSurfaceIsTranslated(t *testing.T) {
	f := newRtFixture(t, rtRoutes, sim.Provider{Answer: echo}, sim.Provider{})
	p := openai.ChatCompletionNewParams{Model: "pro", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("be brief"), openai.UserMessage("hi there")}}
	resp, err := f.client().Chat.Completions.New(ctx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "sys=be brief prompt=hi there" || resp.Model != "gpt-5-pro" ||
		resp.Choices[0].FinishReason != "stop" || resp.Usage.TotalTokens == 0 {
		t.Errorf("completion %s", resp.RawJSON())
	}
	sent := f.last(t)
	if !strings.Contains(sent, `"instructions":"be brief"`) || !strings.Contains(sent, `"store":false`) ||
		!strings.Contains(sent, `"input":[{"role":"user","content":"hi there"}]`) {
		t.Errorf("upstream got %s", sent)
	}
	s := f.client().Chat.Completions.NewStreaming(ctx(t), p)
	var b strings.Builder
	for s.Next() {
		if c := s.Current(); len(c.Choices) > 0 {
			b.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if err := s.Err(); err != nil || b.String() != "sys=be brief prompt=hi there" {
		t.Errorf("stream %q, %v", b.String(), err)
	}
}

// A function tool round trip through a Responses target, on both
// surfaces, whole and streamed: the model's call comes back in the
// client's shape.
func TestSDKResponsesTarget_Tools(t *testing.T) {
	f := newRtFixture(t, rtRoutes, sim.Provider{}, sim.Provider{})
	rp := responses.ResponseNewParams{Model: "pro", Tools: []responses.ToolUnionParam{rsWeatherTool()},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris?")}}
	resp, err := f.client().Responses.New(ctx(t), rp)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 1 || resp.Output[0].Type != "function_call" || resp.Output[0].Name != "get_weather" ||
		resp.Output[0].Arguments.OfString != `{"city":"simulated"}` || resp.Output[0].CallID == "" {
		t.Errorf("output %s", resp.RawJSON())
	}
	events, _, err := rsEvents(t, f, rp)
	if err != nil {
		t.Fatal(err)
	}
	if final := events[len(events)-1].AsResponseCompleted().Response; len(final.Output) != 1 || final.Output[0].Name != "get_weather" {
		t.Errorf("streamed output %s", final.RawJSON())
	}

	cp := openai.ChatCompletionNewParams{Model: "pro", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}})}}
	cr, err := f.client().Chat.Completions.New(ctx(t), cp)
	if err != nil {
		t.Fatal(err)
	}
	if tc := cr.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "get_weather" || tc[0].Function.Arguments != `{"city":"simulated"}` ||
		cr.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("completion %s", cr.RawJSON())
	}
	if sent := f.last(t); !strings.Contains(sent, `"tools":[{"type":"function","name":"get_weather"`) || !strings.Contains(sent, `"strict":false`) {
		t.Errorf("upstream got %s", sent)
	}
	s := f.client().Chat.Completions.NewStreaming(ctx(t), cp)
	acc := openai.ChatCompletionAccumulator{}
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil || len(acc.Choices) != 1 || len(acc.Choices[0].Message.ToolCalls) != 1 ||
		acc.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"city":"simulated"}` {
		t.Errorf("streamed tool call %+v, %v", acc.Choices, err)
	}
}

// Structured output through a Responses target: text.format passes raw
// from the Responses surface, response_format becomes text.format from
// the chat surface, and the answer parses into the schema either way.
func TestSDKResponsesTarget_StructuredOutput(t *testing.T) {
	f := newRtFixture(t, rtRoutes, sim.Provider{Answer: rtJSON}, sim.Provider{})
	schema := map[string]any{"type": "object", "required": []string{"city", "temp_c"}, "additionalProperties": false,
		"properties": map[string]any{"city": map[string]any{"type": "string"}, "temp_c": map[string]any{"type": "number"}}}
	resp, err := f.client().Responses.New(ctx(t), responses.ResponseNewParams{Model: "pro",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris as JSON")},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "forecast", Schema: schema, Strict: openai.Bool(true)}}}})
	if err != nil {
		t.Fatal(err)
	}
	var got forecast
	if err := jsonUnmarshal(resp.OutputText(), &got); err != nil || got.City == nil || *got.City != "Paris" {
		t.Errorf("answer %q: %v", resp.OutputText(), err)
	}
	if sent := f.last(t); !strings.Contains(sent, `"text":{"format":{`) || !strings.Contains(sent, `"name":"forecast"`) {
		t.Errorf("upstream got %s", sent)
	}
	cr, err := f.client().Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: "pro",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris as JSON")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "forecast", Schema: schema, Strict: openai.Bool(true)}}}})
	if err != nil {
		t.Fatal(err)
	}
	got = forecast{}
	if err := jsonUnmarshal(cr.Choices[0].Message.Content, &got); err != nil || got.TempC == nil {
		t.Errorf("answer %q: %v", cr.Choices[0].Message.Content, err)
	}
	if sent := f.last(t); !strings.Contains(sent, `"text":{"format":{"type":"json_schema","name":"forecast","schema":{`) ||
		!strings.Contains(sent, `"strict":true`) || strings.Contains(sent, "response_format") {
		t.Errorf("upstream got %s", sent)
	}
}

// A refusal by a Responses target fails closed on both surfaces, whole
// and streamed: a response incomplete by the content filter, or a
// response.failed of a policy code inside a 200 stream, is a policy
// failure the client gets as an error, and the chat target after it is
// never tried.
func TestSDKResponsesTarget_RefusalFailsClosed(t *testing.T) {
	bio := `{"type":"response.failed","sequence_number":2,"response":{"id":"resp_1","object":"response","status":"failed","model":"gpt-5-pro","output":[],"error":{"code":"bio_policy","message":"This request was blocked by our biological safety policy."}}}`
	for _, tc := range []struct {
		name   string
		fault  sim.Fault
		stream bool
	}{
		{"content filter", sim.Fault{Kind: sim.ContentFilter}, false},
		{"content filter streamed", sim.Fault{Kind: sim.ContentFilter}, true},
		{"bio_policy in the stream", sim.Fault{Kind: sim.StreamError, Chunks: 1, Body: bio}, true},
	} {
		for _, surface := range []string{"responses", "chat"} {
			t.Run(tc.name+"/"+surface, func(t *testing.T) {
				f := newRtFixture(t, rtRoutes, sim.Provider{Script: []sim.Fault{tc.fault}}, sim.Provider{})
				var err error
				switch {
				case surface == "responses" && tc.stream:
					_, _, err = rsEvents(t, f, responses.ResponseNewParams{Model: "pro-then-chat",
						Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
				case surface == "responses":
					_, err = f.client().Responses.New(ctx(t), responses.ResponseNewParams{Model: "pro-then-chat",
						Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
				case tc.stream:
					s := f.client().Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{Model: "pro-then-chat",
						Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
					for s.Next() {
						if c := s.Current(); len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
							t.Errorf("text reached the client: %q", c.Choices[0].Delta.Content)
						}
					}
					err = s.Err()
				default:
					_, err = f.client().Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: "pro-then-chat",
						Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
				}
				if err == nil {
					t.Fatal("the refusal reached the client as an answer")
				}
				var apiErr *openai.Error
				if errors.As(err, &apiErr) && apiErr.StatusCode >= 500 {
					t.Errorf("a refusal answered %d: %v", apiErr.StatusCode, err)
				}
				if n := f.sends(); n != 1 {
					t.Errorf("%d upstream sends, want 1: the refusal was routed around", n)
				}
				recs := f.ledger.Records()
				if len(recs) != 1 || recs[0].Kind != "policy" || recs[0].Provider != "rs" {
					t.Errorf("ledger %s", ledgerText(recs))
				}
			})
		}
	}
}
