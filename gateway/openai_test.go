package gateway_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	sim "github.com/detourhq/detour/simulate"
)

func userHi() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "default",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
}

func weatherTool() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "get_weather",
		Parameters: openai.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required":   []string{"city"},
		},
	})}
}

func TestOpenAI_CompletionSaysWhoAnswered(t *testing.T) {
	f := newFixture(t, setup{p1: sim.Faults(sim.NoCredits)})
	client := f.openai()
	var resp *http.Response
	got, err := client.Chat.Completions.New(ctx(t), userHi(), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Choices[0].Message.Content; c != "Hello from p2/m." {
		t.Errorf("content = %q, want the answer of p2", c)
	}
	if got.Model != "m" || got.Choices[0].FinishReason != "stop" || got.Usage.TotalTokens == 0 {
		t.Errorf("model %q, finish %q, usage %+v", got.Model, got.Choices[0].FinishReason, got.Usage)
	}
	want := map[string]string{"X-Detour-Route": "default", "X-Detour-Provider": "p2", "X-Detour-Model": "m",
		"X-Detour-Attempts": "2", "X-Detour-Degraded": "false", "Content-Type": "application/json"}
	for k, v := range want {
		if g := resp.Header.Get(k); g != v {
			t.Errorf("%s = %q, want %q", k, g, v)
		}
	}
	// The answer passes through as p2 wrote it (same dialect): its id is
	// the provider's; detour's own is in x-request-id.
	if id := resp.Header.Get("X-Request-Id"); id == "" || !strings.HasPrefix(got.ID, "chatcmpl-") || strings.Contains(got.ID, id) {
		t.Errorf("x-request-id %q, completion id %q: want the provider's id in the body, detour's in the header", id, got.ID)
	}
}

func TestOpenAI_StreamAccumulates(t *testing.T) {
	f := newFixture(t, setup{})
	client := f.openai()
	params := userHi()
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx(t), params)
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("the accumulator refused chunk %d: %s", chunks, stream.Current().RawJSON())
		}
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if c := acc.Choices[0].Message.Content; c != "Hello from p1/m." {
		t.Errorf("content = %q", c)
	}
	if acc.Choices[0].FinishReason != "stop" || acc.Usage.TotalTokens == 0 || acc.Model != "m" {
		t.Errorf("finish %q, usage %+v, model %q", acc.Choices[0].FinishReason, acc.Usage, acc.Model)
	}
	if chunks < 3 {
		t.Errorf("%d chunks: the answer was not streamed", chunks)
	}
}

func TestOpenAI_StreamWithoutUsageSendsNoUsageChunk(t *testing.T) {
	f := newFixture(t, setup{})
	resp, body := f.post("/v1/chat/completions", `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	if events[len(events)-1] != "data: [DONE]" {
		t.Errorf("last event %q, want [DONE]", events[len(events)-1])
	}
	for i, ev := range events[:len(events)-1] {
		var c struct {
			Choices []struct {
				Index        *int            `json:"index"`
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
		}
		data := strings.TrimPrefix(ev, "data: ")
		if err := json.Unmarshal([]byte(data), &c); err != nil || len(c.Choices) != 1 || c.Choices[0].Index == nil {
			t.Errorf("event %d %q: want one choice with an index (%v)", i, ev, err)
		}
		// "usage": null is what OpenAI writes in every chunk once usage
		// is asked for (detour asks in the client's name); a count is not.
		if strings.Contains(data, `"usage":{`) || strings.Contains(data, `"error"`) {
			t.Errorf("event %d %q carries usage or error", i, ev)
		}
		if i == 0 && !strings.Contains(data, `"role":"assistant"`) {
			t.Errorf("first delta %q has no role", data)
		}
	}
}

func TestOpenAI_ToolCalls(t *testing.T) {
	f := newFixture(t, setup{})
	client := f.openai()
	params := userHi()
	params.Tools = weatherTool()
	got, err := client.Chat.Completions.New(ctx(t), params)
	if err != nil {
		t.Fatal(err)
	}
	calls := got.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "get_weather" || got.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("calls %+v, finish %q", calls, got.Choices[0].FinishReason)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(calls[0].Function.Arguments), &args); err != nil || args["city"] == nil {
		t.Errorf("arguments %q: %v", calls[0].Function.Arguments, err)
	}

	stream := client.Chat.Completions.NewStreaming(ctx(t), params)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	sc := acc.Choices[0].Message.ToolCalls
	if len(sc) != 1 || sc[0].Function.Name != "get_weather" || sc[0].ID != calls[0].ID && sc[0].ID == "" ||
		sc[0].Function.Arguments != calls[0].Function.Arguments || acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("streamed calls %+v, finish %q; want %+v", sc, acc.Choices[0].FinishReason, calls)
	}
}

func TestOpenAI_400PassesThroughAsSDKError(t *testing.T) {
	f := newFixture(t, setup{p1: []sim.Fault{{Kind: sim.BadRequest, Param: "stop"}}})
	client := f.openai()
	_, err := client.Chat.Completions.New(ctx(t), userHi())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *openai.Error", err)
	}
	if apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "stop") || apiErr.Type != "invalid_request_error" ||
		apiErr.Param != "stop" {
		t.Errorf("status %d, type %q, param %q, message %q", apiErr.StatusCode, apiErr.Type, apiErr.Param, apiErr.Message)
	}
	if n := f.chats.Load(); n != 1 {
		t.Errorf("the SDK sent %d requests, want 1", n)
	}
	if n := f.sim.Stats().Total(); n != 1 {
		t.Errorf("%d upstream sends: an invalid request must fail closed at the first", n)
	}
}

func TestOpenAI_AllFailedIsOne503TheSDKDoesNotRetry(t *testing.T) {
	f := newFixture(t, setup{tweak: func(p *sim.Provider) { p.Profile = sim.Always(sim.Fault{Kind: sim.Unavailable}) }})
	client := f.openai() // default: 2 retries
	var resp *http.Response
	_, err := client.Chat.Completions.New(ctx(t), userHi(), option.WithResponseInto(&resp))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Fatalf("err = %v, want a 503 *openai.Error", err)
	}
	if n := f.chats.Load(); n != 1 {
		t.Errorf("the SDK sent %d requests, want exactly 1", n)
	}
	if g := apiErr.Response.Header.Get("X-Should-Retry"); g != "false" {
		t.Errorf("x-should-retry = %q", g)
	}
	for _, target := range []string{"p1/m", "p2/m", "p3/other"} {
		if !strings.Contains(apiErr.Message, target) {
			t.Errorf("message %q does not name %s", apiErr.Message, target)
		}
	}
	if ra := apiErr.Response.Header.Get("Retry-After"); ra != "" && (len(ra) > 2 || ra == "0") {
		t.Errorf("Retry-After %q: want whole seconds, 1 to 60", ra)
	}
}

func TestOpenAI_ModelsCandidateList(t *testing.T) {
	// p1 is out of credit: the request's own list tries solo (p1), then p3.
	f := newFixture(t, setup{p1: sim.Faults(sim.NoCredits)})
	resp, body := f.post("/v1/chat/completions", `{"model":"solo","models":["p3/other"],"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "Hello from p3/other.") || resp.Header.Get("X-Detour-Provider") != "p3" {
		t.Fatalf("%d %s %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = f.post("/v1/chat/completions", `{"models":["solo","nope/x"],"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 404 || !strings.Contains(body, `"code":"model_not_found"`) {
		t.Errorf("unknown provider in models: %d %s", resp.StatusCode, body)
	}
}

func TestOpenAI_RequestHeaders(t *testing.T) {
	f := newFixture(t, setup{tweak: func(p *sim.Provider) {
		if p.Name == "p1" {
			p.Profile = sim.Always(sim.Fault{Kind: sim.Unavailable})
		}
	}})
	// No fallback: p1 alone, never p2.
	resp, body := f.post("/v1/chat/completions", chatBody, "X-Detour-No-Fallback", "true")
	if resp.StatusCode != 503 || f.sim.Stats().Requests("p2", "") != 0 {
		t.Errorf("no-fallback: %d %s; p2 got %d", resp.StatusCode, body, f.sim.Stats().Requests("p2", ""))
	}
	// Start at p3.
	resp, body = f.post("/v1/chat/completions", chatBody, "X-Detour-Start", "p3", "Idempotency-Key", "idem-123")
	if resp.StatusCode != 200 || resp.Header.Get("X-Detour-Provider") != "p3" || resp.Header.Get("X-Detour-Degraded") != "true" {
		t.Errorf("start p3: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	// The same, streamed: who answered and that it was degraded, in the
	// stream's own headers (rule 11).
	resp, body = f.post("/v1/chat/completions", `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		"X-Detour-Start", "p3")
	if resp.StatusCode != 200 || resp.Header.Get("X-Detour-Provider") != "p3" || resp.Header.Get("X-Detour-Degraded") != "true" ||
		!strings.Contains(body, "data: [DONE]") {
		t.Errorf("start p3, streamed: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if !strings.Contains(f.logs.String(), "idempotency_key=idem-123") {
		t.Errorf("the idempotency key is not in the log:\n%s", f.logs)
	}
	resp, body = f.post("/v1/chat/completions", chatBody, "X-Detour-Start", "p9")
	if resp.StatusCode != 400 || !strings.Contains(body, `"param":"x-detour-start"`) {
		t.Errorf("bad start: %d %s", resp.StatusCode, body)
	}
	// The client's request id is kept.
	resp, _ = f.post("/v1/chat/completions", chatBody, "X-Request-Id", "my-req-1", "X-Detour-Start", "p2")
	if resp.Header.Get("X-Request-Id") != "my-req-1" || f.ledger.Records()[len(f.ledger.Records())-1].RequestID != "my-req-1" {
		t.Errorf("request id %q", resp.Header.Get("X-Request-Id"))
	}
}
