package gateway_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"

	sim "github.com/detourhq/detour/simulate"
)

func messageHi() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "default",
		MaxTokens: 64,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}
}

func weatherToolParam() []anthropic.ToolUnionParam {
	return []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}},
		Required:   []string{"city"},
	}, "get_weather")}
}

func TestAnthropic_MessageSaysWhoAnswered(t *testing.T) {
	f := newFixture(t, setup{p1: sim.Faults(sim.NoCredits, sim.NoCredits)})
	client := f.anthropic()
	var resp *http.Response
	msg, err := client.Messages.New(ctx(t), messageHi(), anthropicopt.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello from p2/m." || msg.Model != "m" ||
		msg.StopReason != anthropic.StopReasonEndTurn || msg.Usage.OutputTokens == 0 {
		t.Errorf("message %s", msg.RawJSON())
	}
	if resp.Header.Get("X-Detour-Provider") != "p2" || resp.Header.Get("Request-Id") == "" || resp.Header.Get("X-Detour-Attempts") != "2" {
		t.Errorf("headers %v", resp.Header)
	}
	// The Anthropic SDK reads request-id, the OpenAI SDKs x-request-id: the
	// same id, the one the ledger's lines of the request carry.
	recs := f.ledger.Records()
	if id := resp.Header.Get("Request-Id"); id != resp.Header.Get("X-Request-Id") || len(recs) == 0 || recs[len(recs)-1].RequestID != id {
		t.Errorf("request-id %q, x-request-id %q, ledger %+v", id, resp.Header.Get("X-Request-Id"), recs)
	}
	// Older clients send x-api-key.
	old := f.anthropic(anthropicopt.WithHeaderDel("authorization"), anthropicopt.WithHeader("x-api-key", clientKey))
	if _, err := old.Messages.New(ctx(t), messageHi()); err != nil {
		t.Errorf("x-api-key: %v", err)
	}
}

func TestAnthropic_StreamAccumulates(t *testing.T) {
	f := newFixture(t, setup{})
	client := f.anthropic()
	stream := client.Messages.NewStreaming(ctx(t), messageHi())
	var msg anthropic.Message
	events := 0
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
		events++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello from p1/m." || msg.StopReason != anthropic.StopReasonEndTurn ||
		msg.Usage.OutputTokens == 0 || msg.Model != "m" {
		t.Errorf("accumulated %s", msg.RawJSON())
	}
	if events < 6 {
		t.Errorf("%d events: want message_start, block start, deltas, block stop, message_delta, message_stop", events)
	}
}

func TestAnthropic_RawStreamShape(t *testing.T) {
	f := newFixture(t, setup{})
	resp, body := f.post("/v1/messages", `{"model":"default","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		"Authorization", "", "X-Api-Key", clientKey, "Anthropic-Version", "2099-01-01")
	if resp.StatusCode != 200 || !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	var types []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(ev, "\ndata: ")
		name = strings.TrimPrefix(name, "event: ")
		var d struct {
			Type string `json:"type"`
		}
		if !ok || json.Unmarshal([]byte(data), &d) != nil || d.Type != name {
			t.Fatalf("event %q: want event: TYPE then data with the same type", ev)
		}
		types = append(types, name)
	}
	got := strings.Join(types, ",")
	want := "message_start,content_block_start,content_block_delta"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "content_block_stop,message_delta,message_stop") {
		t.Errorf("events %s", got)
	}
}

func TestAnthropic_ToolUse(t *testing.T) {
	f := newFixture(t, setup{})
	client := f.anthropic()
	params := messageHi()
	params.Tools = weatherToolParam()
	msg, err := client.Messages.New(ctx(t), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != "get_weather" ||
		msg.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("message %s", msg.RawJSON())
	}
	var args map[string]any
	if err := json.Unmarshal(msg.Content[0].Input, &args); err != nil || args["city"] == nil {
		t.Errorf("input %s: %v", msg.Content[0].Input, err)
	}

	stream := client.Messages.NewStreaming(ctx(t), params)
	acc := accumulate(t, stream)
	if len(acc.Content) != 1 || acc.Content[0].Name != "get_weather" || string(acc.Content[0].Input) != string(msg.Content[0].Input) ||
		acc.StopReason != anthropic.StopReasonToolUse {
		t.Errorf("streamed %s", acc.RawJSON())
	}

	// The tool's result goes back as a tool message.
	params.Messages = append(params.Messages,
		anthropic.NewAssistantMessage(anthropic.NewToolUseBlock(msg.Content[0].ID, args, "get_weather")),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(msg.Content[0].ID, "sunny", false)))
	params.Tools = nil
	if _, err := client.Messages.New(ctx(t), params); err != nil {
		t.Errorf("tool result turn: %v", err)
	}
}

func TestAnthropic_ErrorTypesSurface(t *testing.T) {
	f := newFixture(t, setup{p1: []sim.Fault{{Kind: sim.BadRequest, Param: "stop"}}})
	client := f.anthropic()
	_, err := client.Messages.New(ctx(t), messageHi())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *anthropic.Error", err)
	}
	if apiErr.StatusCode != 400 || apiErr.Type() != "invalid_request_error" || !strings.Contains(apiErr.Message, "stop") {
		t.Errorf("status %d, type %q, message %q", apiErr.StatusCode, apiErr.Type(), apiErr.Message)
	}
	if n := f.chats.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}

	// A request the gateway refuses itself: Anthropic's shape too.
	bad := messageHi()
	bad.MaxTokens = 0
	_, err = client.Messages.New(ctx(t), bad)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type() != "invalid_request_error" ||
		!strings.Contains(apiErr.Message, "max_tokens") {
		t.Errorf("max_tokens 0: %v", err)
	}
}

func TestAnthropic_AllFailedIsOne503TheSDKDoesNotRetry(t *testing.T) {
	f := newFixture(t, setup{tweak: func(p *sim.Provider) { p.Profile = sim.Always(sim.Fault{Kind: sim.Unavailable}) }})
	client := f.anthropic()
	_, err := client.Messages.New(ctx(t), messageHi())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Type() != "overloaded_error" {
		t.Fatalf("err = %v, want a 503 overloaded_error", err)
	}
	if n := f.chats.Load(); n != 1 {
		t.Errorf("the SDK sent %d requests, want exactly 1", n)
	}
	if !strings.Contains(apiErr.Message, "p3/other") {
		t.Errorf("message %q", apiErr.Message)
	}
}
