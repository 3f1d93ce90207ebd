package openai

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

// Bodies in the shape OpenAI returns them (field order and null fields as
// OpenAI sends them).
const (
	completionJSON = `{
  "id": "chatcmpl-BcO1gPfCFAf86O5CyQ9CTeEyoc8KG",
  "object": "chat.completion",
  "created": 1748488520,
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "Hello! How can I help?",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 19,
    "completion_tokens": 6,
    "total_tokens": 25,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_a288987b44"
}
`
	toolCallJSON = `{
  "id": "chatcmpl-BcQ8ko2nz9B7CRvV0uVbcowidHpQU",
  "object": "chat.completion",
  "created": 1748496646,
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {
            "id": "call_qOfTGgDrItLORNfC6VwUbyLL",
            "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"location\":\"Shanghai\"}"}
          }
        ],
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {"prompt_tokens": 91, "completion_tokens": 14, "total_tokens": 105},
  "service_tier": "default",
  "system_fingerprint": "fp_76544d79cb"
}
`
	contentFilterJSON = `{"id":"chatcmpl-9x","object":"chat.completion","created":1748496646,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null},"logprobs":null,"finish_reason":"content_filter"}],"usage":{"prompt_tokens":12,"completion_tokens":0,"total_tokens":12}}`
)

func jsonResponse(status int, body string) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body))}
}

func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *llm.Response
	}{
		{
			name: "plain",
			body: completionJSON,
			want: &llm.Response{ID: "chatcmpl-BcO1gPfCFAf86O5CyQ9CTeEyoc8KG", Model: "gpt-4o-2024-08-06",
				Message:      llm.Message{Role: llm.RoleAssistant, Content: "Hello! How can I help?"},
				FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 19, OutputTokens: 6}},
		},
		{
			name: "tool calls",
			body: toolCallJSON,
			want: &llm.Response{ID: "chatcmpl-BcQ8ko2nz9B7CRvV0uVbcowidHpQU", Model: "gpt-4o-2024-08-06",
				Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
					{ID: "call_qOfTGgDrItLORNfC6VwUbyLL", Name: "get_weather", Arguments: `{"location":"Shanghai"}`}}},
				FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 91, OutputTokens: 14}},
		},
		{
			name: "legacy function_call",
			body: `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{\"a\":1}"}},"finish_reason":"function_call"}]}`,
			want: &llm.Response{ID: "c", Model: "m", Message: llm.Message{Role: llm.RoleAssistant,
				ToolCalls: []llm.ToolCall{{Name: "f", Arguments: `{"a":1}`}}}, FinishReason: llm.FinishToolCalls},
		},
		{
			name: "refusal becomes content",
			body: `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I'm sorry, I can't help with that."},"finish_reason":"stop"}]}`,
			want: &llm.Response{ID: "c", Model: "m", Message: llm.Message{Role: llm.RoleAssistant,
				Content: "I'm sorry, I can't help with that."}, FinishReason: llm.FinishStop},
		},
		{
			name: "length, content parts, object arguments",
			body: `{"id":"c","model":"mistral-medium","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"cut "},{"type":"text","text":"off"}],"tool_calls":[{"id":"t","function":{"name":"f","arguments":{"x":[1,2]}}}]},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
			want: &llm.Response{ID: "c", Model: "mistral-medium", Message: llm.Message{Role: llm.RoleAssistant,
				Content: "cut off", ToolCalls: []llm.ToolCall{{ID: "t", Name: "f", Arguments: `{"x":[1,2]}`}}},
				FinishReason: llm.FinishLength, Usage: llm.Usage{InputTokens: 3, OutputTokens: 4}},
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

func TestDecodeResponse_ErrorsIn200(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantCode string
	}{
		{"content filter", contentFilterJSON, "content_filter"},
		{"top-level error object", `{"error":{"message":"Provider returned error","code":502}}`, ""},
		{"choice error (OpenRouter)", `{"id":"gen-1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"error","error":{"code":502,"message":"Upstream error"}}]}`, ""},
		{"no choices", `{"id":"gen-1","model":"m","choices":[]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeResponse(jsonResponse(200, tt.body))
			var pe *llm.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *llm.ProviderError", err)
			}
			if pe.Status != 200 || pe.Phase != llm.PhaseResponse || pe.Dialect != "openai" || len(pe.Body) == 0 {
				t.Errorf("ProviderError = %+v", pe)
			}
			if tt.wantCode != "" && pe.Code != tt.wantCode {
				t.Errorf("Code = %q, want %q", pe.Code, tt.wantCode)
			}
		})
	}
}

func TestDecodeResponse_ContentFilterExact(t *testing.T) {
	resp := jsonResponse(200, contentFilterJSON)
	_, err := DecodeResponse(resp)
	want := &llm.ProviderError{Dialect: "openai", Status: 200, Code: "content_filter", Type: "content_filter",
		Message: "response blocked by content filter", Body: []byte(contentFilterJSON), Header: resp.Header, Phase: llm.PhaseResponse}
	if diff := cmp.Diff(error(want), err, cmp.Comparer(func(a, b error) bool {
		pa, pb := a.(*llm.ProviderError), b.(*llm.ProviderError)
		return cmp.Equal(*pa, *pb)
	})); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestDecodeResponse_ErrorStatusKeepsAtMost64KiB(t *testing.T) {
	big := `{"error":{"message":"` + strings.Repeat("x", 100<<10) + `"}}`
	_, err := DecodeResponse(jsonResponse(503, big))
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 503 {
		t.Fatalf("err = %v, want a 503 ProviderError", err)
	}
	if len(pe.Body) > MaxErrorBody {
		t.Errorf("Body is %d bytes, want at most %d", len(pe.Body), MaxErrorBody)
	}
}

func TestDecodeResponse_Malformed(t *testing.T) {
	_, err := DecodeResponse(jsonResponse(200, "<html>bad gateway</html>"))
	var pe *llm.ProviderError
	if !errors.Is(err, ErrMalformed) || !errors.As(err, &pe) || pe.Status != 200 || pe.Phase != llm.PhaseResponse {
		t.Fatalf("err = %v, want ErrMalformed with a 200 ProviderError", err)
	}
}

func TestDecodeResponse_TooLarge(t *testing.T) {
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(io.LimitReader(zeros{}, MaxResponseBody+10))}
	if _, err := DecodeResponse(resp); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("err = %v, want a size error", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestDecodeResponse_EventStreamBody(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		header  http.Header
		want    *llm.Response
		wantErr func(t *testing.T, err error)
	}{
		{
			name: "text with usage", file: "text_usage.sse",
			header: http.Header{"Content-Type": {"text/event-stream"}},
			want: &llm.Response{ID: textID, Model: textGPT, Message: llm.Message{Role: llm.RoleAssistant, Content: "Hello! How can I help?"},
				FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 19, OutputTokens: 6}},
		},
		{
			name: "tool calls, sniffed without content type", file: "tool_calls.sse", header: http.Header{},
			want: &llm.Response{ID: toolID, Model: toolNano, Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "call_PieqNSej6kM9hgYbcQdbZSaC", Name: "get_weather", Arguments: `{"location":"Paris"}`},
				{ID: "call_9xQ2Lm4RtYbWc7ZkHs1NvPqE", Name: "get_time", Arguments: `{"tz":"CET"}`},
			}}, FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 81, OutputTokens: 30}},
		},
		{
			name: "error frame", file: "error_midstream.sse",
			header:  http.Header{"Content-Type": {"text/event-stream"}},
			wantErr: func(t *testing.T, err error) { wiretest.WantStreamError(t, err, dialect) },
		},
		{
			name: "truncated", file: "truncated",
			header: http.Header{"Content-Type": {"text/event-stream"}},
			wantErr: func(t *testing.T, err error) {
				if !errors.Is(err, llm.ErrStreamTruncated) {
					t.Fatalf("err = %v, want ErrStreamTruncated", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.file == "truncated" {
				b := wiretest.Fixture(t, "text_usage.sse")
				body = b[:bytes.Index(b, []byte(`"finish_reason":"stop"`))]
			} else {
				body = wiretest.Fixture(t, tt.file)
			}
			got, err := DecodeResponse(&http.Response{StatusCode: 200, Header: tt.header, Body: io.NopCloser(bytes.NewReader(body))})
			if tt.wantErr != nil {
				tt.wantErr(t, err)
				return
			}
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
		"stop": llm.FinishStop, "length": llm.FinishLength, "tool_calls": llm.FinishToolCalls,
		"function_call": llm.FinishToolCalls, "content_filter": llm.FinishContentFilter,
		"eos": llm.FinishStop, "": "", "something_new": "something_new",
	} {
		if got := finishReason(in); got != want {
			t.Errorf("finishReason(%q) = %q, want %q", in, got, want)
		}
	}
}
