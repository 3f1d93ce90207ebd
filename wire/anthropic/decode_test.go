package anthropic

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/wire/internal/wiretest"
)

// Response bodies, byte for byte as the API sent them.
const (
	// maruel/genai recording providers/anthropic/testdata/TestClient/
	// Scoreboard/claude-haiku-4-5-20251001/GenSync-Text.yaml
	// (commit 600fce781688f0c38e58e60ad7968ef8e668886b).
	haikuTextJSON = `{"model":"claude-haiku-4-5-20251001","id":"msg_016bat7yTjWZrtqaMMhR8rtg","type":"message","role":"assistant","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":15,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":5,"service_tier":"standard","inference_geo":"not_available"}}`
	// Same recordings, GenSync-Tools-SquareRoot-1.yaml.
	haikuToolJSON = `{"model":"claude-haiku-4-5-20251001","id":"msg_018dBaa2GQa5C9s1wrstmzMA","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_013rHbV5NvhikKNLZxxcEw8T","name":"square_root","input":{"number":132413}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":712,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":39,"service_tier":"standard","inference_geo":"not_available"}}`
	// Anthropic docs, Messages API reference example response; the
	// thinking and second tool blocks RECONSTRUCTED from the documented
	// block shapes (anthropic-sdk-go message.go), cache tokens added.
	mixedJSON = `{
  "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "thinking", "thinking": "Two lookups.", "signature": "EqQBCgIYAhIM"},
    {"type": "text", "text": "Let me check "},
    {"type": "text", "text": "both."},
    {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": { "location": "San Francisco, CA", "unit": "celsius" }},
    {"type": "tool_use", "id": "toolu_01B", "name": "now"}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 2095, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": 503}
}`
	// anthropic-sdk-go message.go: stop_reason "refusal" with
	// stop_details; RECONSTRUCTED body around it.
	refusalJSON = `{"id":"msg_01Ref","type":"message","role":"assistant","model":"claude-opus-4-7","content":[{"type":"text","text":"I can"}],"stop_reason":"refusal","stop_sequence":null,"stop_details":{"type":"refusal","category":"bio","explanation":"Refused under the usage policy."},"usage":{"input_tokens":20,"output_tokens":3}}`
)

func TestDecodeResponse_Bodies(t *testing.T) {
	tests := []struct {
		name, body string
		want       *llm.Response
	}{
		{
			name: "text", body: haikuTextJSON,
			want: &llm.Response{ID: "msg_016bat7yTjWZrtqaMMhR8rtg", Model: "claude-haiku-4-5-20251001",
				Message:      llm.Message{Role: llm.RoleAssistant, Content: "Hello."},
				FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 15, OutputTokens: 5}},
		},
		{
			name: "tool_use", body: haikuToolJSON,
			want: &llm.Response{ID: "msg_018dBaa2GQa5C9s1wrstmzMA", Model: "claude-haiku-4-5-20251001",
				Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
					{ID: "toolu_013rHbV5NvhikKNLZxxcEw8T", Name: "square_root", Arguments: `{"number":132413}`}}},
				FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 712, OutputTokens: 39}},
		},
		{
			name: "thinking, split text, two tools, cache tokens", body: mixedJSON,
			want: &llm.Response{ID: "msg_013Zva2CMHLNnXjNJJKqJ2EF", Model: "claude-sonnet-4-5-20250929",
				Message: llm.Message{Role: llm.RoleAssistant, Content: "Let me check both.", ToolCalls: []llm.ToolCall{
					{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: `{"location":"San Francisco, CA","unit":"celsius"}`},
					{ID: "toolu_01B", Name: "now", Arguments: "{}"}}},
				FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 2095 + 100 + 1000, OutputTokens: 503, CacheReadTokens: 1000, CacheWriteTokens: 100}},
		},
		{
			name: "empty content", body: `{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":"end_turn"}`,
			want: &llm.Response{ID: "m", Model: "c", Message: llm.Message{Role: llm.RoleAssistant}, FinishReason: llm.FinishStop},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeResponse(jsonResponse(200, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFinishReason(t *testing.T) {
	for in, want := range map[string]llm.FinishReason{
		"end_turn": llm.FinishStop, "stop_sequence": llm.FinishStop, "pause_turn": llm.FinishStop,
		"max_tokens": llm.FinishLength, "model_context_window_exceeded": llm.FinishLength,
		"tool_use": llm.FinishToolCalls, "refusal": llm.FinishContentFilter,
		"compaction": "compaction", "": "",
	} {
		if got := finishReason(in); got != want {
			t.Errorf("finishReason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeResponse_RefusalIsAPolicyError(t *testing.T) {
	_, err := DecodeResponse(jsonResponse(200, refusalJSON))
	var pe *llm.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a ProviderError", err)
	}
	want := &llm.ProviderError{Dialect: "anthropic", Status: 200, Code: "refusal", Type: "refusal",
		Message: "the model refused to answer (bio): Refused under the usage policy.",
		Header:  http.Header{"Content-Type": {"application/json"}}, Body: []byte(refusalJSON), Phase: llm.PhaseResponse}
	if diff := cmp.Diff(want, pe); diff != "" {
		t.Errorf("ProviderError (-want +got):\n%s", diff)
	}
}

func TestDecodeResponse_CapturedStream(t *testing.T) {
	t.Run("tool_use assembled", func(t *testing.T) {
		got, err := DecodeResponse(sseResponse(bytes.NewReader(wiretest.Fixture(t, "tool_use.sse"))))
		if err != nil {
			t.Fatal(err)
		}
		want := &llm.Response{ID: "msg_019Q1hrJbZG26Fb9BQhrkHEr", Model: "claude-sonnet-4-20250514",
			Message: llm.Message{Role: llm.RoleAssistant, Content: "I'll check the current weather in Paris for you.",
				ToolCalls: []llm.ToolCall{{ID: "toolu_01NRLabsLyVHZPKxbKvkfSMn", Name: "get_weather", Arguments: `{"location":"Paris"}`}}},
			FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 377, OutputTokens: 65}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("response (-want +got):\n%s", diff)
		}
	})
	t.Run("no-args tool", func(t *testing.T) {
		got, err := DecodeResponse(sseResponse(bytes.NewReader(wiretest.Fixture(t, "haiku_tool_noargs.sse"))))
		if err != nil {
			t.Fatal(err)
		}
		if want := []llm.ToolCall{{ID: "toolu_01ALU5YJANnVeTwt8XSWz4kE", Name: "get_hostname", Arguments: "{}"}}; !cmp.Equal(want, got.Message.ToolCalls) {
			t.Errorf("tool calls = %+v, want %+v", got.Message.ToolCalls, want)
		}
	})
	t.Run("sniffed without content type", func(t *testing.T) {
		resp := sseResponse(bytes.NewReader(wiretest.Fixture(t, "text.sse")))
		resp.Header = http.Header{}
		got, err := DecodeResponse(resp)
		if err != nil || got.Message.Content != "Hello there!" {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("refusal", func(t *testing.T) {
		_, err := DecodeResponse(sseResponse(bytes.NewReader(wiretest.Fixture(t, "refusal.sse"))))
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.Code != "refusal" || pe.Status != 200 || pe.Phase != llm.PhaseResponse ||
			pe.Message != "the model refused to answer (cyber): This request was refused due to policy." {
			t.Fatalf("err = %#v, want the refusal", err)
		}
	})
	t.Run("error event", func(t *testing.T) {
		_, err := DecodeResponse(sseResponse(bytes.NewReader(wiretest.Fixture(t, "error_midstream.sse"))))
		if pe := wiretest.WantStreamError(t, err, dialect); pe.Type != "overloaded_error" {
			t.Errorf("Type = %q", pe.Type)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		b := wiretest.Fixture(t, "text.sse")
		_, err := DecodeResponse(sseResponse(bytes.NewReader(b[:len(b)/2])))
		if !errors.Is(err, llm.ErrStreamTruncated) {
			t.Fatalf("err = %v, want ErrStreamTruncated", err)
		}
	})
}

func TestDecodeResponse_Failures(t *testing.T) {
	tests := []struct {
		name   string
		resp   *http.Response
		status int
		typ    string
		isMal  bool
	}{
		{name: "error status", resp: jsonResponse(500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_1"}`), status: 500, typ: "api_error"},
		{name: "error body under 200", resp: jsonResponse(200, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), status: 200, typ: "overloaded_error"},
		{name: "not JSON", resp: jsonResponse(200, `<html>oops</html>`), status: 200, isMal: true},
		{name: "content not an array", resp: jsonResponse(200, `{"type":"message","content":"hi"}`), status: 200, isMal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeResponse(tt.resp)
			var pe *llm.ProviderError
			if r != nil || !errors.As(err, &pe) {
				t.Fatalf("DecodeResponse = %v, %v; want a ProviderError", r, err)
			}
			if pe.Status != tt.status || pe.Type != tt.typ || errors.Is(err, ErrMalformed) != tt.isMal || pe.Dialect != "anthropic" {
				t.Errorf("err = %v (%+v)", err, pe)
			}
		})
	}
}

func TestDecodeResponse_BodyTooLargeAndReadErrors(t *testing.T) {
	resp := jsonResponse(200, "")
	resp.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"content":[{"type":"text","text":"`), strings.NewReader(strings.Repeat("a", MaxResponseBody))))
	if _, err := DecodeResponse(resp); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("err = %v, want a size error", err)
	}
	resp = jsonResponse(200, "")
	boom := errors.New("boom")
	resp.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"con`), errReader{boom}))
	if _, err := DecodeResponse(resp); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the read error", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
